"""The last hour of the night, for the host panel's charts: one sample every ten seconds of what
a host watches (text-to-first-audio, viewers' lip-sync, frame rate, viewers, memory, the
fallback level, alerts), kept in a ring of an hour. `GET /api/v1/history` hands it over as
columns (uPlot's shape: times, then one list per series, `null` where a figure was unknown).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from ..tasks import every

EVERY_S = 10.0
KEEP_S = 3600.0
SERIES = (
    "ttfa_p99_ms",  # text-to-first-audio, p99 of the last minutes
    "lipsync_p95_ms",  # viewers' drawn lip-sync, |p95| of their latest onsets
    "fps",  # viewers' frame rate, median
    "viewers",
    "rss_mb",
    "fallback_level",
    "alerts",  # raised since the sample before
)


@dataclass(frozen=True)
class Sample:
    at_ms: float
    figures: dict[str, float | None]


class History:
    def __init__(
        self,
        read: Callable[[], dict[str, float | None]],
        wall_ms: Callable[[], float] = lambda: time.time() * 1000,
        every_s: float = EVERY_S,
        keep_s: float = KEEP_S,
    ) -> None:
        self.read, self.wall_ms, self.every_s = read, wall_ms, every_s
        self.samples: deque[Sample] = deque(maxlen=int(keep_s / every_s))

    def sample(self) -> Sample:
        figures = self.read()
        sample = Sample(self.wall_ms(), {name: figures.get(name) for name in SERIES})
        self.samples.append(sample)
        return sample

    def columns(self) -> dict:
        """{"series": names, "t": [s since the Unix epoch…], name: [value or null…] …}."""
        out: dict = {"series": list(SERIES), "t": [round(s.at_ms / 1000, 3) for s in self.samples]}
        for name in SERIES:
            out[name] = [_rounded(s.figures[name]) for s in self.samples]
        return out

    async def run(self) -> None:
        await every(self.every_s, "history: a sample", self.sample)


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


HISTORY = web.AppKey("history", History)
