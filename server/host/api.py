"""HTTP API version 1: viewers' offer, hosts' say/scene/interrupt, roles, health and metrics."""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..config import RoleConfig
from ..keys import BROADCAST, CONFIG, LIVE, MEDIA_CLOCK, METRICS, PEERS, TIME
from ..media.mediaclock import SAMPLE_RATE
from ..show.scenes import Limits, SceneError, mode_of, role_named, scene_lines, text_of
from ..show.stage import Stage
from ..show.utterances import QueueFull, Utterance
from ..transport.peers import OfferError
from .autopilot import AUTOPILOT

MAX_JSON_BYTES = 64 * 1024


def strict_dumps(data: Any) -> str:
    """JSON as RFC 8259 has it: a NaN or an infinity fails here, on the server, instead of
    going out as a literal `Infinity` that the host panel's JSON.parse throws on."""
    return json.dumps(data, allow_nan=False)


def json_response(data: Any, status: int = 200) -> web.Response:
    """Every JSON answer the server writes."""
    return web.json_response(data, status=status, dumps=strict_dumps)


class ApiError(web.HTTPException):
    """A refusal with a JSON body {"error": ...}."""

    def __init__(self, status: int, message: str) -> None:
        self.status_code = status
        super().__init__(text=strict_dumps({"error": message}), content_type="application/json")


async def read_json(request: web.Request, limit: int = MAX_JSON_BYTES) -> dict:
    """The whole JSON object a request carries, at most `limit` bytes. Only a body declared
    JSON is read: a cross-site form can post text/plain without asking, never JSON."""
    if request.content_type != "application/json":
        raise ApiError(415, 'the body must be JSON, sent with "Content-Type: application/json"')
    if request.content_length is not None and request.content_length > limit:
        raise ApiError(413, f"body larger than {limit} bytes")
    # to its end: one read returns what has arrived so far, and a browser's offer can come
    # in several TCP segments
    raw = bytearray()
    async for chunk in request.content.iter_chunked(16 * 1024):
        raw += chunk
        if len(raw) > limit:
            raise ApiError(413, f"body larger than {limit} bytes")
    try:
        body = json.loads(bytes(raw) or b"null")
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "body must be a JSON object")
    try:  # JSON may escape half a surrogate pair ("\ud800"), which is no text to speak
        json.dumps(body, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise ApiError(400, "body holds a lone surrogate (\\ud800-\\udfff): not text") from None
    return body


def bearer_key(request: web.Request, keys: list[str], refusal: str) -> str:
    """The one of `keys` the request shows as its bearer token; 401 with `refusal` else."""
    header = request.headers.get("Authorization", "")
    given = header[7:].strip() if header.startswith("Bearer ") else ""
    # a header's bytes as they came (aiohttp keeps invalid UTF-8 as surrogate escapes)
    given_bytes = given.encode("utf-8", "surrogateescape")
    if given:
        for key in keys:
            if hmac.compare_digest(given_bytes, key.encode()):
                return key
    request.app[METRICS].rejected.labels("auth").inc()
    raise ApiError(401, refusal)


def require_host(request: web.Request) -> None:
    bearer_key(request, [request.app[CONFIG].host_token], "missing or wrong host token")


def _stage(request: web.Request) -> Stage:
    stage = request.app[LIVE].stage
    if stage is None:
        raise ApiError(503, "models are still loading")
    return stage


async def say(request: web.Request) -> web.Response:
    require_host(request)
    body = await read_json(request)
    with refused_as_api_error():  # the checks and messages of a scene's lines
        text = text_of(body.get("text"), limits(request))
        mode = mode_of(body.get("mode", "verbatim"))
    cache = body.get("cache", False)
    if not isinstance(cache, bool):
        raise ApiError(400, '"cache" must be true or false')
    if cache and mode != "verbatim":
        raise ApiError(400, '"cache" is for verbatim lines: a chat reply is new each time')
    utt = submit(request, text, role_from(request, body), mode, cache)
    request.app[AUTOPILOT].host_acted()  # a host comes first
    return json_response({"utterance_id": utt.id}, status=202)


async def scene(request: web.Request) -> web.Response:
    """A host's scene (server/show/scenes.py): all its lines accepted, in order, or none."""
    require_host(request)
    body = await read_json(request)
    with refused_as_api_error():
        lines = scene_lines(body, limits(request))
    try:
        _stage(request).submit_all(lines)
    except QueueFull as exc:
        request.app[METRICS].rejected.labels("queue_full").inc()
        raise ApiError(429, f"{exc}: the scene's {len(lines)} lines were not taken") from None
    request.app[AUTOPILOT].host_acted()
    return json_response({"utterance_ids": [u.id for u in lines]}, status=202)


def limits(request: web.Request) -> Limits:
    cfg = request.app[CONFIG]
    return Limits(cfg.stage.max_text_chars, cfg.role)


@contextmanager
def refused_as_api_error() -> Iterator[None]:
    """A request's lines refused (server/show/scenes.py): the same status and message."""
    try:
        yield
    except SceneError as exc:
        raise ApiError(exc.status, str(exc)) from None


def role_from(request: web.Request, body: dict) -> RoleConfig:
    """The role a body names (the first one when it names none); 400 or 404 otherwise."""
    with refused_as_api_error():
        role = role_named(body.get("role"), limits(request), needed=False)
    return role


def submit(
    request: web.Request, text: str, role: RoleConfig, mode: str, cache: bool = False
) -> Utterance:
    """Hand an utterance to the stage: 503 while loading, 429 when its queue is full."""
    stage = _stage(request)
    try:
        return stage.submit(text, role, mode, cache)
    except QueueFull as exc:
        request.app[METRICS].rejected.labels("queue_full").inc()
        raise ApiError(429, str(exc)) from None


async def interrupt(request: web.Request) -> web.Response:
    require_host(request)
    body = await read_json(request) if request.can_read_body else {}
    role = role_from(request, body).name if body.get("role") is not None else None
    request.app[AUTOPILOT].host_acted()
    at = await _stage(request).interrupt(role)
    return json_response({"ok": True, "at_sample": at})


async def utterances(request: web.Request) -> web.Response:
    require_host(request)
    return json_response(_stage(request).snapshot())


async def roles(request: web.Request) -> web.Response:
    return json_response(
        [
            {
                "name": r.name,
                "voice": r.voice,
                "persona": r.persona,
                "length_scale": r.length_scale,
                "pitch": r.pitch,
            }
            for r in request.app[CONFIG].roles
        ]
    )


async def offer(request: web.Request) -> web.Response:
    peers = request.app[PEERS]
    body = await read_json(request, limit=4 * MAX_JSON_BYTES)
    try:
        answer, viewer = await peers.answer(body.get("sdp"), body.get("type"), request.remote or "")
    except OfferError as exc:
        request.app[METRICS].rejected.labels("offer").inc()
        raise ApiError(exc.status, str(exc)) from None
    request.app[METRICS].viewers.set(len(peers))
    # broadcast sample s is due at fused time epoch_ms + s / 48 (ms since the Unix epoch)
    epoch_ms = request.app[TIME].at(request.app[MEDIA_CLOCK].epoch) * 1000
    return json_response(
        {
            "sdp": answer.sdp,
            "type": answer.type,
            "session_id": viewer.session_id,
            "clock": {
                "sample_rate": SAMPLE_RATE,
                "rtp_base": viewer.rtp_base,
                "epoch_ms": round(epoch_ms, 3),
            },
        }
    )


async def fused_time(request: web.Request) -> web.Response:
    """The clock every timestamp that leaves the server is on: sources, offsets, error bound."""
    clock = request.app[TIME]
    return json_response({"now_ms": clock.now_ms(), **clock.status()})


async def healthz(request: web.Request) -> web.Response:
    """200 while the show is on air: models loaded, frames going out, utterances taken off
    the queue; 503 with what is wrong otherwise (a load balancer or a watchdog acts on it)."""
    stage = request.app[LIVE].stage
    if stage is None:
        step = request.app[LIVE].step
        return json_response({"status": "loading", "step": step}, status=503)
    broadcast = request.app[BROADCAST]
    problems = []
    if not broadcast.on_air(time.monotonic()):
        problems.append("no broadcast frame has gone out for over a second")
    if not stage.working:
        problems.append("the stage's worker has stopped")
    return json_response(
        {
            "status": "off air" if problems else "ok",
            "problems": problems,
            "viewers": len(request.app[PEERS]),
            "queue": len(stage.queue),
            "current_sample": broadcast.write_head,
        },
        status=503 if problems else 200,
    )


async def metrics(request: web.Request) -> web.Response:
    m = request.app[METRICS]
    m.viewers.set(len(request.app[PEERS]))
    broadcast = request.app[BROADCAST]
    m.frames_sent.set(broadcast.frames_sent)
    m.frames_late.set(broadcast.frames_late)
    body = generate_latest(m.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def add_routes(app: web.Application) -> None:
    app.router.add_post("/api/v1/say", say)
    app.router.add_post("/api/v1/scene", scene)
    app.router.add_post("/api/v1/interrupt", interrupt)
    app.router.add_get("/api/v1/utterances", utterances)
    app.router.add_get("/api/v1/roles", roles)
    app.router.add_post("/api/v1/offer", offer)
    app.router.add_get("/api/v1/time", fused_time)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
