"""`allnighter bench viewers`: N WebRTC viewers in another process, receiving the broadcast.

The server runs as its own process (`allnighter serve`), speaking lines the whole time. For each
N, a client process connects N aiortc viewers and records every decoded frame's broadcast
sample and arrival time for the measuring window. Lost frames are broadcast positions a viewer
never heard; late frames arrived more than LATE_MS behind that viewer's median delay. The
server's CPU comes from /proc over the same window; the baseline is the same server with no
viewers, measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from .harness import free_port
from .table import render

LATE_MS = 100.0
LOSS_GOAL = 0.5  # percent
LINES = [
    "Good evening, night owls, and welcome back to the show that never sleeps.",
    "Tonight we talk about the stars, the planets and the long quiet hours before dawn.",
    "The lighthouse keeper climbed his tower every evening, rain or shine, for forty years.",
]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _keep_talking(url: str, token: str, stop: asyncio.Event) -> None:
    """Keep two lines queued so the broadcast carries speech, not silence."""
    headers = {"Authorization": f"Bearer {token}"}
    i = 0
    async with aiohttp.ClientSession() as http:
        while not stop.is_set():
            r = await http.get(f"{url}/healthz")
            if (await r.json()).get("queue", 0) < 2:
                await http.post(f"{url}/api/v1/say", json={"text": LINES[i % 3]}, headers=headers)
                i += 1
            try:
                await asyncio.wait_for(stop.wait(), 1.0)
            except TimeoutError:
                pass


def _window(pid: int, seconds: float, client: subprocess.Popen | None) -> float:
    """Server CPU (cores) over `seconds`, starting once the client says it is connected."""
    if client is not None:
        line = client.stdout.readline()
        if "connected" not in line:
            raise RuntimeError(f"viewer client failed: {line}{client.stdout.read()}")
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def run(counts: list[int], seconds: float) -> str:
    port, token = free_port(), "bench-viewers"
    env = {**os.environ, "ALLNIGHTER_HOST_TOKEN": token}
    server = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        asyncio.run(_wait_healthy(url))
        stop = asyncio.Event()
        loop = asyncio.new_event_loop()
        import threading

        talker = threading.Thread(
            target=loop.run_until_complete, args=(_keep_talking(url, token, stop),), daemon=True
        )
        talker.start()
        base = _window(server.pid, min(seconds, 20.0), None)
        rows.append([0, "-", "-", "-", base * 100, "-", "-"])
        print(f"baseline: server {base * 100:.1f}% of a core", flush=True)
        for n in counts:
            out = Path(tempfile.mkstemp(suffix=".json")[1])
            client = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "server.bench.viewers",
                    "--client",
                    url,
                    str(n),
                    str(seconds),
                    str(out),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            cores = _window(server.pid, seconds, client)
            client.wait(timeout=seconds + 120)
            stats = json.loads(out.read_text())
            out.unlink()
            lost = stats["lost_percent"]
            per_viewer = (cores - base) / n * 100
            verdict = "holds" if lost < LOSS_GOAL and stats["viewers_heard"] == n else "fails"
            rows.append(
                [
                    n,
                    stats["viewers_heard"],
                    lost,
                    stats["late_percent"],
                    cores * 100,
                    per_viewer,
                    verdict,
                ]
            )
            print(f"{n} viewers: {rows[-1]}", flush=True)
        loop.call_soon_threadsafe(stop.set)
        talker.join(5)
    finally:
        server.terminate()
        server.wait(20)
    held = [r[0] for r in rows[1:] if r[-1] == "holds"]
    table = render(
        f"bench viewers: {seconds:.0f} s per count, viewers in a separate process",
        [
            "viewers",
            "heard",
            "lost %",
            f"late >{LATE_MS:.0f} ms %",
            "server CPU % of a core",
            "CPU % per viewer",
            f"< {LOSS_GOAL} % lost",
        ],
        rows,
    )
    return table + f"\n\nlargest N that holds: {max(held) if held else 'none'}"


async def _wait_healthy(url: str, timeout: float = 900) -> None:
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


# ---- the client process ----------------------------------------------------------------------
async def _client(url: str, n: int, seconds: float) -> dict:
    from .viewer import PythonViewer

    viewers = []
    for _ in range(n):
        v = PythonViewer(url, listen_socket=False)
        await v.connect()
        viewers.append(v)
    await asyncio.sleep(1.0)  # let every jitter buffer settle before counting
    for v in viewers:
        v.frames.clear()
    print("connected", flush=True)
    await asyncio.sleep(seconds)
    heard, expected, lost, late = 0, 0, 0, 0
    for v in viewers:
        frames = list(v.frames)
        if not frames:
            continue
        heard += 1
        samples = {f.sample for f in frames}
        span = (max(samples) - min(samples)) // 960 + 1
        expected += span
        lost += span - len(samples)
        delays = [f.arrived - f.sample / 48_000 for f in frames]
        typical = statistics.median(delays)
        late += sum(1 for d in delays if (d - typical) * 1000 > LATE_MS)
    await asyncio.gather(*(v.close() for v in viewers), return_exceptions=True)
    return {
        "viewers_heard": heard,
        "lost_percent": 100 * lost / max(1, expected),
        "late_percent": 100 * late / max(1, expected),
    }


def main(args: argparse.Namespace) -> int:
    counts = [int(c) for c in str(args.viewers).split(",") if c]
    print(run(counts, args.seconds))
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--client"]:
    _, _, url, n, seconds, out = sys.argv
    Path(out).write_text(json.dumps(asyncio.run(_client(url, int(n), float(seconds)))))
