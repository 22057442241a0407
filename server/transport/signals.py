"""socket.io: phrase, viseme and interrupt events out; chat, timesync and stats in.

Every client event is schema-checked; a wrong shape is answered with an error ack, never an
exception that could take the server down.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import socketio

from timesync.fused import FusedClock

from ..config import ChatConfig
from ..logbook import Logbook
from ..metrics import Metrics
from .ratelimit import PerAddress, RateLimit
from .viewerinput import (
    ONSET_RANGE_MS,
    OUTPUT_LATENCY_SOURCES,
    STAT_RANGES,
    UTTERANCE_ID_CHARS,
    UTTERANCE_ONSET_FIELDS,
    UTTERANCE_ONSETS_PER_REPORT,
    finite,
    plain_text,
    valid_onset_roles,
    valid_utterance_onsets,
    within,
)

log = logging.getLogger(__name__)

ONSETS_PER_REPORT = 200  # lip-sync offsets a page may send in one client_stats
ONSETS_KEPT = 200  # per viewer, for the host panel's figures
RECENT_CHAT = 50  # viewer chat messages kept for the host panel
# The most one socket.io message may carry: a page's largest, a client_stats report with 200
# onsets and 50 utterance onsets, is about 10 KB (engineio's default is 1 MB)
MAX_MESSAGE_BYTES = 32 * 1024
# How often a socket may send each event (a page: a timesync burst of 5 at connect, then one
# every 10 s; client_stats every 5 s): a burst, then so many a minute
EVENT_RATES = {"timesync": (30, 10), "client_stats": (30, 5)}
# refusals for going too fast after which a socket is let go: it does not slow down
STRIKES = 20
# Packets waiting for one socket: a page that reads keeps a few (a phrase's two events at a
# time); engineio queues for one that does not (its TCP buffers full) without bound
MAX_QUEUED = 256


def error(message: str) -> dict:
    return {"ok": False, "error": message}


class Signals:
    """The socket.io side of the server."""

    def __init__(
        self,
        chat: ChatConfig,
        metrics: Metrics,
        clock: FusedClock,
        allowed_origins: list[str],
        replay: Callable[[], list[tuple[str, dict]]] = list,
        utterance_onset: Callable[[str, dict], None] = lambda sid, onset: None,
        logbook: Logbook | None = None,
        roles: Sequence[str] = (),
    ) -> None:
        self.roles = set(roles)  # the cast: lip-sync is kept per role for these names only
        self.sio = socketio.AsyncServer(
            async_mode="aiohttp",
            cors_allowed_origins=same_origin_or(allowed_origins),
            max_http_buffer_size=MAX_MESSAGE_BYTES,
        )
        self.chat_cfg = chat
        self.metrics = metrics
        self.clock = clock
        self.state: dict[str, Any] = {"fallback_level": 0, "night": False}
        self._limits: dict[str, dict[str, RateLimit]] = {}  # each socket's, by event
        self._address: dict[str, str] = {}
        self._strikes: dict[str, int] = {}
        self._chat_by_address = PerAddress(chat.per_minute_per_address, chat.burst_per_address)
        self._chat_total = RateLimit(chat.per_minute_total, chat.burst_total)
        self.client_stats: dict[str, dict] = {}
        self.onsets: dict[str, deque[float]] = {}  # each viewer's latest lip-sync offsets (ms)
        # the last viewer chat messages {"id", "from", "text", "time" (ms, fused clock)}: the
        # host picks from them which ones a character answers; kept in the logbook, so a
        # restart keeps them too
        self.logbook = logbook
        self.recent_chat: deque[dict] = deque(
            logbook.recent_chat(RECENT_CHAT) if logbook is not None else (), maxlen=RECENT_CHAT
        )
        # events of speech still to come, for viewers who join now
        self.upcoming = replay
        # a viewer's (sid) record of when it heard and saw an utterance's first voiced
        # viseme, for the utterance's cross-modal offsets
        self.on_utterance_onset = utterance_onset
        # called with (sid, report) for each valid client_stats (the benches listen here)
        self.report_listeners: list[Callable[[str, dict], None]] = []
        self.sio.on("connect", self._connect)
        self.sio.on("disconnect", self._disconnect)
        self.sio.on("chat", self._chat)
        self.sio.on("timesync", self._timesync)
        self.sio.on("client_stats", self._client_stats)

    async def emit(self, event: str, data: dict) -> None:
        self.drop_stalled()
        await self.sio.emit(event, data)

    def drop_stalled(self) -> None:
        """Close every socket with more than MAX_QUEUED packets waiting: it stopped reading
        (its writer is stuck on a full TCP buffer), and its queue would grow all night. The
        connection is aborted under engineio, which would otherwise wait on that writer."""
        eio = self.sio.eio
        for eio_sid, sock in list(eio.sockets.items()):
            if sock.closed or sock.queue.qsize() <= MAX_QUEUED:
                continue
            log.info("socket %s stopped reading (%d queued): dropped", eio_sid[:8], MAX_QUEUED)
            request = (self.sio.environ.get(eio_sid) or {}).get("aiohttp.request")
            if request is not None and request.transport is not None:
                request.transport.abort()
            eio.start_background_task(sock.close, wait=False, abort=True)

    async def _connect(self, sid: str, environ: dict, auth: Any = None) -> None:
        # engineio's environ says 127.0.0.1 for every aiohttp client: the request knows
        request = environ.get("aiohttp.request")
        self._address[sid] = (request.remote if request is not None else None) or ""
        chat = self.chat_cfg
        self._limits[sid] = {
            "chat": RateLimit(chat.per_minute, chat.burst),
            **{event: RateLimit(*rate) for event, rate in EVENT_RATES.items()},
        }
        await self.sio.emit("state", self.state, to=sid)
        for event, data in self.upcoming():
            await self.sio.emit(event, data, to=sid)

    async def _disconnect(self, sid: str, *args: Any) -> None:
        self._limits.pop(sid, None)
        self._address.pop(sid, None)
        self._strikes.pop(sid, None)
        self.client_stats.pop(sid, None)
        if self.onsets.pop(sid, None):
            self.metrics.viewer_lipsync.remove(sid)  # labelled once it had an onset

    async def set_state(self, changes: dict[str, Any]) -> None:
        """The show's state changed (the night's fallback level): every page hears it."""
        self.state.update(changes)
        await self.sio.emit("state", self.state)

    async def _chat(self, sid: str, data: Any = None) -> dict:
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            self.metrics.rejected.labels("chat_shape").inc()
            return error('chat needs {"text": string}')
        text = plain_text(data["text"]).strip()
        if not text:
            return error("empty message")
        if len(text) > self.chat_cfg.max_chars:
            self.metrics.rejected.labels("chat_too_long").inc()
            return error(f"message longer than {self.chat_cfg.max_chars} characters")
        too_fast = await self._too_fast(sid, "chat")
        if too_fast is None and not self._chat_by_address.allow(self._address.get(sid, "")):
            too_fast = error("slow down: too many messages from your address")
        if too_fast is None and not self._chat_total.allow():
            too_fast = error("slow down: too many messages in the chat just now")
        if too_fast is not None:
            self.metrics.rejected.labels("chat_rate").inc()
            return too_fast
        msg = {"from": f"viewer-{sid[:6]}", "text": text, "id": uuid.uuid4().hex[:12]}
        kept = {**msg, "time": round(self.clock.now_ms())}
        self.recent_chat.append(kept)
        if self.logbook is not None:
            self.logbook.chat(kept)
        await self.sio.emit("chat", msg)
        return {"ok": True, "id": msg["id"]}

    async def _too_fast(self, sid: str, event: str) -> dict | None:
        """An error ack when `sid` sends `event` faster than it may (None: go on); a socket
        refused STRIKES times is disconnected."""
        limit = self._limits.get(sid, {}).get(event)
        if limit is None or limit.allow():
            return None
        self._strikes[sid] = strikes = self._strikes.get(sid, 0) + 1
        if strikes >= STRIKES:
            log.info("socket %s keeps sending too fast: disconnected", sid[:8])
            await self.sio.disconnect(sid)
        return error(f"slow down: too many {event} messages")

    async def _timesync(self, sid: str, data: Any = None) -> dict:
        if (too_fast := await self._too_fast(sid, "timesync")) is not None:
            return too_fast
        t1 = self.clock.now_ms()
        t0 = data.get("t0") if isinstance(data, dict) else None
        if not finite(t0):
            return error('timesync needs {"t0": number}')
        return {"t0": t0, "t1": t1, "t2": self.clock.now_ms()}

    async def _client_stats(self, sid: str, data: Any = None) -> dict:
        if (too_fast := await self._too_fast(sid, "client_stats")) is not None:
            return too_fast
        if not isinstance(data, dict) or len(data) > 32:
            return error("client_stats needs an object")
        onsets = data.get("lipsync_onsets_ms", [])
        if not isinstance(onsets, list) or len(onsets) > ONSETS_PER_REPORT:
            return error(f"lipsync_onsets_ms must be a list of at most {ONSETS_PER_REPORT}")
        roles = data.get("lipsync_onset_roles")
        if roles is not None and not valid_onset_roles(roles, len(onsets)):
            return error(
                "lipsync_onset_roles must be a list as long as lipsync_onsets_ms, each a role's"
                f" name (a string of at most {UTTERANCE_ID_CHARS}) or null"
            )
        utterance_onsets = data.get("utterance_onsets", [])
        if not valid_utterance_onsets(utterance_onsets, self.clock.now_ms()):
            return error(
                f"utterance_onsets must be a list of at most {UTTERANCE_ONSETS_PER_REPORT}"
                f' {{"id": string of at most {UTTERANCE_ID_CHARS}, "sample": int from 0 to'
                ' 2**53, "heard_ms" and "drawn_ms": server times (ms) within a day of now and'
                " 10 s of each other}"
            )
        stats = {k: v for k, v in data.items() if k in STAT_RANGES and within(v, STAT_RANGES[k])}
        source = data.get("output_latency_source")
        if isinstance(source, str) and source in OUTPUT_LATENCY_SOURCES:  # a list is unhashable
            stats["output_latency_source"] = source
        self.client_stats[sid] = stats
        if finite(jitter := stats.get("frame_jitter_ms")):
            self.metrics.frame_jitter.observe(jitter)
        kept = [(ms, r) for ms, r in zip(onsets, roles or [None] * len(onsets), strict=True)
                if within(ms, ONSET_RANGE_MS)]  # fmt: skip
        plausible = [ms for ms, _ in kept]
        self._by_role(kept)
        self.metrics.lipsync.observe_many(plausible)
        self.metrics.viewer_lipsync.observe_many(plausible, (sid,))
        self.onsets.setdefault(sid, deque(maxlen=ONSETS_KEPT)).extend(plausible)
        for first in utterance_onsets:
            self.on_utterance_onset(sid, {k: first[k] for k in UTTERANCE_ONSET_FIELDS})
        for listen in self.report_listeners:
            listen(sid, data)
        return {"ok": True}

    def _by_role(self, onsets: list[tuple[float, str | None]]) -> None:
        """Each role's own lip-sync: the plausible onsets its visemes were drawn at, with
        their roles (the cast's roles only, so a page cannot make up labels)."""
        mine: dict[str, list[float]] = {}
        for ms, role in onsets:
            if role in self.roles:
                mine.setdefault(role, []).append(ms)
        for role, kept in mine.items():
            self.metrics.role_lipsync.observe_many(kept, (role,))


def same_origin_or(allowed: list[str]) -> Callable[[str, dict], bool]:
    """The socket's Origin check: a page from the host the request was sent to, or from one
    of `allowed`. A browser always sends Origin, so another site's page cannot open a socket
    and act as a viewer from its visitors' browsers; a client with no Origin (no browser) is
    not asked. By host alone: behind a proxy that ends TLS the page is https and the request
    it forwards http (a proxy passes Host on; X-Forwarded headers anyone can send)."""
    extra = set(allowed)

    def check(origin: str | None, environ: dict) -> bool:
        if not origin:
            return False  # no Origin: no CORS headers either (the connection is not refused)
        scheme, _, host = origin.partition("://")
        own = scheme in ("http", "https") and host == environ.get("HTTP_HOST")
        return own or origin in extra

    return check
