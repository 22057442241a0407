"""Test doubles for unit tests of the stage and transport (never used by the real server)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from models.protocols import LLM, TTS, Messages, SpeechChunk, TokenPiece, VoiceStyle


class ToneTTS(TTS):
    """Speaks each word as a 200 ms tone with 100 ms of silence around it (22,050 Hz; both
    lengths settable). While `running` is cleared, synthesis waits: the stage takes no more
    lines off its queue."""

    sample_rate = 22_050

    def __init__(self, word_s: float = 0.2, gap_s: float = 0.1) -> None:
        self.word_s, self.gap_s = word_s, gap_s
        self.running = threading.Event()
        self.running.set()

    def speak(
        self, text: str, style: VoiceStyle | None = None, urgent: bool = False
    ) -> Iterator[SpeechChunk]:
        self.running.wait()
        sr = self.sample_rate
        gap, word = int(self.gap_s * sr), int(self.word_s * sr)
        parts, phonemes = [np.zeros(gap, np.int16)], [("^", gap)]
        t = np.arange(word) / sr
        for _ in text.split():
            parts.append((np.sin(2 * np.pi * 220 * t) * 8000).astype(np.int16))
            phonemes.append(("ɑ", word))
            parts.append(np.zeros(gap, np.int16))
            phonemes.append((",", gap))  # a real pause between the tones
        yield SpeechChunk(np.concatenate(parts), sr, tuple(phonemes), text)

    def warm_up(self) -> None:
        pass


class WordsLLM(LLM):
    """Streams a fixed reply word by word, 10 ms a token. With `batches`, it answers the
    prompts asked beside (`also`) too, each with `answer(prompt)`, once its reply is out."""

    def __init__(
        self, reply: str = "Hello night owls, welcome back to the show.", batches: bool = False
    ) -> None:
        self.reply, self.batches = reply, batches
        self.generations: list[list[str]] = []  # each call's prompts: its own, then those beside

    def answer(self, prompt: str) -> str:
        return self.reply

    def chat_messages(self, persona: str, prompt: str) -> Messages:
        return [{"role": "system", "content": persona}, {"role": "user", "content": prompt}]

    def stream(
        self,
        messages: Messages,
        max_new_tokens: int = 64,
        temperature: float = 0.7,
        cancel: threading.Event | None = None,
        between_tokens: Callable[[], None] | None = None,
        also: Sequence[Messages] = (),
        kept: Callable[[list[str | None]], None] | None = None,
    ) -> Iterator[TokenPiece]:
        self.generations.append([m[-1]["content"] for m in (messages, *also)])
        cut = True
        try:
            for i, w in enumerate(self.answer(messages[-1]["content"]).split(" ")):
                if cancel is not None and cancel.is_set():
                    return
                time.sleep(0.01)
                yield TokenPiece(
                    w if i == 0 else " " + w, i, time.perf_counter(), 0.01 if i else None
                )
            cut = False
        finally:
            if self.batches and also and kept is not None:
                kept([None if cut else self.answer(m[-1]["content"]) for m in also])
