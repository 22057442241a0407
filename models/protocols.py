"""What the show asks of its models, and the values they hand back.

The show drives three models from threads of its own: an LLM that streams a reply token by
token, a TTS that speaks a phrase sentence by sentence with the samples each phoneme covers,
and an ASR that hears back what was broadcast. Each is a Protocol here; the real adapters
(models/llm.py, models/tts.py, models/asr.py) and the test doubles both declare the one they
implement, so a type checker holds them to the same shape. A second voice, a lighter one for
the night and batched generation plug in here.

This module imports no model library: the server's pipeline can name these types without
loading torch, Piper or CTranslate2.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

DEFAULT_MAX_NEW_TOKENS = 64  # the show speaks in short replies

Messages = list[dict[str, str]]  # chat messages: {"role": ..., "content": ...}


@dataclass(frozen=True)
class TokenPiece:
    """One generated token's text.

    `text` is "" for a token that completes no character yet (part of a multi-byte
    UTF-8 sequence); its bytes show up in a later piece. `index` counts generated
    tokens from 0. `decoded_at` is time.perf_counter() when the model produced it.
    `decode_s` is how long the model computed it, from when it was free to go on after
    the previous token (a caller holding it between tokens is not decoding); None for
    the first token, which includes reading the prompt.
    """

    text: str
    index: int
    decoded_at: float
    decode_s: float | None = None


@dataclass(frozen=True)
class SpeechChunk:
    """One synthesized sentence.

    `phonemes` pairs each phoneme (Piper's "^" start and "$" end markers included) with
    the number of audio samples it covers; the counts sum exactly to len(audio).
    """

    audio: np.ndarray  # int16, mono
    sample_rate: int
    phonemes: tuple[tuple[str, int], ...]
    text: str


@dataclass(frozen=True)
class VoiceStyle:
    """How to speak. None for the noise scales means the voice's own default."""

    length_scale: float = 1.0  # > 1 is slower
    noise_scale: float | None = None  # voice variation
    noise_w_scale: float | None = None  # phoneme duration variation
    volume: float = 1.0
    # > 1 is higher: the voice speaks `pitch` times slower and its samples are played `pitch`
    # times faster (a chunk's sample rate says so), so the length holds and every phoneme's
    # sample count still covers its sound: a second character from the one packaged voice
    pitch: float = 1.0


@dataclass(frozen=True)
class HeardWord:
    """One recognised word; times are seconds from the start of the clip."""

    word: str
    start: float
    end: float
    probability: float


class LLM(Protocol):
    """A chat model that streams its reply token by token (a blocking generator)."""

    def chat_messages(self, persona: str, prompt: str) -> Messages:
        """System persona + user prompt, in the shape `stream` takes."""
        ...

    def stream(
        self,
        messages: Messages,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        temperature: float = 0.7,
        cancel: threading.Event | None = None,
        between_tokens: Callable[[], None] | None = None,
        also: Sequence[Messages] = (),
        kept: Callable[[list[str | None]], None] | None = None,
    ) -> Iterator[TokenPiece]:
        """The reply, one token at a time; it stops at the next token once `cancel` is set.
        `between_tokens` runs after each token is handed out, before the next is computed.
        `also`: prompts whose replies may be written beside this one; a model that does so
        hands them to `kept` (None for one it did not finish), one that does not never
        calls it."""
        ...

    def warm_up(self) -> None: ...


class TTS(Protocol):
    """A voice that speaks a phrase sentence by sentence, each with its phoneme timings."""

    sample_rate: int

    def speak(
        self, text: str, style: VoiceStyle | None = None, urgent: bool = False
    ) -> Iterator[SpeechChunk]:
        """One chunk per sentence as soon as it is synthesized (blocking); `urgent`: what
        first audio waits for, on more threads."""
        ...

    def warm_up(self) -> None: ...


class ASR(Protocol):
    """A recogniser that hears a mono clip back as timed words."""

    def transcribe(self, audio: np.ndarray, sample_rate: int) -> list[HeardWord]: ...

    def warm_up(self) -> None: ...
