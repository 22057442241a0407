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
from typing import TYPE_CHECKING

from ..media.mediaclock import FRAME_SAMPLES, SAMPLE_RATE
from . import scrape
from .table import render
from .talking import talking_server

if TYPE_CHECKING:  # the viewer itself is imported in the client processes only
    from .viewer import Tally

LATE_MS = 100.0
LOSS_GOAL = 0.5  # percent


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """CPU time of a process, or of one of its threads (its main thread runs the event loop)."""
    path = f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


PER_CLIENT_PROCESS = 25  # viewers per client process, so one Python process is not the limit


def server_frames(url: str) -> tuple[float, float]:
    """(frames sent, frames sent two or more slots late) from the server's own metrics."""
    values = scrape.metrics(url)
    return values["allnighter_frames_sent"], values["allnighter_frames_late"]


def _measure(pid: int, url: str, seconds: float) -> tuple[float, float, float]:
    """Over `seconds`: server CPU (cores), its event-loop thread's CPU (cores: where the
    per-viewer work happens; speech synthesis runs on other threads and comes in bursts),
    and the share of frames the server sent late (%)."""
    sent0, late0 = server_frames(url)
    c0, l0, t0 = cpu_seconds(pid), cpu_seconds(pid, pid), time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    cores = (cpu_seconds(pid) - c0) / elapsed
    loop = (cpu_seconds(pid, pid) - l0) / elapsed
    sent1, late1 = server_frames(url)
    return cores, loop, 100 * (late1 - late0) / max(1.0, sent1 - sent0)


def start_clients(
    url: str, n: int, seconds: float, nice: int = 0
) -> list[tuple[subprocess.Popen, Path]]:
    """`n` viewers in processes of their own (`nice` values below this one), each counting
    what it hears for `seconds`; returned once all of them hear the broadcast."""
    clients = []
    for k in range(0, n, PER_CLIENT_PROCESS):
        out = Path(tempfile.mkstemp(suffix=".json")[1])
        count = min(PER_CLIENT_PROCESS, n - k)
        cmd = [
            sys.executable,
            "-m",
            "server.bench.viewers",
            "--client",
            url,
            str(count),
            str(seconds),
            str(out),
        ]
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, text=True, preexec_fn=lambda: os.nice(nice)
        )
        clients.append((proc, out))
    for proc, _ in clients:  # every client says when all its viewers hear the broadcast
        assert proc.stdout is not None  # opened as a pipe
        line = proc.stdout.readline()
        if "connected" not in line:
            raise RuntimeError(f"viewer client failed: {line}{proc.stdout.read()}")
    return clients


def collect(clients: list[tuple[subprocess.Popen, Path]], seconds: float) -> dict:
    total = {"viewers_heard": 0, "expected": 0, "lost": 0, "late": 0}
    for proc, out in clients:
        proc.wait(timeout=seconds + 120)
        stats = json.loads(out.read_text())
        out.unlink()
        for key in total:
            total[key] += stats[key]
    return total


def run(counts: list[int], seconds: float) -> str:
    # the transport is what is measured: no ASR checker, whose work varies line by line; and
    # every viewer comes from this one address, which a show open to the public limits
    settings = (
        "load_asr = false\n[webrtc]\n"
        f"max_viewers_per_address = {max(counts) + 1}\n"
        f"offers_per_minute = {10 * max(counts) + 10}\noffer_burst = {max(counts) + 1}\n"
    )
    rows: list[list] = []
    with talking_server("bench-viewers-token", settings) as (server, url):
        base, base_loop, base_late = _measure(server.pid, url, seconds)
        rows.append([0, "-", "-", "-", base_late, base * 100, base_loop * 100, "-", "-"])
        print(f"baseline: server {base * 100:.1f}% of a core", flush=True)
        for n in counts:
            clients = start_clients(url, n, seconds)
            cores, loop, late_sends = _measure(server.pid, url, seconds)
            t = collect(clients, seconds)
            lost = 100 * t["lost"] / max(1, t["expected"])
            late = 100 * t["late"] / max(1, t["expected"])
            verdict = "holds" if lost < LOSS_GOAL and t["viewers_heard"] == n else "fails"
            rows.append(
                [
                    n,
                    t["viewers_heard"],
                    lost,
                    late,
                    late_sends,
                    cores * 100,
                    loop * 100,
                    (loop - base_loop) / n * 100,
                    verdict,
                ]
            )
            print(f"{n} viewers: {rows[-1]}", flush=True)
    held = [r[0] for r in rows[1:] if r[-1] == "holds"]
    table = render(
        f"bench viewers: {seconds:.0f} s per count, viewers in separate processes "
        f"(≤{PER_CLIENT_PROCESS} each), the server speaking throughout, ASR checker off",
        [
            "viewers",
            "heard",
            "lost %",
            f"late >{LATE_MS:.0f} ms at viewer %",
            "server sent late %",
            "server CPU % of a core",
            "its loop thread %",
            "loop CPU % per viewer",
            f"< {LOSS_GOAL} % lost",
        ],
        rows,
    )
    return table + f"\n\nlargest N that holds: {max(held) if held else 'none'}"


# ---- the client process ----------------------------------------------------------------------
async def _client(url: str, n: int, seconds: float) -> dict:
    from .viewer import PythonViewer, Tally

    tallies = [Tally() for _ in range(n)]
    viewers = []
    for tally in tallies:
        v = PythonViewer(url, listen_socket=False, tally=tally)
        await v.connect()
        viewers.append(v)
    await asyncio.sleep(1.0)  # let every jitter buffer settle before counting
    for tally in tallies:
        tally.clear()
    print("connected", flush=True)
    await asyncio.sleep(seconds)
    heard, expected, lost, late = 0, 0, 0, 0
    for tally in tallies:
        if not tally.samples:
            continue
        heard += 1
        span, missing, behind = counted(tally)
        expected, lost, late = expected + span, lost + missing, late + behind
    await asyncio.gather(*(v.close() for v in viewers), return_exceptions=True)
    return {"viewers_heard": heard, "expected": expected, "lost": lost, "late": late}


def counted(tally: Tally) -> tuple[int, int, int]:
    """A viewer's frames expected (from the first heard to the last), lost, and late (more than
    LATE_MS behind its typical delay)."""
    samples = set(tally.samples)
    span = (max(samples) - min(samples)) // FRAME_SAMPLES + 1
    heard = zip(tally.samples, tally.arrived, strict=True)
    delays = [at - sample / SAMPLE_RATE for sample, at in heard]
    typical = statistics.median(delays)
    return span, span - len(samples), sum(1 for d in delays if (d - typical) * 1000 > LATE_MS)


def main(args: argparse.Namespace) -> int:
    counts = [int(c) for c in str(args.viewers).split(",") if c]
    print(run(counts, args.seconds))
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--client"]:
    _, _, url, n, seconds, out = sys.argv
    Path(out).write_text(json.dumps(asyncio.run(_client(url, int(n), float(seconds)))))
