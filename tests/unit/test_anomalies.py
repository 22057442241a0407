"""Anomalies seen before the crash: a latency over 1.8 × its rolling p99 and 200 ms raises an
alert (log, counter, host panel, webhook); memory over its line raises one, once per crossing."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from aiohttp import web

from server.anomalies import FLOOR_S, MIN_SAMPLES, WINDOW_S, Anomalies, RollingP99
from server.bench.inprocess import LiveServer, free_port, request
from server.config import load_config
from server.keys import METRICS
from server.loading import Models
from server.memorywatch import FRAGMENTATION_ALERT, MemoryWatch, fragmentation, free_blocks
from server.metrics import Metrics
from server.webhook import QUEUED, Webhook
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM
from tests.harness import page_text, wait_for


class SimTime:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def watch() -> tuple[Anomalies, SimTime]:
    sim = SimTime()
    return Anomalies(clock=sim, wall_ms=lambda: 1e12 + sim.t * 1000), sim


def feed(anomalies: Anomalies, sim: SimTime, series: str, values, every_s: float = 1.0) -> list:
    alerts = []
    for v in values:
        sim.t += every_s
        alerts.append(anomalies.observe(series, v))
    return alerts


def test_the_rolling_p99_is_the_window_s_own():
    p99 = RollingP99(window_s=10)
    for t in range(100):
        p99.add(float(t), at=t)
    assert len(p99) == 11 and p99.p99() == 98.0  # 89..99 remain: the readings of 10 s
    p99.expire(200)
    assert len(p99) == 0


def test_a_latency_far_over_its_own_p99_and_200_ms_is_an_alert_and_a_near_one_is_not():
    anomalies, sim = watch()
    rng = np.random.default_rng(1)
    baseline = 0.300 + rng.normal(0, 0.02, 200)  # text-to-first-audio around 300 ms
    assert not any(feed(anomalies, sim, "text_to_first_audio", baseline))
    p99 = float(np.sort(baseline)[int(0.99 * 199)])
    near, far = 1.7 * p99, 1.9 * p99
    assert feed(anomalies, sim, "text_to_first_audio", [near]) == [None]
    (alert,) = feed(anomalies, sim, "text_to_first_audio", [far])
    assert alert is not None and alert.series == "text_to_first_audio"
    assert alert.value == pytest.approx(far * 1000) and alert.unit == "ms"
    assert alert.baseline == pytest.approx(p99 * 1000, rel=0.05)
    assert list(anomalies.recent) == [alert]


def test_the_200_ms_floor_keeps_millisecond_jitter_quiet():
    anomalies, sim = watch()
    feed(anomalies, sim, "loop_lag", [0.002] * 100, every_s=0.1)
    # 25 × the p99, yet a 50 ms hiccup of the loop is no alarm; a 300 ms stall is
    assert feed(anomalies, sim, "loop_lag", [0.050], every_s=0.1) == [None]
    assert feed(anomalies, sim, "loop_lag", [0.300], every_s=0.1)[0] is not None
    assert FLOOR_S == 0.200


def test_no_baseline_no_alert_and_a_lasting_slowdown_becomes_the_new_normal():
    anomalies, sim = watch()
    assert not any(feed(anomalies, sim, "llm_first_token", [0.1] * (MIN_SAMPLES - 1) + [5.0]))
    anomalies, sim = watch()
    feed(anomalies, sim, "llm_first_token", [0.1] * 100)
    slow = feed(anomalies, sim, "llm_first_token", [0.5] * 600)  # ten minutes of it
    assert slow[0] is not None  # the step itself is news
    # once the old readings left the window, the slow ones are the baseline
    assert not any(slow[int(WINDOW_S) + 1 :])


def test_memory_alerts_once_per_crossing_of_its_line():
    metrics = Metrics()
    raised = []
    metrics.anomalies.listeners.append(raised.append)
    memory = MemoryWatch(metrics, metrics.anomalies, rss_alert_bytes=1000)
    for rss in (500, 1200, 1300, 950, 1100, 899, 1100):  # under 900 re-arms it
        memory.sample(rss=rss, gpu=None)
    assert [(a.series, a.value) for a in raised] == [("rss", 1200), ("rss", 1100)]
    assert raised[0].unit == "bytes" and raised[0].baseline == 1000


def test_gpu_fragmentation_from_the_allocator_snapshot():
    # torch.cuda.memory_snapshot()'s shape: segments of blocks, free ones "inactive"
    snapshot = [
        {"blocks": [{"size": 60, "state": "inactive"}, {"size": 100, "state": "active_allocated"}]},
        {"blocks": [{"size": 20, "state": "inactive"}, {"size": 20, "state": "inactive"}]},
    ]
    assert free_blocks(snapshot) == [60, 20, 20]
    frag, largest, total = fragmentation(free_blocks(snapshot))
    assert (largest, total) == (60, 100) and frag == pytest.approx(0.4)
    assert fragmentation([]) == (0.0, 0, 0)
    metrics = Metrics()
    memory = MemoryWatch(metrics, metrics.anomalies, rss_alert_bytes=10**12)
    gpu = {"allocated": 100.0, "reserved": 200.0, "fragmentation": frag}
    figures = memory.sample(rss=1, gpu={**gpu, "largest_free": 60.0, "free": 100.0})
    assert figures["gpu_fragmentation"] == pytest.approx(0.4)
    assert figures["gpu_fragmentation"] > FRAGMENTATION_ALERT
    (alert,) = metrics.anomalies.recent
    assert alert.series == "gpu_fragmentation" and alert.unit == "share"


def test_the_webhook_posts_each_alert_and_a_dead_one_costs_bounded_memory():
    received: list[dict] = []

    async def scenario() -> Webhook:
        async def hook(request: web.Request) -> web.Response:
            received.append(await request.json())
            return web.json_response({"ok": True})

        app = web.Application()
        app.router.add_post("/hook", hook)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        anomalies, sim = watch()
        webhook = Webhook(f"http://127.0.0.1:{port}/hook")
        anomalies.listeners.append(webhook.alert)
        task = asyncio.create_task(webhook.run())
        feed(anomalies, sim, "loop_lag", [0.001] * 50 + [0.5])
        await wait_for(lambda: received)
        # a dead endpoint: the alerts wait, at most QUEUED of them
        dead = Webhook(f"http://127.0.0.1:{free_port()}/hook")
        for _ in range(QUEUED + 10):
            dead.alert(anomalies.recent[0])
        task.cancel()
        await runner.cleanup()
        return dead

    dead = asyncio.run(scenario())
    assert received[0]["alert"]["series"] == "loop_lag"
    assert received[0]["alert"]["value"] == 500.0 and received[0]["show"] == "allnighter"
    assert dead.dropped == 10


def test_a_stalled_event_loop_reaches_the_host_panel_the_metrics_and_the_webhook():
    received: list[dict] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.json_response({"ok": True})

    hook_app = web.Application()
    hook_app.router.add_post("/hook", hook)
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    port = free_port()
    cfg.alerts.webhook_url = f"http://127.0.0.1:{port}/hook"
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(), None)).start()
    try:

        async def start_hook() -> web.AppRunner:
            runner = web.AppRunner(hook_app)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            return runner

        runner = srv.call(start_hook())
        anomalies = srv.app[METRICS].anomalies
        # the loop's lag, ten readings a second, makes its own baseline
        deadline = time.monotonic() + 10
        while len(anomalies._series["loop_lag"]) < MIN_SAMPLES + 5:
            assert time.monotonic() < deadline
            time.sleep(0.1)

        async def stall() -> None:
            time.sleep(1.0)  # something holds the event loop: the show's audio waits too

        srv.call(stall())
        srv.call(wait_for(lambda: received))
        show = srv.call(request(srv, "GET", "/api/v1/show"))[1]
        metrics = srv.call(page_text(srv, "/metrics"))
        srv.call(runner.cleanup())
    finally:
        srv.stop()
    (alert,) = [a for a in show["alerts"] if a["series"] == "loop_lag"]
    assert alert["unit"] == "ms" and alert["value"] >= 900
    assert show["memory"]["rss"] > 0
    assert 'allnighter_anomalies_total{series="loop_lag"} 1.0' in metrics
    assert received[0]["alert"]["series"] == "loop_lag"
