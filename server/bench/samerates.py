"""Two windows' lip-sync compared at the frame rates both had.

A page's lip-sync figure is mostly its frame: a viseme shows from the first frame drawn after
its start, so the slower the page draws, the wider the figure. In the fourth real hour the
pages' |p95| was 77 ms in the reports at 11 frames a second and 97 ms at 6, and the last ten
minutes drew a frame a second fewer than the first (the clients' core was as busy in both):
the figure widened by 3.6 ms with the viewer's machine, not with the show's timing.

So the last window is also read at the first window's frame rates (direct standardisation):
each onset is tagged with the frame rate its page had then, the last window's onsets are
weighted so that each rate has the share of them it has in the first, and onsets at a rate
only one window had are left out (and counted). Untagged onsets (rate None) are one rate.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class AtSameRates:
    first: float  # |p95| ms of the first window's onsets at the rates both windows had
    last: float  # the last window's, weighted to the first window's mix of those rates
    left_out: float  # % of both windows' onsets, at a rate only one of them had


def weighted_pct(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of values counted `weights` times each: the smallest value
    whose cumulative weight reaches q % of the total (nearest rank). With equal weights it is
    sometimes a rank above table.pct (which rounds q % of n − 1), so both windows of a
    comparison are read with this one."""
    pairs = sorted((v, w) for v, w in zip(values, weights, strict=True) if w > 0)
    total = sum(w for _, w in pairs)
    if not pairs:
        return float("nan")
    target, reached = q / 100 * total, 0.0
    for value, weight in pairs:
        reached += weight
        if reached >= target - 1e-9 * total:
            return value
    return pairs[-1][0]


def at_same_rates(
    first: Sequence[float],
    first_rates: Sequence[float | None],
    last: Sequence[float],
    last_rates: Sequence[float | None],
) -> AtSameRates:
    """|p95| of the first window and of the last at the first's mix of frame rates."""
    had, has = Counter(first_rates), Counter(last_rates)
    shared = had.keys() & has.keys()
    kept_first = sum(had[r] for r in shared)
    kept_last = sum(has[r] for r in shared)
    both = len(first) + len(last)
    left_out = 100 * (both - kept_first - kept_last) / both if both else 0.0
    if not shared:
        return AtSameRates(float("nan"), float("nan"), left_out)

    def share(rate: float | None) -> float:  # the first's share over the last's, at a rate
        return (had[rate] / kept_first) / (has[rate] / kept_last)

    a = [abs(v) for v, r in zip(first, first_rates, strict=True) if r in shared]
    b = [(abs(v), share(r)) for v, r in zip(last, last_rates, strict=True) if r in shared]
    return AtSameRates(
        weighted_pct(a, [1.0] * len(a), 95),
        weighted_pct([v for v, _ in b], [w for _, w in b], 95),
        left_out,
    )


def p95_interval(values: Sequence[float]) -> str:
    """Where the |p95| of `values` lies, at 95 % confidence: the order statistics around its
    rank (binomial, for independent onsets; a page's are not quite, so it is wider still). Of
    200 line starts the p95 is set by the widest ten, and its interval spans about 100 ms."""
    ordered = sorted(abs(v) for v in values)
    n = len(ordered)
    if n < 2:
        return "—"
    spread = 1.96 * math.sqrt(n * 0.95 * 0.05)
    low = max(0, math.floor(n * 0.95 - spread) - 1)
    high = min(n - 1, math.ceil(n * 0.95 + spread) - 1)
    return f"{ordered[low]:.1f}–{ordered[high]:.1f}"
