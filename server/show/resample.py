"""22,050 Hz Piper audio to the 48 kHz broadcast, with a real (soxr) resampler."""

from __future__ import annotations

import numpy as np
import soxr


def resampled_length(n: int, src_rate: int, dst_rate: int) -> int:
    return round(n * dst_rate / src_rate)


def resample_int16(pcm: np.ndarray, src_rate: int, dst_rate: int) -> np.ndarray:
    """Resample a whole chunk; the output has exactly `resampled_length` samples.

    Whole-chunk resampling has no start-up delay, so a phoneme boundary at input sample i lands
    at output sample i·dst/src; that keeps the visemes on the audio.
    """
    if src_rate == dst_rate:
        return pcm.astype(np.int16, copy=False)
    want = resampled_length(len(pcm), src_rate, dst_rate)
    out = soxr.resample(pcm.astype(np.float32) / 32768.0, src_rate, dst_rate, quality="HQ")
    if len(out) < want:
        out = np.pad(out, (0, want - len(out)))
    out = out[:want]
    return np.clip(np.round(out * 32768.0), -32768, 32767).astype(np.int16)
