"""Printing benchmark tables and the statistics they quote."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), nearest-rank on sorted values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def render(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in header]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = "| " + " | ".join("-" * w for w in widths) + " |"
    out = [f"## {title}", ""]
    for n, row in enumerate(cells):
        out.append(
            "| "
            + " | ".join(c.rjust(w) if n else c.ljust(w) for c, w in zip(row, widths, strict=True))
            + " |"
        )
        if n == 0:
            out.append(line)
    return "\n".join(out)


_CELL = re.compile(r"(?<!\\)\|")  # a cell ends at a | that is not escaped


def rows_of(out: str, title: str) -> dict[str, dict[str, str]]:
    """Read back the table `render` printed under `title` (a prefix of it): first cell →
    {column header: cell}."""
    section = out.split(title, 1)[1].split("\n## ", 1)[0]
    lines = [_CELL.split(line.strip("|")) for line in section.splitlines() if line.startswith("|")]
    header = [h.strip().replace("\\|", "|") for h in lines[0]]
    return {c[0].strip(): dict(zip(header, (x.strip() for x in c), strict=True)) for c in lines[2:]}


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)
