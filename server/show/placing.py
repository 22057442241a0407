"""Placing: a chunk of speech becomes sound at a place on the broadcast clock, with its mouth.

The chunk is resampled to the broadcast's rate and laid on the timeline at the write head (or
after the role's speech still to play; an utterance's first chunk after all speech still to
play, less the overlap a scene asks for), never further ahead of the broadcast than
`stage.max_ahead_s`. Its visemes come from Piper's alignments, shifted by the ASR's correction
(an input: where the sound was last heard against the alignments), and open on the sound's own
onsets. The ASR's check of it is expected before it is placed: the broadcast may send its first
frame at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from models.protocols import SpeechChunk

from ..config import StageConfig
from ..media.broadcast import Broadcast
from ..media.mediaclock import MediaClock
from ..media.timeline import Segment, SpeechTimeline
from ..metrics import Metrics
from . import opening
from .onsets import QUIET_MS, open_on_sound, sound_onsets
from .phrasetap import ExpectedPhrase, PhraseTap
from .resample import resample_int16
from .speaking import Spoken
from .speech import trim_lead_in
from .visemes import VisemeFrame, visemes_from_alignment

# the ASR's viseme correction, in samples at the given rate (0 without an ASR)
Correction = Callable[[int], int]


@dataclass(frozen=True)
class PlacedSpeech:
    """A chunk on the broadcast clock: its first sample and length, what it voices, the chunk
    itself (its lead-in trimmed where it opens the utterance), its viseme frames and sound
    onsets (broadcast samples), and the ASR's check of it, where there is one."""

    utterance_id: str
    role: str
    text: str
    start: int
    samples: int
    chunk: SpeechChunk
    frames: list[VisemeFrame]
    onsets: list[int]
    check: ExpectedPhrase | None

    @property
    def end(self) -> int:
        return self.start + self.samples

    @property
    def first_voiced(self) -> int | None:
        """The sample of its first voiced viseme, if it has one."""
        return next((f.sample for f in self.frames if f.viseme != "sil"), None)


def lips(
    chunk: SpeechChunk,
    pcm: np.ndarray,
    start: int,
    rate: int,
    shift: int = 0,
    before: np.ndarray | None = None,
) -> tuple[list[VisemeFrame], list[int], int]:
    """The mouth of `chunk`, whose sound `pcm` (at `rate`) starts at sample `start`: its
    viseme frames from the alignments, moved by `shift` and opened on the sound's own onsets,
    the onsets (after `before`, the sound just before it, if any), and how many phonemes
    the viseme table lacked."""
    track = visemes_from_alignment(chunk.phonemes, start + shift, chunk.sample_rate, rate)
    onsets = [start + o for o in sound_onsets(pcm, rate, before=before)]
    frames = open_on_sound(track.frames, [o + shift for o in onsets], rate)
    return frames, onsets, sum(track.unknown.values())


def no_correction(rate: int) -> int:
    return 0


class Placing:
    def __init__(
        self,
        clock: MediaClock,
        timeline: SpeechTimeline,
        broadcast: Broadcast,
        stage: StageConfig,
        metrics: Metrics,
        tap: PhraseTap | None = None,
        correction: Correction = no_correction,
    ) -> None:
        self.clock, self.timeline, self.broadcast = clock, timeline, broadcast
        self.stage, self.metrics = stage, metrics
        self.tap, self.correction = tap, correction

    async def place(
        self,
        utterance_id: str,
        role: str,
        spoken: Spoken,
        opens: bool,
        after: PlacedSpeech | None,
        overlap_s: float = 0.0,
    ) -> PlacedSpeech:
        """Place `spoken` (the utterance's first audio where `opens`, reaching back over the
        speech before it by at most `overlap_s`); the ASR checks it with the opening it goes
        on from (`after`), if any."""
        chunk = trim_lead_in(spoken.chunk) if opens else spoken.chunk  # start at the voice
        rate = self.clock.sample_rate
        pcm = resample_int16(chunk.audio, chunk.sample_rate, rate)
        max_ahead = self.clock.samples(self.stage.max_ahead_s)
        reach_back = self.clock.samples(overlap_s)
        # bounded look-ahead: do not run further ahead of the broadcast than max_ahead
        while self._after(role, opens, reach_back) - self.broadcast.write_head > max_ahead:
            await asyncio.sleep(0.05)
        start = max(self.broadcast.write_head, self._after(role, opens, reach_back))
        # the speech it goes on from, when it follows some directly (an opening's rest)
        quiet = self.clock.samples(QUIET_MS / 1000)
        before = self.timeline.read(start - quiet, quiet, role)[0] if start >= quiet else None
        frames, onsets, unknown = lips(chunk, pcm, start, rate, self.correction(rate), before)
        if unknown:
            self.metrics.unknown_phonemes.inc(unknown)
        check = self._expect_check(utterance_id, spoken.text, start, len(pcm), chunk, after)
        self.timeline.schedule(Segment(start, pcm, role, utterance_id))
        if start == self.broadcast.write_head:
            self.broadcast.kick()
        return PlacedSpeech(
            utterance_id, role, spoken.text, start, len(pcm), chunk, frames, onsets, check
        )

    def _after(self, role: str, opens: bool, reach_back: int) -> int:
        """The earliest sample a chunk may start at: after its role's speech, and an
        utterance's first after everyone's (roles take turns), less the overlap it asks for."""
        own = self.timeline.end_of(role)
        return max(own, self.timeline.end_of() - reach_back) if opens else own

    def _expect_check(
        self,
        utterance_id: str,
        text: str,
        start: int,
        samples: int,
        chunk: SpeechChunk,
        after: PlacedSpeech | None,
    ) -> ExpectedPhrase | None:
        """Have the ASR check a chunk as the broadcast sends it; the rest of an opening's
        sentence with its opening (`after`), as one phrase where they meet: alone, a clip of
        two or three words, or one starting mid-word, was misheard more often."""
        if self.tap is None:
            return None
        if after is not None and after.check is not None:
            both = opening.joined(after.chunk, chunk)
            if self.tap.extend(after.check, start, samples, both.text, both):
                return after.check
        return self.tap.expect(utterance_id, text, start, samples, chunk)

    def forget(self, utterance_ids: Iterable[str]) -> None:
        """Interrupted: their phrases are not checked (their sound was cut)."""
        if self.tap is not None:
            self.tap.forget(utterance_ids)
