"""The real hour, span by span: the pages' frames and lip-sync beside where the CPU went.

The first table compares the first and the last ten minutes. When they differ (the first hour
with a table drew 20 frames a second at its start and 16 at its end, its page lip-sync |p95|
7 ms wider), this one says when it began and what changed with it: a process that took more of
its core, or a page whose heap grew.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from .cputime import PARTS
from .table import median, pct, render

T = TypeVar("T")
SPANS = 6  # the run is cut into this many spans (ten minutes each in an hour)


@dataclass
class PageReport:
    """One stage page's report, as the run keeps it."""

    at: float  # s into the run
    fps: float | None
    onsets: list[float]  # lip-sync at each viseme onset drawn, ms (frames held back left out)
    held: int  # onsets on frames held back
    hold: float | None = None  # how long the page held the stream before playing it, ms


def _minutes(at_s: float, length_s: float) -> str:
    """`at_s` in minutes, as whole ones where the spans are (a short run's are not)."""
    return f"{at_s / 60:.0f}" if length_s % 60 == 0 else f"{at_s / 60:.1f}"


def _span(rows: Sequence[tuple[float, T]], start: float, end: float) -> list[T]:
    return [x for t, x in rows if start <= t < end]


def trend(
    total_s: float,
    reports: list[PageReport],
    cpu: list[tuple[float, dict[str, float]]],
    heap: list[tuple[float, list[float | None]]],
    rss: list[tuple[float, float]],
) -> str:
    """A table of the run in SPANS spans: medians of the pages' reports, of the pages' JS
    heaps, of the server's RSS and of the cores busy per part (CPU s a second) as read
    through the run. The server's RSS span by span tells a steady growth from the swing of
    ±40 MB that replies coming and going give a single reading."""
    length = total_s / SPANS
    cores = sorted({k for _, busy in cpu for k in busy if k not in PARTS})
    rows: list[list[object]] = []
    for k in range(SPANS):
        start, end = k * length, (k + 1) * length
        mine = [r for r in reports if start <= r.at < end]
        onsets = [x for r in mine for x in r.onsets]
        held = sum(r.held for r in mine)
        busy = _span(cpu, start, end)
        heaps = [h for hs in _span(heap, start, end) for h in hs if h]
        rows.append(
            [
                f"{_minutes(start, length)}–{_minutes(end, length)}",
                median([r.fps for r in mine if r.fps is not None]),
                pct([abs(x) for x in onsets], 95),
                100 * held / max(1, held + len(onsets)),
                median([r.hold for r in mine if r.hold is not None]),
                median(heaps),
                median(_span(rss, start, end)),
                *(median([b.get(part, 0.0) for b in busy]) for part in (*PARTS, *cores)),
            ]
        )
    return render(
        "the run span by span: the stage pages (medians of their reports), the server's RSS "
        "(medians of readings every second) and the cores busy (CPU s a second, medians of "
        "readings every 10 s)",
        [
            "minutes",
            "fps",
            "page lip-sync \\|p95\\| ms",
            "held back %",
            "stream held ms",
            "JS heap MB",
            "server RSS MB",
            *PARTS,
            *cores,
        ],
        rows,
    )
