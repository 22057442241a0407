"""One utterance through the steps: phrasing → speaking → placing → announcing.

Phrasing runs as its own task, filling a bounded buffer of phrases whose level steers its
window; the rest runs phrase by phrase, chunk by chunk, as speech comes from the TTS.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from . import opening
from .announcing import Announcer
from .crossmodal import CrossModalFigures
from .phrasing import Phrasing
from .placing import PlacedSpeech, Placing
from .speaking import Speaking
from .speech import SpeechFirst
from .utterances import Utterance


class Pipeline:
    def __init__(
        self,
        phrasing: Phrasing,
        speaking: Speaking,
        placing: Placing,
        announcer: Announcer,
        figures: CrossModalFigures,
        gate: SpeechFirst,
        buffer_phrases: int,
    ) -> None:
        self.phrasing, self.speaking, self.placing = phrasing, speaking, placing
        self.announcer, self.figures, self.gate = announcer, figures, gate
        self.buffer_phrases = buffer_phrases

    async def perform(self, utt: Utterance, beside: Sequence[Utterance] = ()) -> None:
        """Place all of `utt`'s speech on the broadcast clock (cancelled: what is placed stays
        placed; the stage cuts it); `beside`: waiting prompts whose replies may be written
        with its own."""
        buffer: asyncio.Queue[str | None] = asyncio.Queue(self.buffer_phrases)
        writing = self.phrasing.write(utt, buffer, beside)
        writer = asyncio.get_running_loop().create_task(writing)
        try:
            while (phrase := await _next(buffer, writer)) is not None:
                await self._speak(utt, phrase)
                utt.phrases.append(phrase)
                if buffer.empty():
                    self.gate.speech_idle()
            await writer
        finally:
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            self.gate.speech_idle()

    async def _speak(self, utt: Utterance, phrase: str) -> None:
        held: PlacedSpeech | None = None  # an opening: the ASR checks it with its rest
        async with contextlib.aclosing(self.speaking.speak(utt, phrase)) as chunks:
            async for spoken in chunks:
                after = held if spoken.part == opening.REST else None
                opens = utt.end_sample is None
                placed = await self.placing.place(
                    utt.id, utt.role, spoken, opens, after, utt.overlap_s
                )
                utt.end_sample = placed.end
                if utt.cross_modal.audio_ms is None and placed.first_voiced is not None:
                    self.figures.audio_placed(utt, placed.first_voiced)
                await self.announcer.announce(placed)
                held = placed if spoken.part == opening.OPENING else None

    def interrupted(self, at: int, role: str | None, utterance_ids: list[str]) -> None:
        """Speech of `role` (all when None) is cut at `at`: what was announced of it is trimmed,
        and its phrases are not checked."""
        self.announcer.forget_after(at, role)
        self.placing.forget(utterance_ids)

    def shutdown(self) -> None:
        self.speaking.shutdown()


async def _next(buffer: asyncio.Queue[str | None], writer: asyncio.Task) -> str | None:
    """The next phrase, or None after the last; the writer's error where it failed before
    putting its last (an LLM that raised, or stopped within its deadline, puts no None: a
    wait on the buffer alone would hold the stage for good)."""
    get = asyncio.ensure_future(buffer.get())
    try:
        await asyncio.wait({get, writer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not get.done():
            get.cancel()  # a phrase it was woken for but had not taken stays in the buffer
    if get.done() and not get.cancelled():
        return get.result()
    writer.result()  # done before its last phrase: its error
    return buffer.get_nowait()  # done with its last: what the cancelled get left
