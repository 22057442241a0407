"""ASR feedback: faster-whisper listens to each spoken phrase, beside the audio path.

It compares the words heard with the phrase text (word error rate) and the heard word start
times with the planned ones from Piper's phoneme alignments (timing drift). It never delays
audio: phrases wait in a small bounded queue and are skipped (counted) when the checker is busy,
and the model runs on its own low-priority thread.
"""

from __future__ import annotations

import asyncio
import logging
import re
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from .inference import ModelThread
from .metrics import Metrics
from .tasks import cancel_and_wait

log = logging.getLogger(__name__)

WORD_BREAKS = {" ", ".", ",", "!", "?", ";", ":", "$", "^", "_"}


@dataclass(frozen=True)
class PhraseCheck:
    utterance_id: str
    text: str
    wer: float
    timing_offset_s: float | None  # median heard − planned word start
    heard: str


def normalize_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower().replace("’", "'"))


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word-level Levenshtein distance divided by the reference length."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i]
        for j, h in enumerate(hyp, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h)))
        prev = cur
    return prev[-1] / len(ref)


def planned_word_starts(phonemes: Any, sample_rate: int) -> list[float]:
    """Start time (s) of each word in a Piper chunk: the first phoneme after a word break."""
    starts: list[float] = []
    pos = 0
    in_word = False
    for symbol, samples in phonemes:
        if symbol in WORD_BREAKS:
            in_word = False
        elif not in_word:
            starts.append(pos / sample_rate)
            in_word = True
        pos += int(samples)
    return starts


def checker_thread() -> ModelThread:
    """The ASR's own thread, at the lowest priority: checking speech must never delay it."""
    return ModelThread("asr", nice=19)


class SpeechFeedback:
    """Checks spoken phrases with ASR off the critical path and exports the results."""

    def __init__(
        self,
        transcriber: Any,
        metrics: Metrics,
        queue_size: int = 4,
        thread: ModelThread | None = None,
    ) -> None:
        self._asr = transcriber
        self._metrics = metrics
        self._queue: asyncio.Queue[tuple] = asyncio.Queue(queue_size)
        self._thread = thread or checker_thread()
        self._busy = False
        self._task: asyncio.Task | None = None
        self.results: list[PhraseCheck] = []

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="asr-feedback")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._thread.shutdown()

    @property
    def idle(self) -> bool:
        """Nothing waiting and nothing being transcribed."""
        return self._queue.empty() and not self._busy

    def check(self, utterance_id: str, text: str, pcm: np.ndarray, start: int, chunk: Any) -> None:
        """Offer a phrase for checking; never waits."""
        try:
            self._queue.put_nowait((utterance_id, text, pcm, chunk))
        except asyncio.QueueFull:
            self._metrics.asr_skipped.inc()

    async def _run(self) -> None:
        while True:
            utterance_id, text, pcm, chunk = await self._queue.get()
            self._busy = True
            try:
                words = await self._thread.call(self._asr.transcribe, pcm, 48_000)
            except Exception:
                log.exception("ASR feedback failed for %s", utterance_id)
                continue
            finally:
                self._busy = False
            result = self._compare(utterance_id, text, words, chunk)
            self.results.append(result)
            del self.results[:-100]
            self._metrics.asr_wer.observe(result.wer)
            if result.timing_offset_s is not None:
                self._metrics.asr_timing.observe(result.timing_offset_s)

    @staticmethod
    def _compare(utterance_id: str, text: str, words: list, chunk: Any) -> PhraseCheck:
        heard = " ".join(w.word.strip() for w in words)
        planned = planned_word_starts(chunk.phonemes, chunk.sample_rate)
        offset = None
        # pair heard and planned words by position when the counts agree (the usual case for
        # clean TTS); a mismatch leaves the timing out rather than guessing a pairing
        if words and len(planned) == len(words):
            diffs = [w.start - p for w, p in zip(words, planned, strict=True)]
            offset = statistics.median(diffs)
        return PhraseCheck(utterance_id, text, word_error_rate(text, heard), offset, heard)
