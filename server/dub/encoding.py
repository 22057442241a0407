"""A dubbed line's audio as a client takes it: WAV (PCM) or Ogg Opus, mono, 48 kHz."""

from __future__ import annotations

import io
import struct

import av
import numpy as np


def wav(pcm: np.ndarray, rate: int) -> bytes:
    """16-bit mono PCM in a RIFF WAVE file."""
    data = pcm.astype("<i2").tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
    return header + fmt + b"data" + struct.pack("<I", len(data)) + data


def opus(pcm: np.ndarray, rate: int) -> bytes:
    """Opus in an Ogg file (RFC 7845): its pre-skip tells a decoder where sample 0 is, so the
    visemes' samples hold for the decoded audio too."""
    out = io.BytesIO()
    with av.open(out, "w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=rate)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(
            pcm.astype(np.int16).reshape(1, -1), format="s16", layout="mono"
        )
        frame.sample_rate = rate
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


ENCODERS = {"wav": wav, "opus": opus}
