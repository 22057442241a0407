"""socket.io: phrase, viseme and interrupt events out; chat, timesync and stats in.

Every client event is schema-checked; a wrong shape is answered with an error ack, never an
exception that could take the server down.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import socketio

from .config import ChatConfig
from .metrics import Metrics

log = logging.getLogger(__name__)

STAT_FIELDS = {
    "lipsync_offset_ms",
    "fps",
    "dropped_frames",
    "clock_offset_ms",
    "clock_uncertainty_ms",
    "lipsync_calibration_ms",
    "render_scale",
    "frame_jitter_ms",
    "visemes_seen_share",
    "output_latency_ms",
}
# a page's output device latency: how it knows it (web/static/stage/latency.js), and the most
# any device plausibly has (Bluetooth headsets and busy sound servers: hundreds of ms)
OUTPUT_LATENCY_SOURCES = {"reported", "timestamp", "none"}
OUTPUT_LATENCY_MAX_MS = 5000
ONSETS_PER_REPORT = 200  # lip-sync offsets a page may send in one client_stats
ONSETS_KEPT = 200  # per viewer, for the host panel's figures
UTTERANCE_ONSETS_PER_REPORT = 50  # utterances' first voiced visemes a page may report at once
UTTERANCE_ID_CHARS = 64
UTTERANCE_ONSET_FIELDS = ("id", "sample", "heard_ms", "drawn_ms")  # all that is passed on
RECENT_CHAT = 50  # viewer chat messages kept for the host panel


def error(message: str) -> dict:
    return {"ok": False, "error": message}


@dataclass
class RateLimit:
    """Token bucket per viewer: `burst` messages at once, refilled at `per_minute`."""

    per_minute: float
    burst: int
    tokens: float = 0.0
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = float(self.burst)

    def allow(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_minute / 60)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


class Signals:
    """The socket.io side of the server."""

    def __init__(self, chat: ChatConfig, metrics: Metrics, clock: Any) -> None:
        self.sio = socketio.AsyncServer(async_mode="aiohttp", cors_allowed_origins=[])
        self.chat_cfg = chat
        self.metrics = metrics
        self.clock = clock
        self.state: dict[str, Any] = {"fallback_level": 0, "night": False}
        self._limits: dict[str, RateLimit] = {}
        self.client_stats: dict[str, dict] = {}
        self.onsets: dict[str, deque[float]] = {}  # each viewer's latest lip-sync offsets (ms)
        # the last viewer chat messages {"id", "from", "text", "time" (ms, fused clock)}: the
        # host picks from them which ones a character answers
        self.recent_chat: deque[dict] = deque(maxlen=RECENT_CHAT)
        # set once the stage runs: events of speech still to come, for viewers who join now
        self.upcoming: Callable[[], list[tuple[str, dict]]] = list
        # set once the stage runs: a viewer's (sid) record of when it heard and saw an
        # utterance's first voiced viseme, for the utterance's cross-modal offsets
        self.on_utterance_onset: Callable[[str, dict], None] = lambda sid, onset: None
        # called with (sid, report) for each valid client_stats (the benches listen here)
        self.report_listeners: list[Callable[[str, dict], None]] = []
        self.sio.on("connect", self._connect)
        self.sio.on("disconnect", self._disconnect)
        self.sio.on("chat", self._chat)
        self.sio.on("timesync", self._timesync)
        self.sio.on("client_stats", self._client_stats)

    async def emit(self, event: str, data: dict) -> None:
        await self.sio.emit(event, data)

    async def _connect(self, sid: str, environ: dict, auth: Any = None) -> None:
        self._limits[sid] = RateLimit(self.chat_cfg.per_minute, self.chat_cfg.burst)
        await self.sio.emit("state", self.state, to=sid)
        for event, data in self.upcoming():
            await self.sio.emit(event, data, to=sid)

    async def _disconnect(self, sid: str, *args: Any) -> None:
        self._limits.pop(sid, None)
        self.client_stats.pop(sid, None)
        if self.onsets.pop(sid, None):
            self.metrics.viewer_lipsync.remove(sid)  # labelled once it had an onset

    async def _chat(self, sid: str, data: Any = None) -> dict:
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            self.metrics.rejected.labels("chat_shape").inc()
            return error('chat needs {"text": string}')
        text = data["text"].strip()
        if not text:
            return error("empty message")
        if len(text) > self.chat_cfg.max_chars:
            self.metrics.rejected.labels("chat_too_long").inc()
            return error(f"message longer than {self.chat_cfg.max_chars} characters")
        limit = self._limits.setdefault(
            sid, RateLimit(self.chat_cfg.per_minute, self.chat_cfg.burst)
        )
        if not limit.allow():
            self.metrics.rejected.labels("chat_rate").inc()
            return error("slow down: too many messages")
        msg = {"from": f"viewer-{sid[:6]}", "text": text, "id": uuid.uuid4().hex[:12]}
        self.recent_chat.append({**msg, "time": round(self.clock.now_ms())})
        await self.sio.emit("chat", msg)
        return {"ok": True, "id": msg["id"]}

    async def _timesync(self, sid: str, data: Any = None) -> dict:
        t1 = self.clock.now_ms()
        t0 = data.get("t0") if isinstance(data, dict) else None
        if not _finite(t0):
            return error('timesync needs {"t0": number}')
        return {"t0": t0, "t1": t1, "t2": self.clock.now_ms()}

    async def _client_stats(self, sid: str, data: Any = None) -> dict:
        if not isinstance(data, dict) or len(data) > 32:
            return error("client_stats needs an object")
        onsets = data.get("lipsync_onsets_ms", [])
        if not isinstance(onsets, list) or len(onsets) > ONSETS_PER_REPORT:
            return error(f"lipsync_onsets_ms must be a list of at most {ONSETS_PER_REPORT}")
        utterance_onsets = data.get("utterance_onsets", [])
        if not _valid_utterance_onsets(utterance_onsets):
            return error(
                f"utterance_onsets must be a list of at most {UTTERANCE_ONSETS_PER_REPORT}"
                f' {{"id": string of at most {UTTERANCE_ID_CHARS}, "sample": int >= 0,'
                ' "heard_ms": number, "drawn_ms": number}'
            )
        stats = {k: v for k, v in data.items() if k in STAT_FIELDS and _finite(v)}
        if not 0 <= stats.get("output_latency_ms", 0) <= OUTPUT_LATENCY_MAX_MS:
            del stats["output_latency_ms"]
        if data.get("output_latency_source") in OUTPUT_LATENCY_SOURCES:
            stats["output_latency_source"] = data["output_latency_source"]
        self.client_stats[sid] = stats
        if _finite(jitter := stats.get("frame_jitter_ms")):
            self.metrics.frame_jitter.observe(jitter)
        kept = self.onsets.setdefault(sid, deque(maxlen=ONSETS_KEPT))
        for ms in filter(_finite, onsets):
            self.metrics.lipsync.observe(ms)
            self.metrics.viewer_lipsync.labels(sid).observe(ms)
            kept.append(ms)
        for first in utterance_onsets:
            self.on_utterance_onset(sid, {k: first[k] for k in UTTERANCE_ONSET_FIELDS})
        for listen in self.report_listeners:
            listen(sid, data)
        return {"ok": True}


def _valid_utterance_onsets(value: Any) -> bool:
    """A page's `utterance_onsets`: where and when it drew each utterance's first voiced viseme."""
    return (
        isinstance(value, list)
        and len(value) <= UTTERANCE_ONSETS_PER_REPORT
        and all(map(_valid_utterance_onset, value))
    )


def _valid_utterance_onset(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("id"), str)
        and len(item["id"]) <= UTTERANCE_ID_CHARS
        and isinstance(item.get("sample"), int)
        and not isinstance(item["sample"], bool)
        and item["sample"] >= 0
        and _finite(item.get("heard_ms"))
        and _finite(item.get("drawn_ms"))
    )


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
