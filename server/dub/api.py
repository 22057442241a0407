"""`POST /api/v1/dub`: lines of several roles spoken beside the show, streamed back as NDJSON,
one object per line as soon as it and the lines before it are ready (docs/api.md).

A client shows a key from `[dub] api_keys` (or the host token) as a bearer token; each key
spends one token of its rate limit per line. The lines wait in the dubbing desk's role
scheduler (desk.py); a client that hangs up has its waiting lines taken out.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging

from aiohttp import web

from ..config import Config
from ..host.api import ApiError, bearer_key, read_json
from ..keys import CONFIG, LIVE, METRICS
from ..media.mediaclock import SAMPLE_RATE
from ..show.utterances import QueueFull
from ..transport.ratelimit import PerAddress
from .desk import DubDesk
from .encoding import ENCODERS
from .lines import DubError, DubLine, dub_lines

log = logging.getLogger(__name__)
HANG_UP_CHECK_S = 0.25  # how often a handler waiting for a line looks for its client
DESK = web.AppKey("dub_desk", DubDesk)
LIMITS = web.AppKey("dub_limits", PerAddress)


def setup(app: web.Application) -> None:
    cfg: Config = app[CONFIG]
    live = app[LIVE]

    def speaking():  # the show's, once its models are loaded
        return live.stage.pipeline.speaking if live.stage is not None else None

    def voices():  # the other workers', loaded with the models
        return live.models.dubbing if live.models is not None else ()

    dc = cfg.dub
    app[DESK] = desk = DubDesk(
        speaking,
        cfg.roles,
        dc.queue_size,
        fifo=dc.scheduler == "fifo",
        workers=dc.workers,
        voices=voices,
        deadline_s=cfg.models.tts_deadline_s,
    )
    app[LIMITS] = PerAddress(dc.lines_per_minute, dc.burst)
    app.router.add_post("/api/v1/dub", dub)

    async def stop(app: web.Application) -> None:
        await desk.stop()

    app.on_cleanup.append(stop)


def client_key(request: web.Request) -> str:
    """The key the request shows, if the config knows it (the host token counts as one)."""
    cfg: Config = request.app[CONFIG]
    keys = [*cfg.dub.api_keys, cfg.host_token]
    return bearer_key(request, keys, "missing or unknown API key")


async def dub(request: web.Request) -> web.StreamResponse:
    key = client_key(request)
    cfg: Config = request.app[CONFIG]
    body = await read_json(request)
    try:
        lines, fmt = dub_lines(body, cfg.role, cfg.dub.max_lines, cfg.stage.max_text_chars)
    except DubError as exc:
        raise ApiError(exc.status, str(exc)) from None
    if request.app[LIVE].stage is None:
        raise ApiError(503, "models are still loading")
    if not request.app[LIMITS].allow(key, cost=len(lines)):
        request.app[METRICS].rejected.labels("rate").inc()
        raise ApiError(429, f"this key may dub {cfg.dub.lines_per_minute:g} lines a minute")
    desk = request.app[DESK]
    try:
        desk.submit(lines)
    except QueueFull as exc:
        request.app[METRICS].rejected.labels("queue_full").inc()
        raise ApiError(429, f"dubbing is busy: {exc}") from None
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    try:
        await response.prepare(request)
        for line in lines:
            await _ready(request, line)
            await response.write(await answer(line, fmt))
        samples = sum(line.done.result().pcm.size for line in lines if line.spoken)
        end = {"done": True, "lines": len(lines), "seconds": samples / SAMPLE_RATE}
        await response.write(_ndjson(end))
        await response.write_eof()
    except ConnectionResetError:  # aiohttp's ClientConnectionResetError is one
        log.info("a dubbing client hung up after %d lines", sum(x.spoken for x in lines))
    finally:
        desk.withdraw(lines)  # a client gone mid-way: what still waits is not spoken
    return response


async def answer(line: DubLine, fmt: str) -> bytes:
    """The NDJSON object of one line: its audio and visemes, or why it failed."""
    head = {"index": line.index, "role": line.role, "text": line.text, **_times(line)}
    try:
        dubbed = await line.done
    except Exception as exc:
        return _ndjson({**head, "error": f"{type(exc).__name__}: {exc}"})
    audio = ENCODERS[fmt](dubbed.pcm, SAMPLE_RATE)
    return _ndjson(
        {
            **head,
            "format": fmt,
            "sample_rate": SAMPLE_RATE,
            "samples": int(dubbed.pcm.size),
            "audio": base64.b64encode(audio).decode("ascii"),
            "visemes": [f.to_json() for f in dubbed.frames],
            "onsets": dubbed.onsets,
        }
    )


async def _ready(request: web.Request, line: DubLine) -> None:
    """Wait for `line` to be spoken; ConnectionResetError once its client has hung up (a
    handler is not cancelled then: the lines would be spoken to no one)."""
    while not line.done.done():
        await asyncio.wait({line.done}, timeout=HANG_UP_CHECK_S)
        transport = request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("the client hung up")


def _times(line: DubLine) -> dict[str, float]:
    """When it was due (a later line: once the line before it had played), how long it
    waited for the TTS and how long the TTS took (ms, from the request)."""
    out = {}
    if line.due_at is not None:
        out["due_ms"] = round((line.due_at - line.accepted_at) * 1000, 1)
    if line.started_at is not None:
        out["waited_ms"] = round((line.started_at - line.accepted_at) * 1000, 1)
        if line.finished_at is not None:
            out["made_ms"] = round((line.finished_at - line.started_at) * 1000, 1)
    return out


def _ndjson(data: dict) -> bytes:
    return json.dumps(data, allow_nan=False).encode() + b"\n"
