"""A show for the benches to measure: `allnighter serve` as its own process, speaking lines.

`bench viewers` and `bench abuse` start it with settings of their own; it is healthy and
already talking when they get it, and stopped on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import aiohttp

from .cores import placed
from .inprocess import free_port

LINES = (
    "Good evening, night owls, and welcome back to the show that never sleeps.",
    "Tonight we talk about the stars, the planets and the long quiet hours before dawn.",
    "The lighthouse keeper climbed his tower every evening, rain or shine, for forty years.",
)


async def keep_talking(
    url: str,
    token: str,
    stop: threading.Event,
    pause_s: float | None = None,
    lines: Sequence[str] = LINES,
) -> None:
    """Keep two lines queued so the broadcast carries speech, not silence; with `pause_s`,
    one line at a time instead, each `pause_s` after the last has played (a line start after
    a pause is what a lip-sync probe times)."""
    headers = {"Authorization": f"Bearer {token}"}
    i = 0
    async with aiohttp.ClientSession() as http:
        while not stop.is_set():
            if pause_s is None:
                r = await http.get(f"{url}/healthz")
                ready = (await r.json()).get("queue", 0) < 2
            else:
                r = await http.get(f"{url}/api/v1/utterances", headers=headers)
                snap = await r.json()
                ready = idle(snap)
                if ready:
                    await asyncio.sleep(pause_s)
            if ready:
                text = lines[i % len(lines)]
                await http.post(f"{url}/api/v1/say", json={"text": text}, headers=headers)
                i += 1
            await asyncio.sleep(1.0 if pause_s is None else 0.1)


def playing(snapshot: dict) -> bool:
    """Some line is spoken and still to be heard (its state is not final yet)."""
    return any(u["state"] not in ("done", "interrupted", "failed") for u in snapshot["recent"])


def idle(snapshot: dict) -> bool:
    """Nothing waits, is being made or still plays (the host's list, /api/v1/utterances)."""
    return not snapshot["queue"] and snapshot["current"] is None and not playing(snapshot)


async def wait_healthy(url: str, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            try:
                r = await http.get(f"{url}/healthz")
                if r.status == 200:
                    return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.5)
    raise TimeoutError("server did not become healthy")


@contextlib.contextmanager
def talking_server(
    token: str,
    settings: str,
    nice: int = 0,
    pause_s: float | None = None,
    cpus: set[int] | None = None,
    lines: Sequence[str] = LINES,
) -> Iterator[tuple[subprocess.Popen, str]]:
    """`allnighter serve` as its own process with the TOML `settings` (`nice` values below
    this one, on the cores `cpus` where given), healthy and speaking `lines` in turn the whole
    time (`pause_s` between them, or none; no lines, no talking): (the process, its URL).
    Stopped on the way out."""
    port = free_port()
    env = {**os.environ, "ALLNIGHTER_HOST_TOKEN": token}
    config = Path(tempfile.mkstemp(suffix=".toml")[1])
    # a bench's server takes up nothing a run before it left (server/logbook.py), nor its
    # speech (server/show/speechcache.py); and it is the same show at any hour (the night's
    # triggers off)
    config.write_text(
        settings
        + '\n[logbook]\npath = ":memory:"\n[cache]\npath = ":memory:"\n'
        + "[night]\ntriggers = false\n"
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--port", str(port), "--config", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: placed(nice, cpus),
    )
    url = f"http://127.0.0.1:{port}"
    stop = threading.Event()
    try:
        asyncio.run(wait_healthy(url))
        if lines:  # none: the show speaks for itself (its autopilot), or not at all
            talker = threading.Thread(
                target=lambda: asyncio.run(keep_talking(url, token, stop, pause_s, lines)),
                daemon=True,
            )
            talker.start()
        yield server, url
    finally:
        stop.set()
        server.terminate()
        server.wait(20)
        config.unlink()
