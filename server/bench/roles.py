"""`allnighter bench roles`: many dubbing requests at once, across eight roles of different
weights, answered by arrival (FIFO) and by the role scheduler, in one run on one machine.

The dubbing study claims −68 % mean and −63 % p95 latency against FIFO from role priority
and batching. Here each mode gets the same requests (seeded), all sent at once to a server
whose dubbing desk is set to that mode; the models are loaded once and shared. A table times
Piper on one batch of sentences against the same sentences one by one: what batching by voice
could save on this machine; the last, the LLM's first token with each role's persona computed
whole against reused (personas.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from dataclasses import dataclass

import aiohttp
import numpy as np

from ..config import Config, RoleConfig, load_config
from ..loading import Models, load_models
from .dubclient import Answer, dub
from .inprocess import LiveServer
from .personas import persona_table
from .table import pct, render
from .together import together_table

KEY = "bench-roles-dubbing-key"
# eight roles, their weights from 8 down to 1, their voices spread in pitch
CAST = [
    ("anchor", 8.0, 1.0), ("reporter", 4.0, 1.15), ("guest", 4.0, 0.85), ("critic", 2.0, 1.3),
    ("caller", 2.0, 0.8), ("narrator", 1.0, 0.9), ("extra", 1.0, 1.2), ("crowd", 1.0, 1.05),
]  # fmt: skip
SENTENCES = [
    "Good evening, and welcome back.", "The moon is up.", "Coffee is hot.",
    "Who is on the line tonight?", "A caller from the coast.", "The stars are out.",
    "Count them with us.", "Until the morning comes.", "That is a fine question.",
    "Let us hear the next one.", "The studio lights are low.", "Nobody sleeps here.",
]  # fmt: skip
# the desk's workers in the last mode: one a core, two to four
WORKERS = max(2, min(4, os.cpu_count() or 1))
MODES = (
    ("FIFO", "fifo", 1),
    ("role scheduler", "roles", 1),
    (f"role scheduler, {WORKERS} workers", "roles", WORKERS),
)


@dataclass
class Storm:
    """One mode's run: each request's role, its answer, the wall time and the CPU spent."""

    roles: list[str]
    answers: list[Answer]
    wall_s: float
    cpu_s: float


def requests(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        role = rng.choice(CAST)[0]
        lines = [{"role": role, "text": rng.choice(SENTENCES)} for _ in range(rng.randint(1, 2))]
        out.append({"lines": lines, "format": "wav"})
    return out


def settings(mode: str, n: int, workers: int = 1) -> Config:
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": "bench-roles-host-token"})
    cfg.roles = [RoleConfig(name=n_, weight=w, pitch=p) for n_, w, p in CAST]
    cfg.load_asr = False
    cfg.feedback.enabled = False
    cfg.dub.api_keys = [KEY]
    cfg.dub.scheduler = mode
    cfg.dub.workers = workers
    cfg.dub.queue_size = max(256, 4 * n)
    cfg.dub.burst = cfg.dub.max_lines * n
    cfg.dub.lines_per_minute = 1e6
    return cfg


async def _storm(url: str, bodies: list[dict]) -> tuple[list[Answer], float]:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        await dub(url, KEY, {"lines": [{"role": "anchor", "text": "Warm up."}]}, http)
        started = time.perf_counter()
        answers = await asyncio.gather(*(dub(url, KEY, b, http) for b in bodies))
        return list(answers), time.perf_counter() - started


def storm(models: Models, mode: str, workers: int, bodies: list[dict]) -> Storm:
    srv = LiveServer(settings(mode, len(bodies), workers), models).start(ready_timeout=900)
    try:
        before = os.times()
        answers, wall = asyncio.run(_storm(srv.url, bodies))
        after = os.times()
    finally:
        srv.stop()
    cpu = (after.user - before.user) + (after.system - before.system)
    return Storm([b["lines"][0]["role"] for b in bodies], answers, wall, cpu)


def figures(run: Storm) -> dict[str, float]:
    firsts = [a.arrived_s[0] * 1000 for a in run.answers]
    lasts = [a.arrived_s[len(a.lines) - 1] * 1000 for a in run.answers]
    speech = sum(x["samples"] / x["sample_rate"] for a in run.answers for x in a.lines)
    weights = {name: w for name, w, _ in CAST}
    weighted = sum(weights[r] * f for r, f in zip(run.roles, firsts, strict=True))
    return {
        "first mean": statistics.fmean(firsts),
        "first p95": pct(firsts, 95),
        "first p99": pct(firsts, 99),
        "last mean": statistics.fmean(lasts),
        "last p95": pct(lasts, 95),
        "last p99": pct(lasts, 99),
        "weighted first mean": weighted / sum(weights[r] for r in run.roles),
        "speech s/s": speech / run.wall_s,
        "cpu": run.cpu_s / run.wall_s,
        "failed": sum("error" in x for a in run.answers for x in a.lines),
        "refused": sum(a.status != 200 for a in run.answers),
    }


def waits(run: Storm) -> dict[str, list[float]]:
    """Each role's lines' waits for the TTS from when each was due (ms, as the server reports
    them: a request's later line is due once the line before it has played)."""
    out: dict[str, list[float]] = {name: [] for name, _, _ in CAST}
    for a in run.answers:
        for x in a.lines:
            out[x["role"]].append(x.get("waited_ms", float("nan")) - x.get("due_ms", 0.0))
    return out


def batch_table(models: Models, sizes: tuple[int, ...] = (1, 2, 4, 8), reps: int = 5) -> str:
    """Piper's one ONNX call for a batch of sentences (one voice, padded) against one call a
    sentence: ms per sentence."""
    voice = models.tts.voice  # type: ignore[attr-defined]  # a PiperSpeaker's PiperVoice
    ids = [voice.phonemes_to_ids(voice.phonemize(s)[0]) for s in SENTENCES]
    scales = np.array([0.667, 1.0, 0.8], dtype=np.float32)

    def run(batch: list[list[int]]) -> None:
        x = np.zeros((len(batch), max(map(len, batch))), np.int64)
        for k, row in enumerate(batch):
            x[k, : len(row)] = row
        lengths = np.array([len(r) for r in batch], np.int64)
        voice.session.run(None, {"input": x, "input_lengths": lengths, "scales": scales})

    rows = []
    single = None
    for size in sizes:
        batch = (ids * size)[:size]
        run(batch)
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            run(batch)
            times.append((time.perf_counter() - t) / size * 1000)
        per = statistics.median(times)
        single = single or per
        rows.append([size, per, per / single])
    return render(
        "Piper, one voice: a batch of sentences in one call (median of 5, ms a sentence)",
        ["batch", "ms per sentence", "/ batch of 1"],
        rows,
    )


def report(runs: dict[str, Storm], n: int, batches: str) -> str:
    each = {name: figures(run) for name, run in runs.items()}
    base = each["FIFO"]
    rows = []
    for name, run in runs.items():
        f = each[name]
        rows.append(
            [name, len(run.answers)]
            + [f[k] for k in ("first mean", "first p95", "first p99", "last mean", "last p95")]
            + [f["last p99"], f["weighted first mean"], f["speech s/s"], f"{f['cpu']:.2f}"]
            + [f["failed"], f["refused"]]
            + [_change(f, base, "first mean"), _change(f, base, "first p95")]
        )  # fmt: skip
    main = render(
        f"bench roles: {n} dubbing requests at once (1-2 lines each), 8 roles of weights 8 to 1;"
        f" latency in ms from the request (cores: {os.cpu_count()})",
        ["mode", "requests", "first audio mean", "p95", "p99", "last audio mean", "p95", "p99",
         "first mean, weighted by role", "speech s/s", "CPU (cores)", "failed", "refused",
         "mean vs FIFO", "p95 vs FIFO"],
        rows,
    )  # fmt: skip
    role_rows = []
    scheduled = [run for name, run in runs.items() if name != "FIFO"]
    bound = _bounds(scheduled)
    for name, weight, _ in CAST:
        row: list[object] = [name, weight]
        worst = float("nan")
        for run in runs.values():
            w = [x for x in waits(run)[name] if x == x]
            row += [pct(w, 95) if w else float("nan"), max(w) if w else float("nan")]
        waited = [x for run in scheduled for x in waits(run)[name] if x == x]
        worst = max(waited) if waited else float("nan")
        verdict = "no lines" if worst != worst else "holds" if worst <= bound[name] else "fails"
        row += [bound[name], verdict]
        role_rows.append(row)
    columns = [f"{name} {figure}" for name in runs for figure in ("p95", "max")]
    per_role = render(
        "each role's wait for the TTS from when each line was due (ms, as the server reports"
        " it; the role scheduler paces a request's lines: a later one is due when the one"
        " before it has played)",
        ["role", "weight", *columns, "scheduler's bound", "max ≤ bound"],
        role_rows,
    )
    return "\n\n".join([main, per_role, batches])


def _bounds(runs: list[Storm]) -> dict[str, float]:
    """Each role's starvation bound (ms) for the scheduler's queue, with the synthesis times
    measured in the runs. It holds for several workers too: they serve the lines ahead of a
    line no slower than one would, and each line within the times measured."""
    from ..show.scheduling import RoleQueue

    made = [x["made_ms"] / 1000 for r in runs for a in r.answers for x in a.lines if "made_ms" in x]
    queue: RoleQueue = RoleQueue(max(256, 4 * len(runs[0].answers)), {n: w for n, w, _ in CAST})
    return {n: 1000 * queue.starvation_bound_s(n, max(made), min(made)) for n, _, _ in CAST}


def _change(figures: dict[str, float], base: dict[str, float], name: str) -> str:
    return f"{(figures[name] / base[name] - 1) * 100:+.0f} %"


def main(args: argparse.Namespace) -> int:
    cfg = settings("fifo", args.requests, WORKERS)  # every mode's voices loaded once
    models = load_models(cfg, lambda msg: None)
    bodies = requests(args.requests, seed=7)
    runs = {name: storm(models, mode, n, bodies) for name, mode, n in MODES}
    grouped = [batch_table(models), persona_table(models.llm), together_table(models.llm)]
    print(report(runs, args.requests, "\n\n".join(grouped)))
    return 0
