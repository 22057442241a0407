"""Speech the show says again, synthesized once: greetings, stock phrases, autopilot openers.

A line asks for it (`"cache": true` in `POST /api/v1/say`; the show's own stock lines do). The
key is the content: the voice, the text, and every setting that changes the sound (the role's
VoiceStyle) and the format of what is kept; never the time. A phrase on a cache miss is
synthesized as any other, streamed chunk by chunk as Piper makes it, and kept; on a hit its
chunks come back without the TTS, phoneme timings included, so its visemes are placed exactly
as the first time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct
from collections.abc import AsyncGenerator, AsyncIterator, Callable

import numpy as np

from models.protocols import SpeechChunk, VoiceStyle

from ..cache import Cache

FORMAT = 1  # of what is kept: part of the key, so a new format never reads an old entry
_HEADER = struct.Struct("<I")


def speech_key(voice: str, text: str, style: VoiceStyle) -> str:
    content = {"format": FORMAT, "voice": voice, "text": text, **dataclasses.asdict(style)}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def encode(chunks: list[SpeechChunk]) -> bytes:
    """Chunks as bytes: a JSON header (rates, phonemes, texts, lengths), then the int16 audio."""
    header = [
        {"rate": c.sample_rate, "phonemes": c.phonemes, "text": c.text, "n": len(c.audio)}
        for c in chunks
    ]
    head = json.dumps(header).encode()
    audio = b"".join(np.asarray(c.audio, dtype="<i2").tobytes() for c in chunks)
    return _HEADER.pack(len(head)) + head + audio


def decode(data: bytes) -> list[SpeechChunk]:
    (size,) = _HEADER.unpack_from(data)
    header = json.loads(data[_HEADER.size : _HEADER.size + size])
    audio = np.frombuffer(data, dtype="<i2", offset=_HEADER.size + size).astype(np.int16)
    chunks, at = [], 0
    for c in header:
        phonemes = tuple((symbol, int(n)) for symbol, n in c["phonemes"])
        chunks.append(SpeechChunk(audio[at : at + c["n"]].copy(), c["rate"], phonemes, c["text"]))
        at += c["n"]
    return chunks


class SpeechCache:
    def __init__(self, cache: Cache, voice: str) -> None:
        self.cache, self.voice = cache, voice

    async def speak(
        self,
        text: str,
        style: VoiceStyle,
        synthesize: Callable[[], AsyncIterator[SpeechChunk]],
        voice: str | None = None,
    ) -> AsyncGenerator[SpeechChunk, None]:
        """`text`'s chunks in `voice` (the cache's own by default): the kept ones, or
        `synthesize()`'s, kept for next time. A voice makes one chunk a sentence, and a stock
        line is a sentence or two: on a miss the whole phrase is synthesized before its first
        chunk comes, and callers of the same phrase meanwhile wait for that one synthesis."""

        async def make() -> bytes:
            return encode([chunk async for chunk in synthesize()])

        for chunk in decode(
            await self.cache.get(speech_key(voice or self.voice, text, style), make)
        ):
            yield chunk
