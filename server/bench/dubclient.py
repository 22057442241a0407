"""A dubbing client: one POST /api/v1/dub, its NDJSON lines read as they come, each timed, and
their audio decoded (WAV or Ogg Opus) to 48 kHz int16."""

from __future__ import annotations

import base64
import io
import json
import time
import wave
from dataclasses import dataclass, field

import aiohttp
import av
import numpy as np


@dataclass
class Answer:
    """A request's answer: its status, its objects (the error body where refused), and when
    each arrived (seconds after the request was sent)."""

    status: int
    objects: list[dict] = field(default_factory=list)
    arrived_s: list[float] = field(default_factory=list)

    @property
    def lines(self) -> list[dict]:
        return [o for o in self.objects if "index" in o]


async def dub(
    url: str, key: str | None, body: object, session: aiohttp.ClientSession | None = None
) -> Answer:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    own = session is None
    http = session or aiohttp.ClientSession()
    started = time.perf_counter()
    try:
        async with http.post(url + "/api/v1/dub", json=body, headers=headers) as r:
            answer = Answer(r.status)
            if r.status != 200:
                answer.objects.append(await r.json())
                return answer
            held = b""  # a line of audio is larger than aiohttp's readline takes
            async for data in r.content.iter_any():
                *whole, held = (held + data).split(b"\n")
                for raw in whole:
                    if raw.strip():
                        answer.objects.append(json.loads(raw))
                        answer.arrived_s.append(time.perf_counter() - started)
            return answer
    finally:
        if own:
            await http.close()


def audio_of(line: dict) -> np.ndarray:
    """A dubbed line's audio, decoded: int16 at its `sample_rate`."""
    data = base64.b64decode(line["audio"])
    if line["format"] == "wav":
        with wave.open(io.BytesIO(data)) as w:
            assert w.getframerate() == line["sample_rate"] and w.getnchannels() == 1
            return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int16)
    with av.open(io.BytesIO(data), "r") as container:  # libopus decodes to float, ±1
        parts = [np.asarray(f.to_ndarray(), np.float64).reshape(-1) for f in container.decode(0)]
    pcm: np.ndarray = np.concatenate(parts)
    return np.clip(np.round(pcm * 32768), -32768, 32767).astype(np.int16)
