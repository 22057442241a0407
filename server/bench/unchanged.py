"""Whether a legitimate viewer's lip-sync under attack is the one it had unattacked.

Each phase of `bench abuse` gives a few dozen line starts timed by the probe and some hundreds
of viseme onsets reported by the page. Two phases of the same show differ by chance: a line
start falls a frame either side of a vsync, one line was shown a frame late. A verdict that
calls any difference a change would judge the dice; one that calls nothing a change would be
no verdict. So a figure is "as unattacked" when its change is small (within SLACK_MS), or not
beyond what chance gives at 1 %; and its share outside ATSC's window is not larger beyond
chance either.
"""

from __future__ import annotations

from math import comb

import numpy as np

from server.media.syncwindows import ATSC

from .table import median, pct

SLACK_MS = 5.0  # a median (or |p95|) this much from the unattacked phase's is unchanged
FEW = 50  # fewer figures than this in a phase: their p95 is their largest, the median is judged
SIGNIFICANT = 0.01  # a change is the attack's only where chance gives it less often than this
PERMUTATIONS = 10_000


def more_outside(values: list[float], base: list[float]) -> float:
    """How likely, were the two phases alike, an attacked phase with this many figures outside
    ATSC's window or more (a one-sided Fisher exact test)."""
    outside = [sum(not ATSC[0] <= v <= ATSC[1] for v in x) for x in (values, base)]
    n, total, out = len(values), len(values) + len(base), sum(outside)
    tail = range(outside[0], min(out, n) + 1)
    return sum(comb(out, k) * comb(total - out, n - k) for k in tail) / comb(total, n)


def median_moved(values: list[float], base: list[float], seed: int = 0) -> float:
    """How likely, were the two phases alike, medians this far apart or farther: the share of
    random splits of both phases' figures into groups of their sizes whose medians differ as
    much (a two-sided permutation test; seeded, so a table prints the same verdict twice)."""
    pooled = np.array([*values, *base], dtype=float)
    seen = abs(float(np.median(values)) - float(np.median(base)))
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((PERMUTATIONS, len(pooled))), axis=1)
    shuffled, n = pooled[order], len(values)
    moved = np.abs(np.median(shuffled[:, :n], axis=1) - np.median(shuffled[:, n:], axis=1))
    # the observed split counts among them (a p-value is never 0)
    return (1 + int(np.sum(moved >= seen - 1e-9))) / (1 + PERMUTATIONS)


def as_unattacked(values: list[float], base: list[float]) -> str:
    """ "holds" where an attacked phase's lip-sync is the unattacked one's. With many figures,
    its |p95| is within SLACK_MS of the unattacked one's. With few (a few dozen line starts,
    whose p95 is their largest: one line a frame late decides it), its median is, or moved no
    further than chance moves it. Either way, no more figures outside ATSC's window than chance
    gives (0 of 654 against 2 of 651 is 1 in 4)."""
    if not values or not base:
        return "—"
    if min(len(values), len(base)) < FEW:
        same = (
            abs(median(values) - median(base)) <= SLACK_MS
            or median_moved(values, base) >= SIGNIFICANT
        )
    else:
        spread, base_spread = (pct([abs(v) for v in x], 95) for x in (values, base))
        same = spread <= base_spread + SLACK_MS
    return "holds" if same and more_outside(values, base) >= SIGNIFICANT else "fails"
