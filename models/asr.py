"""Speech recognition with faster-whisper (Whisper base, CTranslate2), with word timings.

Blocking API, meant to be driven from an executor thread; no asyncio here.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # faster-whisper can fetch from the hub; never let it

from pathlib import Path

import numpy as np
import soxr
from faster_whisper import WhisperModel

from models.catalogue import ModelNotFound, default_cache_dir, prepare_whisper_base
from models.device import ct2_device, resolve
from models.protocols import ASR, HeardWord

WHISPER_RATE = 16_000


def _as_float_mono(audio: np.ndarray) -> np.ndarray:
    """int16 or float PCM, mono, as float32 in [-1, 1]."""
    samples = np.asarray(audio)
    if samples.ndim != 1:
        raise ValueError(f"expected mono audio (1-D), got shape {samples.shape}")
    if samples.dtype == np.int16:
        return samples.astype(np.float32) / 32768.0
    if np.issubdtype(samples.dtype, np.floating):
        return samples.astype(np.float32, copy=False)
    raise ValueError(f"expected int16 or float audio, got {samples.dtype}")


class Transcriber(ASR):
    """faster-whisper with settings for short live clips: English, greedy, word timings."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        cache_dir: Path | None = None,
        device: str = "auto",
        threads: int = 2,
    ) -> None:
        """Load a CTranslate2 Whisper folder (~1 s); by default the packaged base model,
        joined from its two pip halves into `cache_dir` on first use."""
        if model_dir is None:
            folder = prepare_whisper_base(cache_dir or default_cache_dir())
        else:
            folder = Path(model_dir).expanduser()
            if not (folder / "model.bin").is_file():
                raise ModelNotFound(f"no CTranslate2 Whisper model (model.bin) in {folder}")
        self.model_dir = folder
        self.device = resolve(device, ct2_device)
        # int8 is the fastest on CPU at no audible cost for base; GPUs prefer float16.
        compute_type = "float16" if self.device == "cuda" else "int8"
        self.model = WhisperModel(
            str(folder),
            device=self.device,
            compute_type=compute_type,
            cpu_threads=threads,
            local_files_only=True,
        )

    def transcribe(self, audio: np.ndarray, sample_rate: int) -> list[HeardWord]:
        """Words heard in a mono clip (int16 or float, any sample rate)."""
        samples = _as_float_mono(audio)
        if sample_rate != WHISPER_RATE:
            samples = soxr.resample(samples, sample_rate, WHISPER_RATE).astype(np.float32)
        if samples.size == 0:
            return []
        segments, _info = self.model.transcribe(
            samples,
            language="en",
            beam_size=1,
            # One greedy pass: temperature fallback re-decodes a clip up to 5 more times,
            # which costs seconds on a live show for little gain on short clips.
            temperature=0.0,
            word_timestamps=True,
            vad_filter=False,
            # Clips are independent utterances; carrying text over invites repetition.
            condition_on_previous_text=False,
        )
        return [
            HeardWord(w.word.strip(), float(w.start), float(w.end), float(w.probability))
            for segment in segments  # a lazy generator: decoding happens here
            for w in segment.words or ()
            if w.word.strip()
        ]

    def warm_up(self) -> None:
        """Transcribe half a second of quiet so the first real clip does not pay setup."""
        self.transcribe(np.zeros(WHISPER_RATE // 2, dtype=np.float32), WHISPER_RATE)
