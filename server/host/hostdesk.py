"""The host desk's API: one live snapshot of the show, and answering a viewer's chat message.

`GET /api/v1/show` is what the host panel (`/host`) polls every second; `POST
/api/v1/chat/answer` hands a viewer's chat message to a character in chat mode. Both need the host
token. An answered message becomes an ordinary utterance (`Stage.submit`), so it is spoken,
interrupted or reported failed like any other.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from aiohttp import web

from ..keys import BROADCAST, CONFIG, LIVE, MEMORY, METRICS, PEERS, SIGNALS
from ..media.mediaclock import SAMPLE_RATE
from ..media.syncwindows import ATSC, EBU_R37, in_window
from ..night.ladder import LADDER
from ..night.watch import NIGHT_WATCH
from ..show.utterances import rounded_median
from .api import ApiError, json_response, read_json, require_host, role_from, submit
from .autopilot import AUTOPILOT, chat_prompt
from .history import HISTORY

ANSWERED_KEPT = 500  # chat ids remembered as answered (more than the chat buffer holds)


class HostDesk:
    """Which viewer chat messages were answered, and by which utterance."""

    def __init__(self) -> None:
        self.answered: OrderedDict[str, str] = OrderedDict()

    def mark(self, chat_id: str, utterance_id: str) -> None:
        self.answered[chat_id] = utterance_id
        while len(self.answered) > ANSWERED_KEPT:
            self.answered.popitem(last=False)


HOSTDESK = web.AppKey("hostdesk", HostDesk)


def setup(app: web.Application) -> None:
    app[HOSTDESK] = HostDesk()
    app.router.add_get("/api/v1/show", show)
    app.router.add_post("/api/v1/chat/answer", answer_chat)
    app.router.add_post("/api/v1/autopilot", switch_autopilot)
    app.router.add_post("/api/v1/fallback", pin_fallback)
    app.router.add_get("/api/v1/history", history)


async def show(request: web.Request) -> web.Response:
    """Everything the host panel shows, in one answer (200 even while models load)."""
    require_host(request)
    app = request.app
    stage = app[LIVE].stage
    signals = app[SIGNALS]
    desk: HostDesk = app[HOSTDESK]
    if stage is not None:
        snap = stage.snapshot()
        queue_max = stage.queue.maxsize
    else:
        snap = {"queue": [], "current": None, "recent": []}
        queue_max = app[CONFIG].stage.queue_size
    broadcast = app.get(BROADCAST)
    health: dict[str, Any] = {
        "status": "ok" if stage is not None else "loading",
        "current_sample": broadcast.write_head if broadcast is not None else 0,
        "sample_rate": SAMPLE_RATE,
        **{k: v for k, v in signals.state.items() if isinstance(v, int | float | str | bool)},
    }
    ladder = app[LADDER]
    since_ms = time.time() * 1000 - (ladder.clock() - ladder.since) * 1000
    health["fallback"] = ladder.to_json(round(since_ms))
    if stage is None:
        health["step"] = app[LIVE].step
    chat = [
        {**m, "answered": m["id"] in desk.answered, "utterance_id": desk.answered.get(m["id"])}
        for m in signals.recent_chat
    ]
    return json_response(
        {
            **snap,
            "queue_max": queue_max,
            "viewers": viewers(app),
            "speech_check": speech_check(app),
            "chat": chat,
            "health": health,
            "roles": [r.name for r in app[CONFIG].roles],
            # the night's alerts, oldest first; and memory as last sampled (bytes, shares)
            "alerts": [a.to_json() for a in app[METRICS].anomalies.recent],
            "autopilot": app[AUTOPILOT].to_json(),
            "memory": app[MEMORY].last,
        }
    )


def viewers(app: web.Application) -> dict[str, Any]:
    """How many are watching, and a summary of what their browsers report."""
    signals = app[SIGNALS]
    peers = app.get(PEERS)
    sockets = sum(1 for _ in signals.sio.manager.get_participants("/", None))
    stats = list(signals.client_stats.values())

    def figures(name: str) -> list[float]:
        return [s[name] for s in stats if name in s]

    fps, lipsync = figures("fps"), figures("lipsync_offset_ms")
    clock, dropped = figures("clock_offset_ms"), figures("dropped_frames")
    jitter = figures("frame_jitter_ms")
    latency = figures("output_latency_ms")
    drawn = sorted(ms for kept in signals.onsets.values() for ms in kept)
    magnitudes = sorted(abs(ms) for ms in drawn)
    worst = max(lipsync, key=abs) if lipsync else None
    return {
        "webrtc": len(peers) if peers is not None else 0,
        "sockets": sockets,
        "reporting": len(stats),
        "fps_median": rounded_median(fps),
        "fps_min": round(min(fps), 1) if fps else None,
        "lipsync_offset_ms_median": rounded_median(lipsync),
        "lipsync_offset_ms_worst": None if worst is None else round(worst, 1),
        "clock_offset_ms_median": rounded_median(clock),
        "dropped_frames": int(sum(dropped)) if dropped else None,
        "frame_jitter_ms_worst": round(max(jitter), 1) if jitter else None,
        # how long after their browsers render a sample it leaves the speakers, and how many
        # pages cannot know it (their browser reports no latency)
        "output_latency_ms_median": rounded_median(latency),
        "output_latency_ms_max": round(max(latency), 1) if latency else None,
        "output_latency_unknown": sum(s.get("output_latency_source") == "none" for s in stats),
        # picture − sound at the viseme onsets the pages drew lately (positive: the mouth late)
        "lipsync_drawn_ms_p50": rounded_median(drawn),
        "lipsync_drawn_ms_p95_abs": _quantile(magnitudes, 0.95),
        "lipsync_drawn_in_atsc": in_window(drawn, ATSC),
        "lipsync_drawn_in_r37": in_window(drawn, EBU_R37),
    }


def speech_check(app: web.Application) -> dict[str, Any] | None:
    """The ASR feedback's counts, drift, correction and flagged phrases (None when it is off)."""
    feedback = app[LIVE].feedback
    return feedback.summary() if feedback is not None else None


def _quantile(ordered: list[float], q: float) -> float | None:
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1) if ordered else None


async def switch_autopilot(request: web.Request) -> web.Response:
    """{"enabled": bool} → 200 with the autopilot's state: the show runs itself, or not."""
    require_host(request)
    body = await read_json(request)
    enabled = body.get("enabled")
    if not isinstance(enabled, bool):
        raise ApiError(400, '"enabled" must be true or false')
    autopilot = request.app[AUTOPILOT]
    autopilot.switch(enabled)
    return json_response(autopilot.to_json())


async def history(request: web.Request) -> web.Response:
    """The last hour, sampled every ten seconds, as columns for the panel's charts."""
    require_host(request)
    return json_response(request.app[HISTORY].columns())


def night_figures(app: web.Application) -> Callable[[], dict[str, float | None]]:
    """What the history samples: a reader of the show's figures now (alerts: since the last
    reading)."""
    alerts_seen = 0

    def read() -> dict[str, float | None]:
        nonlocal alerts_seen
        anomalies = app[METRICS].anomalies
        v = viewers(app)
        ttfa = anomalies.p99("text_to_first_audio")
        rss = app[MEMORY].last.get("rss")
        alerts, alerts_seen = anomalies.raised - alerts_seen, anomalies.raised
        return {
            "ttfa_p99_ms": None if ttfa is None else ttfa * 1000,
            "lipsync_p95_ms": v["lipsync_drawn_ms_p95_abs"],
            "fps": v["fps_median"],
            "viewers": max(v["webrtc"], v["sockets"]),
            "rss_mb": None if rss is None else rss / 2**20,
            "fallback_level": app[LADDER].level,
            "alerts": alerts,
        }

    return read


async def pin_fallback(request: web.Request) -> web.Response:
    """{"level": 0-3 | null} → 200 with the ladder: the host pins the night's fallback level
    (null: the triggers decide again)."""
    require_host(request)
    body = await read_json(request)
    level = body.get("level", "missing")
    if level is not None and (isinstance(level, bool) or level not in (0, 1, 2, 3)):
        raise ApiError(400, '"level" must be 0, 1, 2, 3 or null')
    ladder = request.app[LADDER]
    ladder.pin(level)
    await request.app[NIGHT_WATCH].tell()
    return json_response(ladder.to_json())


async def answer_chat(request: web.Request) -> web.Response:
    """{"id", "role"?} → 202 {"utterance_id"}: a character answers that viewer message."""
    require_host(request)
    app = request.app
    body = await read_json(request)
    chat_id = body.get("id")
    if not isinstance(chat_id, str) or not chat_id.strip():
        raise ApiError(400, '"id" must be a chat message id (a string)')
    role = role_from(request, body)
    msg = next((m for m in app[SIGNALS].recent_chat if m["id"] == chat_id), None)
    if msg is None:
        raise ApiError(404, f"no recent chat message {chat_id!r} (unknown or expired)")
    desk: HostDesk = app[HOSTDESK]
    if chat_id in desk.answered:
        raise ApiError(409, f"chat message {chat_id!r} is already answered")
    utt = submit(request, chat_prompt(msg), role, "chat")
    desk.mark(chat_id, utt.id)
    app[AUTOPILOT].host_acted()
    return json_response({"utterance_id": utt.id, "chat_id": chat_id}, status=202)
