"""How high a voice is: the median fundamental frequency of its voiced frames, by YIN (de
Cheveigné and Kawahara, 2002). Enough to tell two characters apart by measurement (a
difference of 15 % is about two and a half semitones: plainly two voices to a listener).

Plain autocorrelation, tried first, jumped an octave up on low voices: over a frame of a few
periods it favours the shorter lag, and read Orion (about 78 Hz) as 150 Hz now and then. YIN's
cumulative-mean-normalised difference takes the first lag that repeats the wave well."""

from __future__ import annotations

import numpy as np

FRAME_S = 0.05  # three periods of the lowest voice
LOWEST_HZ, HIGHEST_HZ = 60.0, 400.0  # speech: a deep voice to a child's
THRESHOLD = 0.15  # YIN's: the first dip below it is the period
VOICED = 0.35  # a frame whose best dip is above this is not voiced


def frame_f0(frame: np.ndarray, rate: int) -> float | None:
    """The frame's F0 (Hz), or None where it is not voiced."""
    x = frame.astype(np.float64) - frame.mean()
    n = len(x) // 2  # the window compared with itself shifted by up to n samples
    lo, hi = int(rate / HIGHEST_HZ), min(n, int(rate / LOWEST_HZ))
    if hi <= lo + 1:
        return None
    head = x[:n]
    diff = np.array([np.sum((head - x[lag : lag + n]) ** 2) for lag in range(hi + 1)])
    running = np.cumsum(diff[1:]) / np.arange(1, hi + 1)
    if running[-1] <= 0:
        return None
    normed = np.ones(hi + 1)
    normed[1:] = diff[1:] / np.where(running > 0, running, np.inf)
    below = np.nonzero(normed[lo:hi] < THRESHOLD)[0]
    if below.size:  # the first dip: walk down to its bottom
        lag = lo + int(below[0])
        while lag + 1 < hi and normed[lag + 1] < normed[lag]:
            lag += 1
    else:
        lag = lo + int(np.argmin(normed[lo:hi]))
    if normed[lag] > VOICED:
        return None
    return rate / lag


def median_f0(audio: np.ndarray, rate: int) -> float:
    """The median F0 (Hz) over the loud, voiced frames of `audio` (int16 or float)."""
    x = audio.astype(np.float64)
    n = int(FRAME_S * rate)
    frames = [x[k : k + n] for k in range(0, len(x) - n, n // 2)]
    loud = max((float(np.sqrt(np.mean(f**2))) for f in frames), default=0.0) / 10
    found = [frame_f0(f, rate) for f in frames if np.sqrt(np.mean(f**2)) > loud]
    voiced = [f for f in found if f is not None]
    return float(np.median(voiced)) if voiced else float("nan")
