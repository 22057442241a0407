"""`allnighter bench clock`: the fused clock against injected truth, and against live sources.

Simulated (timesync/simulate.py): a crystal 0.3 s and 20 ppm off, wandering slowly; PTP read
every second to ±1 µs; NTP every 16 s to ±1 ms with a 20 ms delay spike in 3 % of readings.
Each row measures a window after the clock settled (the settling is said). The baseline of the
run is each source alone: its raw readings against the same truth. The holdover rows have no
readings to compare: there the baseline is what a clock that kept the last reading and no
drift would be off by the end of the minute.

Live: a real chronyd on loopback and a real ptp4l pair in network namespaces (root). Both
serve this machine's own clock, so the truth is time.time(): a reading's offset is its error.

CPU: simulated rows count the process CPU inside ingest() at the poll rates and now() ten
times a second, per simulated second; live rows count the whole process and its children (pmc)
while polling, per wall second, at the (faster than real) poll rate shown.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from timesync.fused import FusedClock
from timesync.instant import monotonic_and_system
from timesync.measurement import TimeSource
from timesync.simulate import (
    Reference,
    percentiles,
    run,
)

from .clock_scenarios import scenarios
from .table import render

DRIFT = 20e-6  # the simulated crystal's drift (simulate.Reference's default)


def us(seconds: float) -> str:
    return "—" if np.isnan(seconds) else f"{seconds * 1e6:.1f}"


def alone(singles: dict, name: str, holdover: bool) -> str:
    p50, p99 = singles.get(name, (float("nan"),) * 2)
    return "—" if holdover or np.isnan(p99) else f"{us(p50)} / {us(p99)}"


def simulated(minutes: float, seed: int) -> list[list[Any]]:
    rows = []
    for sc in scenarios(minutes):
        trace = run(sc.sources, sc.end, reference=Reference(steps=sc.steps), seed=seed)
        window = trace.window(sc.start, sc.end)
        err = trace.error[window]
        p50, p99 = percentiles(err)
        singles = {
            s.name: percentiles(trace.source_errors(s.name, sc.start, sc.end)) for s in sc.sources
        }
        if sc.holdover:
            # no readings to stand beside: a clock that kept its last reading, but no drift
            best = DRIFT * (sc.end - sc.start)
        else:
            best = min(p for _, p in singles.values() if not np.isnan(p))
        steps = trace.steps()
        rows.append(
            [
                sc.name,
                sc.settled,
                us(p50),
                us(p99),
                f"{sc.goal_p99 * 1e6:.0f}",
                "yes" if p99 <= sc.goal_p99 else "NO",
                *(alone(singles, n, sc.holdover) for n in ("ptp", "ntp")),
                "yes" if p99 < best else "NO",
                f"{100 * np.mean(np.abs(err) <= trace.bound[window]):.1f}",
                f"+{max(steps.max(), 0) * 1e6:.1f} / −{max(-steps.min(), 0) * 1e6:.1f}",
                trace.backwards(),
                f"{trace.worst_slew_ppm():.0f}",
                f"{100 * trace.cpu_s / trace.seconds:.4f}",
            ]
        )
    return rows


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def poll_live(sources: Sequence[tuple[TimeSource, float]], seconds: float) -> list[Any]:
    """Read live sources, each every so many s, for `seconds` into one FusedClock; sample the
    fused time against the system clock (the truth both fixtures serve) ten times a second.
    The first quarter (the filter learning the drift) is left out of every figure. With
    several sources, the best of them alone (lowest p99) is the one to beat."""
    start_ns = time.time_ns()
    clock = FusedClock(wall_at_start=0.0)  # the oscillator counts from start_ns too
    offsets: dict[str, list[float]] = {s.name: [] for s, _ in sources}
    errors, bounds = [], []
    cpu0, wall0 = _cpu(), time.monotonic()
    next_poll, settled = [wall0] * len(sources), wall0 + seconds / 4
    while time.monotonic() - wall0 < seconds:
        for i, (source, every) in enumerate(sources):
            if time.monotonic() < next_poll[i]:
                continue
            m = source.measure()
            if m.ok and m.at >= settled:
                offsets[source.name].append(m.offset)
            mono, system = monotonic_and_system(start_ns)
            clock.ingest(m, system - clock.oscillator(mono))
            next_poll[i] += every
        mono, system = monotonic_and_system(start_ns)
        if mono >= settled:
            errors.append(clock.at(mono) - system)
            bounds.append(clock.error_bound())
        time.sleep(0.1)
    cpu = (_cpu() - cpu0) / (time.monotonic() - wall0)
    alone = {name: percentiles(np.array(o)) for name, o in offsets.items() if o}
    best = min(alone, key=lambda name: alone[name][1])
    src50, src99 = alone[best]
    p50, p99 = percentiles(np.array(errors))
    b = np.array(bounds)
    covered = np.mean(np.abs(errors)[np.isfinite(b)] <= b[np.isfinite(b)])
    label = f" ({best.split(':')[0].upper()})" if len(sources) > 1 else ""
    return [
        sum(len(o) for o in offsets.values()),
        " + ".join(f"{every:g} s" for _, every in sources),
        f"{us(src50)} / {us(src99)}{label}",
        f"{us(p50)} / {us(p99)}",
        "yes" if p99 < src99 else "NO",
        f"{100 * covered:.1f}",
        f"{100 * cpu:.2f}",
    ]


def live(seconds: float) -> tuple[list[list[object]], list[str]]:
    """Rows for the live fixtures, each alone and both fused, and the reasons for any skipped."""
    from timesync.ntp import NTPSource
    from timesync.ptp import PTPSource

    from . import ptp4l
    from .chrony import chrony_on_loopback, chronyd_path

    if seconds <= 0:
        return [], ["live fixtures off (--live-seconds 0)"]
    rows: list[list[Any]] = []
    skipped: list[str] = []
    running: list[tuple[str, TimeSource, float]] = []
    with contextlib.ExitStack() as fixtures:
        if chronyd_path() is None:
            skipped.append("chrony: chronyd is not installed (apt-get install chrony)")
        else:
            try:
                tmp = fixtures.enter_context(tempfile.TemporaryDirectory())
                port = fixtures.enter_context(chrony_on_loopback(tmp))
                running.append(("chronyd on loopback", NTPSource("127.0.0.1", port), 0.5))
            except RuntimeError as exc:  # chronyd exited or did not answer: its log says why
                skipped.append(f"chrony: {exc}")
        why = ptp4l.missing()
        if why:
            skipped.append(f"ptp4l pair: {why}")
        else:
            try:
                pair = fixtures.enter_context(ptp4l.PTPPair())
                ptp = PTPSource(pair.socket)
                pair.wait_tracking(ptp)
                running.append(("ptp4l pair in namespaces", ptp, 1.0))
            except (OSError, subprocess.CalledProcessError, TimeoutError) as exc:
                skipped.append(f"ptp4l pair: {exc}")
        for name, source, every in running:
            rows.append([name, *poll_live([(source, every)], seconds)])
        if len(running) > 1:
            both = [(source, every) for _, source, every in running]
            rows.append(["both, fused together", *poll_live(both, seconds)])
    return rows, skipped


def main(args: argparse.Namespace) -> int:
    minutes, live_seconds = args.minutes, args.live_seconds
    # the simulated start-up steps are expected: keep the table readable
    fused_log = logging.getLogger("timesync.fused")
    level = fused_log.level
    fused_log.setLevel(logging.ERROR)
    try:
        sim_rows = simulated(minutes, seed=1)
    finally:
        fused_log.setLevel(level)
    print()
    print(
        render(
            f"bench clock: fused error against injected truth (µs), {minutes:g} simulated "
            "minutes a row (holdover: 60 s)",
            [
                "scenario",
                "settled on",
                "fused p50",
                "fused p99",
                "goal p99",
                "meets",
                "PTP alone p50 / p99",
                "NTP alone p50 / p99",
                "beats best source",
                "bound covers %",
                "largest step +/− µs",
                "backwards",
                "worst slew ppm",
                "CPU % core",
            ],
            sim_rows,
        )
    )
    print(
        "\nHoldover rows: the baseline is a clock that kept the last reading without the drift "
        f"({DRIFT * 60 * 1e6:.0f} µs off after 60 s). Steps are the fused time's change beyond "
        "0.1 s between samples 0.1 s apart, over the whole run (settling included); the 0.3 s "
        "start-up step came before any time was handed out. CPU: ingest() at the poll rates "
        "and now() ten times a second, per simulated second."
    )
    rows, skipped = live(live_seconds)
    print()
    print(
        render(
            f"bench clock: live fixtures, {live_seconds:g} s each, the last three quarters "
            "measured (truth: this machine's clock)",
            [
                "fixture",
                "readings",
                "polled every",
                "source alone p50 / p99 µs",
                "fused p50 / p99 µs",
                "beats source",
                "bound covers %",
                "CPU % core (+pmc)",
            ],
            rows,
        )
    )
    print(
        "\nLive rows: a bias common to every reading of one source (chrony stamps its reply "
        "in user space) stays in the fused time; fusion removes jitter, not bias. The last "
        "row fuses both fixtures and names the better one alone, measured in the same run. "
        "The fused time is read at a monotonic instant bracketed by two "
        "system-clock readings, good to a few tenths of a µs."
    )
    for reason in skipped:
        print(f"skipped: {reason}")
    return 0
