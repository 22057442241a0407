"""Drills: faults a host injects into the running show on purpose, to watch it survive them.

A 24/7 show's failure paths run at 2 a.m. or never; a drill runs them on the air, when someone
is watching (the real hour of `bench nights` arms them on a schedule). Each armed fault strikes
the next call of its model once, the way a real failure would:

- `tts_raises`: the next synthesis raises;
- `tts_hangs`: the next synthesis hangs three times the TTS deadline, then raises (the stage
  fails its utterance at the deadline and goes on with a new TTS thread);
- `llm_raises`: the next reply's LLM raises after its first token.

Off unless the `drills` setting is on: a show open to the public lets no one break its models,
host or not. `POST /api/v1/drill {"fault": ...}` (host token) arms one.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from aiohttp import web

from models.protocols import LLM, TTS, Messages, SpeechChunk, TokenPiece, VoiceStyle

from .host.api import ApiError, json_response, read_json, require_host
from .keys import CONFIG

FAULTS = {
    "tts_raises": "the next synthesis raises",
    "tts_hangs": "the next synthesis hangs three times the TTS deadline, then raises",
    "llm_raises": "the next reply's LLM raises after its first token",
}
HANG_DEADLINES = 3  # a hung synthesis outlasts its deadline this many times over


class DrillError(RuntimeError):
    """A fault a drill injected (its message says which)."""


class Drills:
    """The faults armed and not yet struck, and how many of each were armed and struck."""

    def __init__(self, hang_s: float) -> None:
        self.hang_s = hang_s
        self.armed: Counter[str] = Counter()
        self.fired: Counter[str] = Counter()
        self._waiting: set[str] = set()
        self._lock = threading.Lock()  # armed on the loop, struck on model threads

    def arm(self, fault: str) -> None:
        with self._lock:
            self._waiting.add(fault)
            self.armed[fault] += 1

    def strikes(self, fault: str) -> bool:
        """Whether `fault` is armed; if so it strikes now, and is disarmed."""
        with self._lock:
            if fault not in self._waiting:
                return False
            self._waiting.discard(fault)
            self.fired[fault] += 1
            return True


class DrilledTTS:
    """A TTS whose next synthesis fails where a drill says so."""

    def __init__(self, tts: TTS, drills: Drills) -> None:
        self._tts, self._drills = tts, drills
        self.sample_rate = tts.sample_rate

    def speak(
        self, text: str, style: VoiceStyle | None = None, urgent: bool = False
    ) -> Iterator[SpeechChunk]:
        if self._drills.strikes("tts_raises"):
            raise DrillError("drill: the synthesis raised")
        if self._drills.strikes("tts_hangs"):
            time.sleep(self._drills.hang_s)
            raise DrillError("drill: the synthesis hung")
        yield from self._tts.speak(text, style, urgent)

    def warm_up(self) -> None:
        self._tts.warm_up()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tts, name)  # the voice's other figures, as they are


class DrilledLLM:
    """An LLM whose next reply breaks after its first token where a drill says so."""

    def __init__(self, llm: LLM, drills: Drills) -> None:
        self._llm, self._drills = llm, drills

    def chat_messages(self, persona: str, prompt: str) -> Messages:
        return self._llm.chat_messages(persona, prompt)

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
        pieces = self._llm.stream(
            messages, max_new_tokens, temperature, cancel, between_tokens, also, kept
        )
        if not self._drills.strikes("llm_raises"):
            yield from pieces
            return
        try:
            for piece in pieces:
                yield piece  # the first token, as a model that then broke gives it
                break
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                close()  # the model stops generating the rest
        raise DrillError("drill: the LLM raised")

    def warm_up(self) -> None:
        self._llm.warm_up()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)


DRILLS = web.AppKey("drills", Drills)


def setup(app: web.Application) -> None:
    cfg = app[CONFIG]
    app[DRILLS] = Drills(HANG_DEADLINES * cfg.models.tts_deadline_s)
    app.router.add_post("/api/v1/drill", drill)


async def drill(request: web.Request) -> web.Response:
    """{"fault": name} → 202 with what is armed and what struck so far."""
    require_host(request)
    if not request.app[CONFIG].drills:
        raise ApiError(404, "drills are off: set drills = true in the config to inject faults")
    body = await read_json(request)
    fault = body.get("fault")
    if not isinstance(fault, str) or fault not in FAULTS:
        raise ApiError(400, f'"fault" must be one of: {", ".join(FAULTS)}')
    drills = request.app[DRILLS]
    drills.arm(fault)
    return json_response(
        {"fault": fault, "armed": dict(drills.armed), "fired": dict(drills.fired)}, status=202
    )
