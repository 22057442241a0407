"""ASR feedback: faster-whisper listens to each spoken phrase, beside the audio path.

It compares the words heard with the phrase text (word error rate; a phrase above the flag
threshold is flagged for the host and counted) and the heard word start times with the planned
ones from Piper's phoneme alignments (timing drift). A systematic drift moves the visemes: the
stage plans them `correction` later (or earlier) than the alignments say.

Whisper's word times are not the truth either: they come ~90 ms early on Piper's speech, and by
how much depends on the words — one phrase's median sits 60 ms, another's 130 ms early, the
same each time the phrase is spoken. A bias learned once on other sentences leaves ±20 ms of
that in every phrase, enough to pass for drift. So each phrase is paired with its own reference:
the ASR also hears Piper's sound of that phrase exactly as the model produced it (where plan and
sound agree by construction), and only the difference counts as drift — what the show's path
did to the sound after Piper. The sound checked is the one the broadcast sent
(`PhraseTap`); where it is Piper's sample for sample, one transcription serves both.

It never delays audio: phrases wait in a small bounded queue and are skipped (counted) when the
checker is busy, and the model runs on its own low-priority thread.
"""

from __future__ import annotations

import asyncio
import logging
import re
import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import jiwer
import numpy as np

from models.protocols import ASR, HeardWord, SpeechChunk

from ..media.mediaclock import SAMPLE_RATE
from ..metrics import Metrics
from ..tasks import cancel_and_wait
from .inference import ModelThread
from .resample import resample_int16

log = logging.getLogger(__name__)

WORD_BREAKS = {" ", ".", ",", "!", "?", ";", ":", "$", "^", "_"}
FLAGGED_KEPT = 20  # flagged phrases the host panel lists


@dataclass(frozen=True)
class PhraseCheck:
    utterance_id: str
    text: str
    wer: float
    timing_offset_s: float | None  # median heard − planned word start
    heard: str
    flagged: bool = False


def normalize_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower().replace("’", "'"))


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word-level edit distance over the reference's length (jiwer), on words lower-cased
    without punctuation; 1.0 for words heard where none were said."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return float(jiwer.wer(" ".join(ref), " ".join(hyp)))


def planned_word_starts(phonemes: Sequence[tuple[str, int]], sample_rate: int) -> list[float]:
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


def compare(
    utterance_id: str, text: str, words: list[HeardWord], chunk: SpeechChunk, flag_wer: float
) -> PhraseCheck:
    """What the ASR heard of one chunk against its text and its planned word starts."""
    heard = " ".join(w.word.strip() for w in words)
    planned = planned_word_starts(chunk.phonemes, chunk.sample_rate)
    offset = None
    # pair heard and planned words by position when the counts agree (the usual case for
    # clean TTS); a mismatch leaves the timing out rather than guessing a pairing. The first
    # word does not count: Whisper pins it near the start of the clip, wherever it sounds.
    if len(words) >= 3 and len(planned) == len(words):
        pairs = list(zip(words, planned, strict=True))[1:]
        offset = statistics.median(w.start - p for w, p in pairs)
    wer = word_error_rate(text, heard)
    return PhraseCheck(utterance_id, text, wer, offset, heard, wer > flag_wer)


class DriftCorrection:
    """How far the visemes should move against Piper's alignments, from what the ASR heard.

    Each checked phrase gives a drift: its heard − planned word start, less the same on
    Piper's own sound of it. When the median of the last few phrases sits beyond a dead band
    from the correction in force, a systematic bias has appeared and the correction moves
    toward it by clamp(0.3·(drift − correction), ±50 ms) each phrase until it is within a
    narrower release band: a few phrases close most of a shift, one odd phrase cannot move the
    mouth far, and it never swings past the drift it measured.
    """

    def __init__(
        self,
        window: int = 7,
        # a pair's difference still carries Whisper's 20 ms steps and word edges it judges
        # differently on a changed sound: a few ms, at most ~10 in a phrase's median
        dead_band_s: float = 0.030,
        gain: float = 0.3,
        release_band_s: float = 0.010,
        step_limit_s: float = 0.050,
        max_correction_s: float = 0.250,
    ) -> None:
        self.recent: deque[float] = deque(maxlen=window)
        self._biases: deque[float] = deque(maxlen=window)
        self.dead_band_s, self.release_band_s, self.gain = dead_band_s, release_band_s, gain
        self.engaged = False  # a systematic drift is being closed
        self.step_limit_s, self.max_correction_s = step_limit_s, max_correction_s
        self.correction_s = 0.0

    @property
    def drift_s(self) -> float | None:
        return statistics.median(self.recent) if self.recent else None

    @property
    def bias_s(self) -> float | None:
        """The ASR's own heard − planned on Piper's sound, lately (shown, never corrected)."""
        return statistics.median(self._biases) if self._biases else None

    def observe(self, heard_s: float, reference_s: float = 0.0) -> bool:
        """Fold in one phrase's heard − planned median and its reference's (Piper's own
        sound, heard by the same ASR); whether the correction moved."""
        self._biases.append(reference_s)
        self.recent.append(heard_s - reference_s)
        if len(self.recent) < 3:
            return False
        residual = statistics.median(self.recent) - self.correction_s
        # hysteresis: a drift must leave the dead band to be acted on, and once it has, it is
        # followed until it is closed to within the release band, not just back to the edge
        band = self.release_band_s if self.engaged else self.dead_band_s
        self.engaged = abs(residual) > band
        if not self.engaged:
            return False
        step = max(-self.step_limit_s, min(self.step_limit_s, self.gain * residual))
        limit = self.max_correction_s
        self.correction_s = max(-limit, min(limit, self.correction_s + step))
        return True


def checker_thread() -> ModelThread:
    """The ASR's own thread, at the lowest priority: checking speech must never delay it."""
    return ModelThread("asr", nice=19)


class SpeechFeedback:
    """Checks spoken phrases with ASR off the critical path and exports the results."""

    def __init__(
        self,
        transcriber: ASR,
        metrics: Metrics,
        queue_size: int = 4,
        thread: ModelThread | None = None,
        flag_wer: float = 0.5,
        correct_visemes: bool = True,
    ) -> None:
        self._asr = transcriber
        self._metrics = metrics
        self._queue: asyncio.Queue[tuple] = asyncio.Queue(queue_size)
        self._thread = thread or checker_thread()
        self._busy = False
        self._task: asyncio.Task | None = None
        self.flag_wer = flag_wer
        self.correct_visemes = correct_visemes
        self.drift = DriftCorrection()
        self.results: deque[PhraseCheck] = deque(maxlen=100)
        self.flagged: deque[tuple[int, PhraseCheck]] = deque(maxlen=FLAGGED_KEPT)  # (n, check)
        self.counts = {"checked": 0, "flagged": 0, "skipped": 0}

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="asr-feedback")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._thread.shutdown()

    @property
    def idle(self) -> bool:
        """Nothing waiting and nothing being transcribed."""
        return self._queue.empty() and not self._busy

    @property
    def applied_correction_s(self) -> float:
        """How much later than Piper's alignments the stage plans visemes (0 when off)."""
        return self.drift.correction_s if self.correct_visemes else 0.0

    def correction_samples(self, sample_rate: int = SAMPLE_RATE) -> int:
        """The applied correction in samples, for the stage's planner."""
        return round(self.applied_correction_s * sample_rate)

    def check(
        self, utterance_id: str, text: str, pcm: np.ndarray, start: int, chunk: SpeechChunk
    ) -> None:
        """Offer a phrase for checking; never waits."""
        try:
            self._queue.put_nowait((utterance_id, text, pcm, chunk))
        except asyncio.QueueFull:
            self.counts["skipped"] += 1
            self._metrics.asr_skipped.inc()

    def summary(self) -> dict:
        """The host panel's view: counts, drift, correction, and the phrases flagged lately."""

        def ms(seconds: float | None) -> float | None:
            return None if seconds is None else round(seconds * 1000, 1)

        return {
            **self.counts,
            "flag_wer": self.flag_wer,
            "asr_bias_ms": ms(self.drift.bias_s),
            "drift_ms": ms(self.drift.drift_s),
            "correction_ms": ms(self.applied_correction_s),
            "flagged_recent": [
                {
                    "id": f"check-{n}",  # phrases of one utterance may each be flagged
                    "utterance_id": c.utterance_id,
                    "text": c.text,
                    "heard": c.heard,
                    "wer": round(c.wer, 3),
                }
                for n, c in reversed(self.flagged)
            ],
        }

    async def _run(self) -> None:
        """Check phrases as they come, one at a time, each against Piper's own sound of it."""
        while True:
            utterance_id, text, pcm, chunk = await self._queue.get()
            self._busy = True
            try:
                heard, reference = await self._thread.call(self._hear, pcm, chunk)
            except Exception:
                log.exception("ASR feedback failed for %s", utterance_id)
                continue
            finally:
                self._busy = False
            self.fold(compare(utterance_id, text, heard, chunk, self.flag_wer), reference)

    def _hear(self, pcm: np.ndarray, chunk: SpeechChunk) -> tuple[list[HeardWord], float | None]:
        """On the ASR thread: the words heard in `pcm`, and the heard − planned word start of
        Piper's own sound of the phrase (None where it cannot be paired)."""
        piper = resample_int16(chunk.audio, chunk.sample_rate, SAMPLE_RATE)
        heard = self._asr.transcribe(pcm, SAMPLE_RATE)
        # the broadcast sent Piper's sound sample for sample: the same words, the same times
        same = len(pcm) == len(piper) and np.array_equal(pcm, piper)
        words = heard if same else self._asr.transcribe(piper, SAMPLE_RATE)
        return heard, compare("reference", chunk.text, words, chunk, self.flag_wer).timing_offset_s

    def fold(self, result: PhraseCheck, reference_s: float | None) -> None:
        """Count one checked phrase, flag it, and let its timing against its reference's
        (`reference_s`, Piper's own sound heard by the same ASR) steer the correction."""
        self.results.append(result)
        self.counts["checked"] += 1
        self._metrics.asr_wer.observe(result.wer)
        if result.flagged:
            self.counts["flagged"] += 1
            self.flagged.append((self.counts["checked"], result))
            self._metrics.asr_flagged.inc()
            log.warning("ASR heard %r for %r (WER %.2f)", result.heard, result.text, result.wer)
            return  # a garbled phrase's word times say nothing about timing
        if result.timing_offset_s is None or reference_s is None:
            return
        self._metrics.asr_timing.observe(result.timing_offset_s)
        if self.drift.observe(result.timing_offset_s, reference_s):
            log.info("viseme timing corrected to %+.0f ms", self.drift.correction_s * 1e3)
        if self.drift.drift_s is not None:
            self._metrics.asr_drift.set(self.drift.drift_s)
        self._metrics.viseme_correction.set(self.applied_correction_s)
