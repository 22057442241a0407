"""The tables `bench lipsync` prints, and the goals each figure is judged by."""

from __future__ import annotations

from typing import Any

from server.media.syncwindows import ATSC, EBU_R37, in_window

from .table import median, pct, render

FIGURES = ("probe", "probe, at render", "page, each line", "page, every onset")
CONTINUOUS_FIGURES = ("page, every onset", "page, each line", "probe")


def percent(values: list[float], window: tuple[float, float]) -> str:
    share = in_window(values, window)
    return "—" if share is None else f"{100 * share:.1f}"


def goals(values: list[float]) -> list[str]:
    """Issue 5's goals for a figure: |p95| ≤ 10 ms, p1 and p99 inside ATSC's window, every
    onset inside EBU R37's."""
    if not values:
        return ["—"] * 3
    verdict = {True: "holds", False: "misses"}
    low, high = pct(values, 1), pct(values, 99)
    return [
        verdict[pct([abs(v) for v in values], 95) <= 10],
        verdict[ATSC[0] <= low and high <= ATSC[1]],
        verdict[in_window(values, EBU_R37) == 1.0],
    ]


def continuous_table(by_minute: dict[int, dict], minutes: float) -> str:
    rows = []
    for m, figures in by_minute.items():
        row: list[Any] = [f"{m}–{m + 1}"]
        for figure in CONTINUOUS_FIGURES:
            values = figures[figure]
            row += [len(values), median(values)]
        every = figures["page, every onset"]
        rows.append(row + [percent(every, ATSC), percent(every, EBU_R37)])
    header = ["minute", "onsets", "page p50", "lines", "each line p50", "probe onsets"]
    header += ["probe p50", "in ATSC %", "in R37 %"]
    table = render(
        f"bench lipsync: {minutes:g} minutes of continuous speech, one page (picture − sound, ms)",
        header,
        rows,
    )
    if len(by_minute) < 2:
        return table
    first, last = by_minute[min(by_minute)], by_minute[max(by_minute)]
    drift = [
        f"{figure}: {median(last[figure]) - median(first[figure]):+.1f} ms"
        for figure in CONTINUOUS_FIGURES
        if first[figure] and last[figure]
    ]
    return "\n".join([table, "", "drift, last minute − first: " + "; ".join(drift)])


def offsets_table(offsets: dict[str, dict[str, Any]]) -> str:
    rows = []
    for name, figures in offsets.items():
        for figure in FIGURES:
            values = figures[figure]
            absolute = [abs(v) for v in values]
            rows.append(
                [name, figure, len(values), median(values), pct(values, 1), pct(values, 99)]
                + [pct(absolute, 95), pct(absolute, 99)]
                + [percent(values, ATSC), percent(values, EBU_R37)]
                + goals(values)
            )
    table = render(
        "bench lipsync: picture − sound (ms), real Chromium; the probe: drawn mouth opening "
        "− heard audio onset per frame; the page: its own reported figures",
        ["page", "figure", "onsets", "p50", "p1", "p99", "|p95|", "|p99|", "in ATSC %"]
        + ["in R37 %", "|p95| ≤ 10", "p1, p99 in ATSC", "all in R37"],
        rows,
    )
    notes = [
        f"{name}: the probe − the page, line by line ({len(f['probe − page'])} lines matched): "
        f"median {median(f['probe − page']):+.1f} ms, "
        f"|p95| {pct([abs(d) for d in f['probe − page']], 95):.1f} ms; "
        f"{f['fps'] or 0:.0f} fps; visemes seen {100 * (f['seen'] or 0):.1f} %; "
        f"output latency {_latency(f.get('latency'))}"
        for name, f in offsets.items()
        if f["probe − page"]
    ]
    return "\n".join([table, "", *notes])


def _latency(latency: dict | None) -> str:
    """The output latency a page drew by, as it knew it ("—" where it could not)."""
    if not latency or latency.get("ms") is None:
        return f"— ({(latency or {}).get('source') or 'not reported'})"
    return f"{latency['ms']:.0f} ms ({latency['source']})"


def frames_table(frames: dict[int, dict], seconds: float) -> str:
    header = ["pages", "opened", "fps median", "fps min", "frame jitter p99 ms, median"]
    header += ["… worst page", "dropped/min median", "dropped/min max"]
    rows = [
        [
            n,
            f"{n - f['failed']}/{n}",
            median(f["fps"]),
            min(f["fps"], default=float("nan")),
            median(f["jitter"]),
            max(f["jitter"], default=float("nan")),
            median(f["dropped"]),
            max(f["dropped"], default=float("nan")),
        ]
        for n, f in frames.items()
    ]
    return render(f"bench lipsync: animation frames while speaking ({seconds:.0f} s)", header, rows)
