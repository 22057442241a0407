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

from . import heap
from .config import Config
from .headers import security_headers
from .host import api, hostdesk
from .media.broadcast import Broadcast
from .media.mediaclock import MediaClock
from .media.timeline import SpeechTimeline
from .metrics import Metrics
from .show.assembly import assemble
from .show.feedback import SpeechFeedback, checker_thread
from .stalls import StallWatch
from .tasks import cancel_and_wait
from .transport import rtp
from .transport.peers import ViewerPeers
from .transport.signals import Signals

log = logging.getLogger(__name__)
WEB_DIR = Path(__file__).resolve().parent.parent / "web"


class Models:
    """The loaded model adapters (LLM, TTS, ASR)."""

    def __init__(self, llm: Any, tts: Any, asr: Any | None, asr_thread: Any = None) -> None:
        self.llm, self.tts, self.asr = llm, tts, asr
        self.asr_thread = asr_thread  # the low-priority thread the ASR was built on


def load_models(cfg: Config, progress: Any = None) -> Models:
    """Blocking: load (and on first use convert) every model, then warm each up once."""
    from models.asr import Transcriber
    from models.llm import ChatLLM
    from models.tts import PiperSpeaker

    say = progress or (lambda msg: log.info("%s", msg))
    mc = cfg.models
    cache = Path(mc.cache_dir) if mc.cache_dir else None
    t = time.perf_counter()
    say("loading TTS (Piper)")
    tts = PiperSpeaker(mc.tts_voice, device=mc.device)
    tts.warm_up()
    say(f"TTS ready in {time.perf_counter() - t:.1f} s; loading LLM")
    t = time.perf_counter()
    llm = ChatLLM(
        mc.llm_gguf,
        cache_dir=cache,
        device=mc.device,
        threads=mc.llm_threads,
        dtype=mc.llm_dtype,
        progress=say,
    )
    llm.warm_up()
    say(f"LLM ready in {time.perf_counter() - t:.1f} s")
    asr, asr_thread = None, None
    if cfg.load_asr:
        t = time.perf_counter()
        say("loading ASR (faster-whisper base)")
        # built on its own low-priority thread, so CTranslate2's workers are low-priority too
        asr_thread = checker_thread()
        asr = asr_thread.run_sync(Transcriber, mc.asr_model, cache, mc.device)
        asr_thread.run_sync(asr.warm_up)
        say(f"ASR ready in {time.perf_counter() - t:.1f} s")
    return Models(llm, tts, asr, asr_thread)


def build_app(
    cfg: Config, models: Models | None = None, web_dir: Path = WEB_DIR
) -> web.Application:
    """The whole server. Models load in the background unless given; /healthz says when ready."""
    # Tokens, phrases and frames hop between the model threads and the event loop; with the
    # default 5 ms GIL switch interval each hop can wait that long behind a busy thread.
    sys.setswitchinterval(0.001)
    app = web.Application(client_max_size=256 * 1024)
    app["config"] = cfg
    app["metrics"] = metrics = Metrics()
    app["loading"] = {"step": "starting"}
    app["live"] = {}  # filled once models are up: the models, the stage and the ASR feedback
    rtp.use_ice_addresses(cfg.webrtc.ice_addresses)

    from timesync.fused import FusedClock
    from timesync.poller import SourcePoller, sources_from

    tc = cfg.time
    app["time"] = clock = FusedClock(max_slew_ppm=tc.max_slew_ppm)
    sources = sources_from(
        tc.ntp_servers, tc.ptp_sockets, tc.phc_devices, tc.rtc_devices, tc.ntp_version
    )
    metrics.watch_clock(clock)  # the time status as gauges, read at each scrape
    poller = SourcePoller(clock, sources, tc.min_poll_s, tc.max_poll_s, tc.ptp_poll_s)
    signals = Signals(cfg.chat, metrics, clock, cfg.allowed_origins)
    signals.sio.attach(app)
    app["signals"] = signals

    app.on_response_prepare.append(security_headers(cfg.allowed_origins))
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(str(web_dir)), autoescape=True)
    api.add_routes(app)
    hostdesk.setup(app)  # the host panel's own endpoints, built on the API's helpers
    app.router.add_get("/", _page("index.html"))
    app.router.add_get("/host", _page("host.html"))
    static = web_dir / "static"
    if static.is_dir():
        app.router.add_static("/static/", static, follow_symlinks=False)
    _add_vendor_routes(app, web_dir / "node_modules")

    async def on_startup(app: web.Application) -> None:
        media = MediaClock(rate_ppm=cfg.stage.clock_skew_ppm)
        timeline = SpeechTimeline()
        broadcast = Broadcast(media, timeline)
        app["media_clock"], app["timeline"], app["broadcast"] = media, timeline, broadcast
        app["peers"] = ViewerPeers(broadcast, cfg.webrtc)
        broadcast.start(restarted=metrics.task_restarts.labels("broadcast").inc)
        loop = asyncio.get_running_loop()
        app["time_task"] = loop.create_task(poller.run(), name="timesync")
        app["stall_watch"] = watch = StallWatch()
        watch.start()
        app["lag_task"] = loop.create_task(_watch_loop_lag(metrics, watch))
        app["heap_task"] = loop.create_task(heap.hand_back_every())
        app["load_task"] = loop.create_task(_bring_up(app, models))

    async def on_cleanup(app: web.Application) -> None:
        await cancel_and_wait(app["load_task"], app["lag_task"], app["time_task"], app["heap_task"])
        app["stall_watch"].stop()
        if app["live"].get("stage") is not None:
            await app["live"]["stage"].stop()
        if app["live"].get("feedback") is not None:
            await app["live"]["feedback"].stop()
        await app["peers"].close_all()
        await app["broadcast"].stop()
        await app["signals"].sio.shutdown()
        heap.unsettle()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


async def _bring_up(app: web.Application, models: Models | None) -> None:
    cfg: Config = app["config"]
    if models is None:
        loop = asyncio.get_running_loop()

        def progress(msg: str) -> None:
            log.info("%s", msg)
            loop.call_soon_threadsafe(app["loading"].__setitem__, "step", msg)

        try:
            models = await loop.run_in_executor(None, load_models, cfg, progress)
        except Exception as exc:
            log.exception("model loading failed")
            # the reason is in the log: /healthz is public, and the text describes the machine
            app["loading"]["step"] = f"failed ({type(exc).__name__}): see the server's log"
            return
    app["live"]["models"] = models  # a restarted server in the same process can reuse them
    feedback = None
    if models.asr is not None and cfg.feedback.enabled:
        fc = cfg.feedback
        feedback = SpeechFeedback(
            models.asr,
            app["metrics"],
            fc.queue_size,
            models.asr_thread,
            flag_wer=fc.flag_wer,
            correct_visemes=fc.correct_visemes,
        )
    app["live"]["feedback"] = feedback
    stage = assemble(
        cfg,
        app["media_clock"],
        app["timeline"],
        app["broadcast"],
        app["metrics"],
        app["signals"].emit,
        models.llm,
        models.tts,
        feedback,
        app["time"],
    )
    stage.start()
    if feedback is not None:
        feedback.start()
    app["signals"].upcoming = stage.upcoming
    app["signals"].on_utterance_onset = stage.viewer_onset
    app["live"]["stage"] = stage
    heap.settle(app["metrics"].gc_pause)  # what lives all night exists now: out of gc's walks
    log.info("the show is live")


async def _watch_loop_lag(metrics: Metrics, watch: StallWatch, period: float = 0.1) -> None:
    """Measure how late the event loop wakes up: the cost of anything that blocks it. Each
    wake-up is also the stall watch's heartbeat."""
    while True:
        t = time.monotonic()
        await asyncio.sleep(period)
        watch.beat()
        metrics.loop_lag.observe(max(0.0, time.monotonic() - t - period))


# The browser's npm packages, served to the import map in the pages; only these folders.
VENDOR = {"three": "three", "socket.io-client": "socket.io-client/dist"}


def _add_vendor_routes(app: web.Application, node_modules: Path) -> None:
    for name, folder in VENDOR.items():
        path = node_modules / folder
        if path.is_dir():
            app.router.add_static(f"/vendor/{name}/", path, follow_symlinks=False)
        else:
            log.warning("%s is missing: run `make setup` (npm ci in web/)", path)


def _page(template: str) -> Any:
    async def handler(request: web.Request) -> web.Response:
        cfg = request.app["config"]
        stage = cfg.stage
        lips = {"viseme_lead_ms": stage.viseme_lead_ms, "viseme_hold_ms": stage.viseme_hold_ms}
        return aiohttp_jinja2.render_template(template, request, {"roles": cfg.roles, **lips})

    return handler
