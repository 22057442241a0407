"""The aiohttp application: wires the clock, broadcast, stage, transports and API together."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web

from . import drills, heap
from .cache import Cache, RedisStore, SQLiteStore, Store
from .config import Config, state_path
from .dub import api as dubbing
from .facts import page_facts
from .headers import security_headers
from .host import api, hostdesk
from .host.autopilot import AUTOPILOT, Autopilot
from .host.history import HISTORY, History
from .keys import (
    BROADCAST,
    CONFIG,
    LIVE,
    LOGBOOK,
    MEDIA_CLOCK,
    MEMORY,
    METRICS,
    PEERS,
    SIGNALS,
    TIME,
    TIMELINE,
)
from .live import Live
from .loading import Models, load_models
from .logbook import Logbook
from .media.broadcast import Broadcast
from .media.mediaclock import MediaClock
from .media.timeline import SpeechTimeline
from .memorywatch import MemoryWatch
from .metrics import Metrics
from .night.ladder import LADDER, Ladder
from .night.watch import NIGHT_WATCH, NightWatch, local_clock
from .show.assembly import assemble
from .show.feedback import SpeechFeedback
from .show.speechcache import SpeechCache
from .stalls import StallWatch
from .tasks import cancel_and_wait
from .transport import rtp
from .transport.peers import ViewerPeers
from .transport.signals import Signals
from .webhook import Webhook

log = logging.getLogger(__name__)
WEB_DIR = Path(__file__).resolve().parent.parent / "web"


def build_app(
    cfg: Config, models: Models | None = None, web_dir: Path = WEB_DIR
) -> web.Application:
    """The whole server. Models load in the background unless given; /healthz says when ready."""
    # Tokens, phrases and frames hop between the model threads and the event loop; with the
    # default 5 ms GIL switch interval each hop can wait that long behind a busy thread.
    sys.setswitchinterval(0.001)
    app = web.Application(client_max_size=256 * 1024)
    app[CONFIG] = cfg
    app[METRICS] = metrics = Metrics()
    app[LIVE] = live = Live()  # the loading step; the models, the ASR and the stage once up
    rtp.use_ice_addresses(cfg.webrtc.ice_addresses)

    from timesync.fused import FusedClock
    from timesync.poller import SourcePoller, sources_from

    tc = cfg.time
    app[TIME] = clock = FusedClock(max_slew_ppm=tc.max_slew_ppm)
    sources = sources_from(
        tc.ntp_servers, tc.ptp_sockets, tc.phc_devices, tc.rtc_devices, tc.ntp_version
    )
    metrics.watch_clock(clock)  # the time status as gauges, read at each scrape
    poller = SourcePoller(clock, sources, tc.min_poll_s, tc.max_poll_s, tc.ptp_poll_s)
    lb = cfg.logbook
    path = lb.path or state_path("logbook.sqlite")
    app[LOGBOOK] = logbook = Logbook(path, lb.keep_utterances, lb.keep_chat)
    signals = Signals(
        cfg.chat,
        metrics,
        clock,
        cfg.allowed_origins,
        replay=live.upcoming,  # a joining viewer hears of the speech still to come
        utterance_onset=live.viewer_onset,  # when a viewer heard and saw a line start
        logbook=logbook,  # the chat the host picks from survives a restart
        roles=[r.name for r in cfg.roles],
    )
    signals.sio.attach(app)
    app[SIGNALS] = signals

    app.on_response_prepare.append(security_headers(cfg.allowed_origins))
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(str(web_dir)), autoescape=True)
    api.add_routes(app)
    hostdesk.setup(app)  # the host panel's own endpoints, built on the API's helpers
    drills.setup(app)
    dubbing.setup(app)  # lines spoken beside the show, on its TTS thread
    app[MEMORY] = memory = MemoryWatch(
        metrics, metrics.anomalies, cfg.alerts.rss_alert_mb * 1024 * 1024 or None
    )
    app[LADDER] = ladder = Ladder(cfg.night, time.monotonic)
    ladder.listeners.append(lambda level, why: metrics.fallback_switches.labels(str(level)).inc())
    night = NightWatch(
        ladder,
        metrics,
        memory,
        stage=lambda: live.stage,
        broadcast=lambda: app.get(BROADCAST),
        tell_pages=signals.set_state,
        local=local_clock(cfg.night.timezone),
    )
    app[NIGHT_WATCH] = night
    app[HISTORY] = history = History(hostdesk.night_figures(app))
    desk = app[hostdesk.HOSTDESK]
    app[AUTOPILOT] = autopilot = Autopilot(
        cfg.autopilot,
        stage=lambda: live.stage,
        chat=lambda: list(signals.recent_chat),
        answered=desk.mark,
        is_answered=lambda chat_id: chat_id in desk.answered,
        viewers=lambda: len(app[PEERS]) if PEERS in app else 0,
        role=cfg.roles[0],
    )
    app.router.add_get("/", _page("index.html"))
    app.router.add_get("/host", _page("host.html"))
    static = web_dir / "static"
    if static.is_dir():
        app.router.add_static("/static/", static, follow_symlinks=False)
    _add_vendor_routes(app, web_dir / "node_modules")

    background: list[asyncio.Task] = []
    watch = StallWatch(cfg.alerts.stall_log_s)

    async def on_startup(app: web.Application) -> None:
        media = MediaClock(rate_ppm=cfg.stage.clock_skew_ppm)
        timeline = SpeechTimeline()
        broadcast = Broadcast(media, timeline)
        app[MEDIA_CLOCK], app[TIMELINE], app[BROADCAST] = media, timeline, broadcast
        app[PEERS] = ViewerPeers(broadcast, cfg.webrtc)
        broadcast.start(restarted=metrics.task_restarts.labels("broadcast").inc)
        loop = asyncio.get_running_loop()
        watch.start()
        background[:] = [
            loop.create_task(_bring_up(app, models), name="loading"),
            loop.create_task(_watch_loop_lag(metrics, watch), name="loop-lag"),
            loop.create_task(poller.run(), name="timesync"),
            loop.create_task(heap.hand_back_every(), name="hand-back"),
            loop.create_task(memory.run(), name="memory"),
            loop.create_task(autopilot.run(), name="autopilot"),
            loop.create_task(night.run(), name="night"),
            loop.create_task(history.run(), name="history"),
        ]
        if cfg.alerts.webhook_url:
            webhook = Webhook(cfg.alerts.webhook_url)
            metrics.anomalies.listeners.append(webhook.alert)
            background.append(loop.create_task(webhook.run(), name="webhook"))

    async def on_cleanup(app: web.Application) -> None:
        await cancel_and_wait(*background)
        watch.stop()
        live = app[LIVE]
        if live.stage is not None:
            await live.stage.stop()
        if live.feedback is not None:
            await live.feedback.stop()
        await app[PEERS].close_all()
        await app[BROADCAST].stop()
        await app[SIGNALS].sio.shutdown()
        app[LOGBOOK].close()
        heap.unsettle()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


async def _bring_up(app: web.Application, models: Models | None) -> None:
    cfg: Config = app[CONFIG]
    if models is None:
        loop = asyncio.get_running_loop()

        def progress(msg: str) -> None:
            log.info("%s", msg)
            loop.call_soon_threadsafe(setattr, app[LIVE], "step", msg)

        try:
            models = await loop.run_in_executor(None, load_models, cfg, progress)
        except Exception as exc:
            log.exception("model loading failed")
            # the reason is in the log: /healthz is public, and the text describes the machine
            app[LIVE].step = f"failed ({type(exc).__name__}): see the server's log"
            return
    app[LIVE].models = models  # a restarted server in the same process can reuse them
    llm, tts = models.llm, models.tts
    if cfg.drills:  # the faults a host may inject strike in the models' own calls
        llm = drills.DrilledLLM(llm, app[drills.DRILLS])
        tts = drills.DrilledTTS(tts, app[drills.DRILLS])
    feedback = None
    if models.asr is not None and cfg.feedback.enabled:
        fc = cfg.feedback
        feedback = SpeechFeedback(
            models.asr,
            app[METRICS],
            fc.queue_size,
            models.asr_thread,
            flag_wer=fc.flag_wer,
            correct_visemes=fc.correct_visemes,
        )
    app[LIVE].feedback = feedback
    stage = assemble(
        cfg,
        app[MEDIA_CLOCK],
        app[TIMELINE],
        app[BROADCAST],
        app[METRICS],
        app[SIGNALS].emit,
        llm,
        tts,
        feedback,
        app[TIME],
        app[LOGBOOK],
        speech_cache(cfg, app[METRICS]),
        models.light,
    )
    stage.start()
    if feedback is not None:
        feedback.start()
    app[LIVE].stage = stage
    heap.settle(app[METRICS].gc_pause)  # what lives all night exists now: out of gc's walks
    log.info("the show is live")


def speech_cache(cfg: Config, metrics: Metrics) -> SpeechCache:
    """The cache of lines said again: Redis when configured, else SQLite on disk."""
    cc = cfg.cache
    store: Store
    if cc.redis_url:
        store = RedisStore(cc.redis_url)
    else:
        store = SQLiteStore(cc.path or state_path("speechcache.sqlite"), cc.max_entries)
    cache = Cache(store, cc.ttl_s, cc.stale_s, cc.jitter)
    cache.listeners.append(lambda outcome: metrics.speech_cache.labels(outcome).inc())
    return SpeechCache(cache, cfg.models.tts_voice or "joe-medium")  # the default voice


async def _watch_loop_lag(metrics: Metrics, watch: StallWatch, period: float = 0.1) -> None:
    """Measure how late the event loop wakes up: the cost of anything that blocks it. Each
    wake-up is also the stall watch's heartbeat."""
    while True:
        t = time.monotonic()
        await asyncio.sleep(period)
        watch.beat()
        lag = max(0.0, time.monotonic() - t - period)
        metrics.loop_lag.observe(lag)
        metrics.anomalies.observe("loop_lag", lag)


# The browser's npm packages, served to the import map in the pages; only these folders.
VENDOR = {"three": "three", "socket.io-client": "socket.io-client/dist", "uplot": "uplot/dist"}


def _add_vendor_routes(app: web.Application, node_modules: Path) -> None:
    for name, folder in VENDOR.items():
        path = node_modules / folder
        if path.is_dir():
            app.router.add_static(f"/vendor/{name}/", path, follow_symlinks=False)
        else:
            log.warning("%s is missing: run `make setup` (npm ci in web/)", path)


def _page(template: str) -> Any:
    async def handler(request: web.Request) -> web.Response:
        cfg = request.app[CONFIG]
        stage = cfg.stage
        lips = {"viseme_lead_ms": stage.viseme_lead_ms, "viseme_hold_ms": stage.viseme_hold_ms}
        # `facts`: rendered with `tojson` into the page's JSON script element (see facts.py)
        context = {"roles": cfg.roles, "facts": page_facts(cfg), **lips}
        return aiohttp_jinja2.render_template(template, request, context)

    return handler
