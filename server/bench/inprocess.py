"""A real Allnighter server in a background thread (its own event loop), and the host calls a
bench makes to it. The tests drive the same server; their own helpers are in tests/harness.py."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
from aiohttp import web

from server.app import build_app
from server.config import Config
from server.loading import Models
from server.sqlitefile import IN_MEMORY

from ..keys import LIVE, SIGNALS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """An in-process server on 127.0.0.1 with its own loop thread."""

    def __init__(
        self,
        cfg: Config,
        models: Models | None = None,
        port: int | None = None,
        night_triggers: bool = False,
    ) -> None:
        self.cfg = cfg
        # a test's or a bench's show is the same at any hour and under any load: only a pin
        # moves its fallback level, unless asked for the triggers
        self.cfg.night.triggers = night_triggers
        self.cfg.port = port or free_port()
        # a test's or a bench's server takes up nothing another one left, unless told where
        self.cfg.logbook.path = self.cfg.logbook.path or IN_MEMORY
        self.cfg.cache.path = self.cfg.cache.path or IN_MEMORY
        self.url = f"http://127.0.0.1:{self.cfg.port}"
        self.models = models
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._app: web.Application | None = None

    @property
    def app(self) -> web.Application:
        if self._app is None:
            raise RuntimeError("the server has not started")
        return self._app

    def start(self, ready_timeout: float = 300.0) -> LiveServer:
        self._thread.start()
        self.call(self._start())
        deadline = time.monotonic() + ready_timeout
        while self.app[LIVE].stage is None:
            if "failed" in self.app[LIVE].step:
                raise RuntimeError(self.app[LIVE].step)
            if time.monotonic() > deadline:
                raise TimeoutError("server did not become ready")
            time.sleep(0.1)
        return self

    async def _start(self) -> None:
        self._app = build_app(self.cfg, self.models)
        self.runner = web.AppRunner(self._app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.cfg.port).start()

    async def _cancel_rest(self) -> None:
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in rest:
            t.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    @contextmanager
    def collecting_reports(self) -> Iterator[list[tuple[float, str, dict]]]:
        """Every valid `client_stats` the server gets while inside: (time.monotonic() it came,
        the viewer's sid, the report), the pages' own figures as the server sees them."""
        reports: list[tuple[float, str, dict]] = []
        listeners = self.app[SIGNALS].report_listeners
        listen = lambda sid, data: reports.append((time.monotonic(), sid, data))  # noqa: E731
        listeners.append(listen)
        try:
            yield reports
        finally:
            listeners.remove(listen)

    def call(self, coro: Any, timeout: float = 60.0) -> Any:
        """Run a coroutine on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.call(self.runner.cleanup())
        self.call(self._cancel_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.cfg.host_token}"}


# ---- talking to a live server as a host would ----


async def request(
    srv: Any,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = "good",
    raw: Any = None,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    """One HTTP call: as the host (token "good": the server's own), with another token, or
    with none (None); a JSON body, or `raw` bytes sent as `content_type`. Returns the status
    and the JSON answer."""
    headers = srv.headers if token == "good" else {"Authorization": f"Bearer {token}"}
    if token is None:
        headers = {}
    if raw is not None:
        headers = {**headers, "Content-Type": content_type}
    kw = {"data": raw} if raw is not None else {"json": body}
    async with aiohttp.ClientSession() as http:
        r = await http.request(method, srv.url + path, headers=headers, **kw)
        return r.status, await r.json()


async def say(srv: Any, text: str, **extra: Any) -> tuple[int, dict]:
    return await request(srv, "POST", "/api/v1/say", {"text": text, **extra})


async def utterance(srv: Any, utt_id: str) -> dict | None:
    snap = (await request(srv, "GET", "/api/v1/utterances"))[1]
    every = snap["recent"] + snap["queue"] + ([snap["current"]] if snap["current"] else [])
    return next((u for u in every if u["id"] == utt_id), None)


async def until_final(srv: Any, utt_id: str, timeout: float = 60.0, poll: float = 0.1) -> dict:
    """Wait until an utterance is done, interrupted or failed; returns its record."""
    for _ in range(int(timeout / poll)):
        u = await utterance(srv, utt_id)
        if u and u["state"] in ("done", "interrupted", "failed"):
            return u
        await asyncio.sleep(poll)
    raise AssertionError(f"utterance {utt_id} did not finish")
