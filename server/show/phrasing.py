"""Phrasing: an utterance becomes tokens, and tokens become phrases for the TTS.

A verbatim line is its words; a chat prompt is the LLM's reply as it comes, through the
speech-first gate (the LLM pauses while a phrase waits for synthesis) and checked against the
audio it becomes (Δt ≤ N·Δa). The phrase window cuts at sentence and clause ends; it shrinks
when the TTS buffer fills and grows when it empties (phrases.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncGenerator, Callable, Sequence

from models.protocols import LLM, Messages

from ..config import ModelConfig, NightConfig, StageConfig
from ..metrics import Metrics
from . import phrases
from .condensing import condense
from .inference import stream_tokens
from .speech import SpeechFirst
from .stamps import Stamps
from .utterances import Utterance, UtteranceState

# Token/audio alignment: a token may take at most N audio frame steps of 10 ms to decode.
TOKEN_ALIGNMENT_FRAMES = 3
AUDIO_FRAME_STEP_S = 0.010


class Phrasing:
    def __init__(
        self,
        llm: LLM,
        stage: StageConfig,
        models: ModelConfig,
        metrics: Metrics,
        gate: SpeechFirst,
        stamps: Stamps,
        night: NightConfig | None = None,
    ) -> None:
        self.llm, self.stage, self.models = llm, stage, models
        self.night = night or NightConfig()
        self.metrics, self.gate, self.stamps = metrics, gate, stamps

    async def write(
        self,
        utt: Utterance,
        buffer: asyncio.Queue[str | None],
        beside: Sequence[Utterance] = (),
    ) -> None:
        """`utt`'s phrases into `buffer` (None after the last), cut by the window its level
        steers; the replies of `beside` (waiting chat prompts of its persona) are written
        with its own where the LLM can, and kept on them."""
        st = self.stage
        window = phrases.PhraseWindow(st.window_tokens, st.window_min, st.window_max)
        async with contextlib.aclosing(self._tokens(utt, beside)) as tokens:
            async for text in tokens:
                phrase = window.push(text) if text else None
                if phrase:
                    if utt.first_phrase_tokens is None:
                        utt.first_phrase_tokens = utt.tokens
                    self.gate.phrase_pending()
                self.gate.token_seen()
                if phrase:
                    await buffer.put(phrase)
                    window.resize(buffer.qsize() / buffer.maxsize)
        rest = window.flush()
        if rest:
            await buffer.put(rest)
        await buffer.put(None)

    async def _tokens(
        self, utt: Utterance, beside: Sequence[Utterance]
    ) -> AsyncGenerator[str, None]:
        """The utterance's text as tokens: verbatim words, a reply written beside an earlier
        one, or the LLM's reply as it comes."""
        if utt.mode == "verbatim":
            for word in phrases.word_tokens(utt.text):
                yield word
            return
        if utt.written is not None and utt.written[0] == utt.level:
            utt.first_token_ms = utt.last_token_ms = self.stamps.fused_ms(time.monotonic())
            directions = phrases.StageDirections()
            for word in phrases.word_tokens(utt.written[1]):
                yield directions.feed(word)
            return
        budget = self.models.max_new_tokens
        if utt.level >= 1:  # the night's first step: shorter replies
            budget = min(budget, self.night.compressed_tokens)
        messages = self._messages(utt, utt.level, self.metrics.compression.observe)
        also = [self._messages(w, utt.level) for w in beside]
        cancel = threading.Event()
        started = time.perf_counter()
        mc = self.models
        stream = stream_tokens(
            self.llm,
            messages,
            cancel,
            between_tokens=self.gate.between_tokens,
            deadline_s=mc.llm_token_deadline_s,
            max_new_tokens=budget,
            temperature=mc.temperature,
            also=also,
            kept=_keeper(beside, utt.level) if beside else None,
        )
        directions = phrases.StageDirections()
        self.gate.start_generation()
        self.gate.llm_running = True
        try:
            async with contextlib.aclosing(stream) as pieces:
                async for piece in pieces:
                    if piece.index == 0:
                        ttft = piece.decoded_at - started
                        self.metrics.llm_ttft.observe(ttft)
                        self.metrics.anomalies.observe("llm_first_token", ttft)
                    if piece.decode_s is not None:
                        # Δt ≤ N·Δa: text must keep pace with the audio it becomes (pauses
                        # the speech-first gate makes between tokens are not decoding)
                        self.metrics.token_interval.observe(piece.decode_s)
                        utt.token_checks += 1
                        if piece.decode_s > TOKEN_ALIGNMENT_FRAMES * AUDIO_FRAME_STEP_S:
                            self.metrics.token_alignment_violations.inc()
                            utt.token_violations += 1
                    utt.tokens += 1
                    # decoded_at is on perf_counter: carry it over to the monotonic clock
                    mono = time.monotonic() - (time.perf_counter() - piece.decoded_at)
                    utt.last_token_ms = self.stamps.fused_ms(mono)
                    if utt.first_token_ms is None:
                        utt.first_token_ms = utt.last_token_ms
                    yield directions.feed(piece.text)  # "" too: the gate counts every token
        finally:
            self.gate.llm_running = False

    def _messages(
        self, utt: Utterance, level: int, kept: Callable[[float], None] = lambda share: None
    ) -> Messages:
        """What the LLM is asked for `utt`'s reply, at the night's `level` (from 1 condensed:
        `kept` is told the share of words it kept)."""
        prompt = utt.prompt or utt.text
        if level >= 1:
            prompt, share = condense(prompt, self.night.compressed_words)
            kept(share)
        return self.llm.chat_messages(utt.character.persona, prompt)


def _keeper(beside: Sequence[Utterance], level: int) -> Callable[[list[str | None]], None]:
    """Where the replies written beside go, from the LLM's thread: onto those still waiting."""
    loop = asyncio.get_running_loop()

    def keep(replies: list[str | None]) -> None:
        for utt, reply in zip(beside, replies, strict=False):
            if reply and reply.strip() and utt.state == UtteranceState.QUEUED:
                utt.written = (level, reply)

    def handed(replies: list[str | None]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the show has stopped
            loop.call_soon_threadsafe(keep, replies)

    return handed
