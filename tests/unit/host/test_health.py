"""/healthz says loading (503) until the models are up, then ok (200); roles are listed."""

from __future__ import annotations

import asyncio
import time

import aiohttp

import server.app as app_module
from server.bench.inprocess import LiveServer, request
from server.config import load_config
from server.loading import Models
from tests.fakes import ToneTTS, WordsLLM


def test_healthz_is_503_while_loading_then_200(monkeypatch):
    def slow_load(cfg, progress=None):
        time.sleep(1.0)
        return Models(WordsLLM(), ToneTTS(), None)

    monkeypatch.setattr(app_module, "load_models", slow_load)
    srv = LiveServer(load_config(None, env={"ALLNIGHTER_HOST_TOKEN": "health-test-token"}))
    srv._thread.start()
    srv.call(srv._start())

    async def poll():
        seen = []
        async with aiohttp.ClientSession() as http:
            for _ in range(60):
                r = await http.get(srv.url + "/healthz")
                seen.append((r.status, (await r.json())["status"]))
                if r.status == 200:
                    break
                await asyncio.sleep(0.05)
            r = await http.post(srv.url + "/api/v1/say", json={"text": "hi"}, headers=srv.headers)
            return seen, r.status

    try:
        seen, say_status = asyncio.run(poll())
    finally:
        srv.stop()
    assert seen[0] == (503, "loading")
    assert seen[-1] == (200, "ok")
    assert say_status == 202


def test_roles_lists_the_characters(tone_server):
    status, roles = asyncio.run(request(tone_server, "GET", "/api/v1/roles", token=None))
    assert status == 200
    assert roles[0]["name"] == "nova" and roles[0]["voice"] == "joe" and roles[0]["persona"]
    # the embedded cast: two characters, told apart by their voices' pitch
    assert [r["name"] for r in roles] == ["nova", "orion"]
    assert roles[1]["persona"] != roles[0]["persona"] and roles[1]["pitch"] != roles[0]["pitch"]


def test_pages_are_served_and_escape_role_names(tmp_path):
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": "health-test-token"})
    cfg.roles[0].name = "<script>x</script>"
    cfg.stage.viseme_lead_ms = 12.5
    cfg.stage.viseme_hold_ms = 90
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(), None)).start()

    async def get(path):
        async with aiohttp.ClientSession() as http:
            r = await http.get(srv.url + path)
            return r.status, await r.text()

    try:
        status, page = asyncio.run(get("/"))
        host_status, _ = asyncio.run(get("/host"))
        escape_status, _ = asyncio.run(get("/static/../../pyproject.toml"))
    finally:
        srv.stop()
    assert status == 200 and host_status == 200
    assert "<script>x" not in page and "&lt;script&gt;" in page
    assert 'data-viseme-lead-ms="12.5"' in page  # the stage page draws the lips that far ahead
    assert 'data-viseme-hold-ms="90"' in page
    assert escape_status in (403, 404)


def test_time_endpoint_says_the_show_runs_on_the_local_oscillator_by_default(tone_server):
    async def get():
        async with aiohttp.ClientSession() as http:
            r = await http.get(tone_server.url + "/api/v1/time")
            return r.status, await r.json()

    before = time.time() * 1000
    status, body = asyncio.run(get())
    assert status == 200
    assert body["running_on"] == "local oscillator" and body["synced"] is False
    assert body["sources"] == [] and body["error_bound_s"] is None
    assert abs(body["now_ms"] - before) < 5_000


def test_the_last_hour_is_kept_as_columns_and_served_to_the_host():
    from server.host.history import SERIES, History

    figures = iter(
        [
            {"ttfa_p99_ms": 410.123, "viewers": 3, "fallback_level": 0, "alerts": 0},
            {"ttfa_p99_ms": None, "viewers": 4, "fallback_level": 1, "alerts": 2},
        ]
    )
    clock = iter([1_000_000.0, 1_010_000.0])
    history = History(lambda: next(figures), wall_ms=lambda: next(clock), keep_s=3600)
    history.sample()
    history.sample()
    columns = history.columns()
    assert columns["series"] == list(SERIES) and columns["t"] == [1000.0, 1010.0]
    assert columns["ttfa_p99_ms"] == [410.12, None] and columns["alerts"] == [0, 2]
    assert columns["fps"] == [None, None]  # unknown stays unknown
    assert history.samples.maxlen == 360  # an hour of ten-second samples


def test_history_needs_the_host_token(tone_server):
    srv = tone_server
    status, _ = srv.call(request(srv, "GET", "/api/v1/history", token=None))
    assert status == 401
    status, columns = srv.call(request(srv, "GET", "/api/v1/history"))
    assert status == 200 and len(columns["t"]) >= 1  # sampled at start
    assert columns["viewers"][-1] == 0 and columns["fallback_level"][-1] == 0
