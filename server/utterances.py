"""Utterances and the bounded queue they wait in."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum


class UtteranceState(StrEnum):
    QUEUED = "queued"
    SPEAKING = "speaking"
    DONE = "done"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


FINAL_STATES = {UtteranceState.DONE, UtteranceState.INTERRUPTED, UtteranceState.FAILED}


@dataclass
class Utterance:
    """One accepted line or prompt: it is spoken, interrupted, or reported failed."""

    text: str
    role: str
    mode: str  # "verbatim" | "chat"
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    accepted_at: float = field(default_factory=time.monotonic)
    state: UtteranceState = UtteranceState.QUEUED
    phrases: list[str] = field(default_factory=list)
    tokens: int = 0  # LLM tokens decoded so far (chat mode)
    first_phrase_tokens: int | None = None  # tokens it took to cut the first phrase
    first_token_ms: float | None = None  # fused time (ms) the first LLM token was decoded
    last_token_ms: float | None = None  # fused time (ms) the latest LLM token was decoded
    first_audio_at: float | None = None
    first_audio_sample: int | None = None
    end_sample: int | None = None
    error: str | None = None

    @property
    def spoken_text(self) -> str:
        return " ".join(self.phrases)

    @property
    def text_to_first_audio(self) -> float | None:
        if self.first_audio_at is None:
            return None
        return self.first_audio_at - self.accepted_at

    def to_json(self) -> dict:
        ttfa = self.text_to_first_audio
        return {
            "id": self.id,
            "role": self.role,
            "mode": self.mode,
            "text": self.text,
            "spoken_text": self.spoken_text,
            "phrases": list(self.phrases),
            "tokens": self.tokens,
            "first_phrase_tokens": self.first_phrase_tokens,
            "first_token_ms": self.first_token_ms,
            "last_token_ms": self.last_token_ms,
            "state": str(self.state),
            "text_to_first_audio_ms": None if ttfa is None else round(ttfa * 1000, 1),
            "start_sample": self.first_audio_sample,
            "end_sample": self.end_sample,
            "error": self.error,
        }


class QueueFull(Exception):
    pass


class UtteranceQueue:
    """FIFO of waiting utterances with a hard bound (the caller gets 429 when it is full)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: deque[Utterance] = deque()
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._items)

    def put(self, utterance: Utterance) -> None:
        if len(self._items) >= self.maxsize:
            raise QueueFull(f"utterance queue is full ({self.maxsize})")
        self._items.append(utterance)
        self._ready.set()

    async def get(self) -> Utterance:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()

    def waiting(self) -> list[Utterance]:
        return list(self._items)

    def remove_role(self, role: str | None) -> list[Utterance]:
        """Take out every waiting utterance of `role` (all when None)."""
        gone = [u for u in self._items if role is None or u.role == role]
        self._items = deque(u for u in self._items if not (role is None or u.role == role))
        return gone
