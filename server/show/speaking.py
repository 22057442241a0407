"""Speaking: a phrase becomes speech chunks, synthesized on the TTS's own thread.

An utterance's first phrase opens with its first words on their own (opening.py), so first
audio waits for three words, not a sentence. The TTS thread runs 10 nice values below the
loop that paces audio out: synthesis runs seconds ahead of the broadcast, the loop does not.
From the night's fallback level 2 an utterance is spoken in the light voice (espeak-ng), where
one is loaded: an utterance takes its level when it is taken up, so the voice changes only
between utterances.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass

from models.protocols import TTS, SpeechChunk, VoiceStyle

from ..config import RoleConfig, StageConfig
from ..metrics import Metrics
from . import opening
from .inference import BACKGROUND, ModelThread
from .speech import SpeechFirst
from .speechcache import SpeechCache
from .utterances import Utterance


@dataclass(frozen=True)
class Spoken:
    """One chunk of a phrase's speech: the text it voices, the chunk, and which part of the
    phrase it is (opening.WHOLE, OPENING or REST)."""

    text: str
    chunk: SpeechChunk
    part: str


def voice_of(character: RoleConfig) -> VoiceStyle:
    return VoiceStyle(
        length_scale=character.length_scale,
        noise_scale=character.noise_scale,
        noise_w_scale=character.noise_w_scale,
        volume=character.volume,
        pitch=character.pitch,
    )


LIGHT_VOICE = 2  # the fallback level from which the light voice speaks
LIGHT = "espeak-ng"  # its name in the speech cache's keys


class Speaking:
    def __init__(
        self,
        tts: TTS,
        stage: StageConfig,
        deadline_s: float,
        metrics: Metrics,
        gate: SpeechFirst,
        cache: SpeechCache | None = None,
        light: TTS | None = None,
    ) -> None:
        self.tts, self.stage, self.metrics, self.gate = tts, stage, metrics, gate
        self.cache, self.light = cache, light
        # On a busy machine the loop that paces audio out waited 20-120 ms for a core behind
        # Piper, and an interrupt reached the viewers that late: the TTS thread yields to it.
        self._thread = ModelThread("tts", nice=10, deadline_s=deadline_s)

    async def speak(self, utt: Utterance, phrase: str) -> AsyncGenerator[Spoken, None]:
        """`phrase` of `utt` as speech chunks, as soon as each is synthesized."""
        style = voice_of(utt.character)
        light = self.light if utt.level >= LIGHT_VOICE else None
        tts = light or self.tts

        def synthesize(text: str, urgent: bool) -> AsyncGenerator[SpeechChunk, None]:
            return self._thread.iterate(self._speak_alone, tts, text, style, urgent)

        started = time.perf_counter()
        first = True
        opens = self.stage.opening and utt.end_sample is None  # the utterance's first phrase
        if utt.synthesis_at is None:
            utt.synthesis_at = time.monotonic()
        if utt.cache and self.cache is not None:  # a stock line: kept, whole
            stream = self._kept(phrase, style, synthesize, LIGHT if light else None)
        else:
            stream = opening.spoken(phrase, synthesize, opens)
        async with contextlib.aclosing(stream) as chunks:
            async for text, chunk, part in chunks:
                if first:
                    ttfa = time.perf_counter() - started
                    self.metrics.tts_ttfa.observe(ttfa)
                    self.metrics.anomalies.observe("tts_first_audio", ttfa)
                    first = False
                if utt.first_chunk_at is None:
                    utt.first_chunk_at = time.monotonic()
                yield Spoken(text, chunk, part)

    async def _kept(
        self,
        phrase: str,
        style: VoiceStyle,
        synthesize: Callable[[str, bool], AsyncGenerator[SpeechChunk, None]],
        voice: str | None,
    ) -> AsyncGenerator[tuple[str, SpeechChunk, str], None]:
        assert self.cache is not None
        made = lambda: synthesize(phrase, True)  # noqa: E731
        async for chunk in self.cache.speak(phrase, style, made, voice):
            yield phrase, chunk, opening.WHOLE

    def _speak_alone(
        self, tts: TTS, text: str, style: VoiceStyle | None, urgent: bool = False
    ) -> Iterator[SpeechChunk]:
        """On the TTS thread: start the voice once the LLM has stepped aside."""
        self.gate.before_synthesis()
        return tts.speak(text, style, urgent=urgent)

    def beside(self, text: str, style: VoiceStyle) -> AsyncGenerator[SpeechChunk, None]:
        """`text` spoken on the show's TTS thread for work beside the show (dubbing): each of
        its calls waits behind the show's own, which never wait behind more than one of them."""
        return self._thread.iterate(self.tts.speak, text, style, rank=BACKGROUND)

    def shutdown(self) -> None:
        self._thread.shutdown()
