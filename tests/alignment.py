"""What a viewer heard against what was planned: the alignment figures the tests assert."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCK = 480  # 10 ms at 48 kHz
VOICED_RMS = 300.0  # about −40 dBFS


@dataclass
class Alignment:
    voiced_inside: float  # share of voiced 10 ms blocks that lie inside non-sil viseme spans
    silent_outside: float  # share of blocks outside every viseme span that are silent
    lag_ms: float  # heard voicing vs planned voicing, best cross-correlation lag
    voiced_blocks: int


def block_rms(pcm: np.ndarray) -> np.ndarray:
    n = len(pcm) // BLOCK
    blocks = pcm[: n * BLOCK].astype(np.float64).reshape(n, BLOCK)
    return np.sqrt((blocks**2).mean(axis=1))


def measure(heard: np.ndarray, origin: int, frames: list[dict]) -> Alignment:
    """`heard` starts at broadcast sample `origin`; `frames` are the viseme frames sent."""
    n = len(heard) // BLOCK
    voiced = block_rms(heard) > VOICED_RMS
    speaking = np.zeros(n, dtype=bool)  # planned: a non-sil viseme
    covered = np.zeros(n, dtype=bool)  # any viseme frame at all
    for f in frames:
        a = max(0, (f["sample"] - origin) // BLOCK)
        b = min(n, -(-(f["sample"] + f["duration"] - origin) // BLOCK))
        covered[a:b] = True
        if f["viseme"] != "sil":
            speaking[a:b] = True
    inside = float((voiced & speaking).sum() / max(1, voiced.sum()))
    outside = ~covered
    silent = float((~voiced & outside).sum() / max(1, outside.sum()))
    return Alignment(inside, silent, openness_lag_ms(heard, origin, frames), int(voiced.sum()))


# How far each viseme opens the mouth; loud speech comes from an open mouth, a closure
# (PP) or a pause is quiet. Correlating this with the heard loudness finds any time shift.
OPENNESS = {
    "sil": 0.0,
    "PP": 0.0,
    "FF": 0.2,
    "TH": 0.3,
    "DD": 0.35,
    "kk": 0.4,
    "CH": 0.35,
    "SS": 0.25,
    "nn": 0.3,
    "RR": 0.4,
    "aa": 1.0,
    "E": 0.8,
    "I": 0.6,
    "O": 0.8,
    "U": 0.55,
}
STEP = 240  # 5 ms


def openness_lag_ms(heard: np.ndarray, origin: int, frames: list[dict], max_ms: int = 100) -> float:
    """Shift (ms) of the planned mouth opening that best matches the heard loudness.

    Negative: the audio comes earlier than the visemes say.
    """
    n = len(heard) // STEP
    blocks = heard[: n * STEP].astype(np.float64).reshape(n, STEP)
    loud = 20 * np.log10(np.sqrt((blocks**2).mean(axis=1)) + 1.0)
    planned = np.zeros(n)
    for f in frames:
        a, b = (f["sample"] - origin) // STEP, (f["sample"] + f["duration"] - origin) // STEP
        planned[max(0, a) : max(0, min(n, b))] = OPENNESS.get(f["viseme"], 0.5)
    x = (loud - loud.mean()) / (loud.std() + 1e-9)
    y = (planned - planned.mean()) / (planned.std() + 1e-9)
    k_max = max_ms * 48 // STEP
    lags = list(range(-k_max, k_max + 1))
    scores = [float(np.dot(np.roll(y, k), x)) for k in lags]
    return lags[int(np.argmax(scores))] * STEP / 48.0
