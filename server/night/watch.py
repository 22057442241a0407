"""The night watch: every few seconds it reads the show and the machine for the ladder
(ladder.py), and when the level or the night changes it tells everyone who must act: the stage
(the next utterance speaks at the new level), the pages (the `state` event), the metrics."""

from __future__ import annotations

import datetime as dt
import os
import time
import zoneinfo
from collections.abc import Awaitable, Callable

from aiohttp import web

from ..anomalies import Anomalies
from ..media.broadcast import Broadcast
from ..memorywatch import MemoryWatch
from ..metrics import Metrics
from ..show.stage import Stage
from ..tasks import every
from .ladder import Ladder, Reading

MB = 1024 * 1024


def local_clock(timezone: str) -> Callable[[], dt.time]:
    """The show's local time of day: in `timezone`, or the machine's zone when empty."""
    zone = zoneinfo.ZoneInfo(timezone) if timezone else None
    return lambda: dt.datetime.now(zone).time()


class NightWatch:
    def __init__(
        self,
        ladder: Ladder,
        metrics: Metrics,
        memory: MemoryWatch,
        stage: Callable[[], Stage | None],
        broadcast: Callable[[], Broadcast | None],
        tell_pages: Callable[[dict], Awaitable[None]],
        local: Callable[[], dt.time],
        cpus: int | None = None,
    ) -> None:
        self.ladder, self.metrics, self.memory = ladder, metrics, memory
        self._stage, self._broadcast, self._tell = stage, broadcast, tell_pages
        self.local, self.cpus = local, cpus or os.cpu_count() or 1
        self._cpu_at = self._times()
        self._frames = (0, 0)
        self._rss_start: float | None = None
        self._told: tuple[int, bool] | None = None

    def read(self) -> Reading:
        anomalies: Anomalies = self.metrics.anomalies
        stage = self._stage()
        jobs = 0 if stage is None else len(stage.queue) + (stage.current is not None)
        figures = self.memory.last
        rss = figures.get("rss")
        if rss and self._rss_start is None:
            self._rss_start = rss
        gpu = figures.get("gpu_allocated")
        return Reading(
            at=self.ladder.clock(),
            local=self.local(),
            cpu=self._cpu(),
            gpu_memory_mb=None if gpu is None else gpu / MB,
            tts_jobs=jobs,
            ttfa_p99_s=anomalies.p99("text_to_first_audio"),
            loop_lag_p99_s=anomalies.p99("loop_lag"),
            frames_late=self._frames_late(),
            rss_growth=(rss / self._rss_start - 1) if rss and self._rss_start else 0.0,
        )

    async def look(self) -> None:
        """One reading for the ladder; then tell what changed."""
        self.ladder.observe(self.read())
        await self.tell()

    async def tell(self) -> None:
        """The level and the night to the stage, the metrics and the pages, when they changed."""
        now = (self.ladder.level, self.ladder.night)
        if now == self._told:
            return
        self._told = now
        stage = self._stage()
        if stage is not None:
            stage.level = self.ladder.level  # the next utterance speaks at it
        self.metrics.fallback_level.set(self.ladder.level)
        await self._tell({"fallback_level": self.ladder.level, "night": self.ladder.night})

    async def run(self, every_s: float = 5.0) -> None:
        await every(every_s, "night: a look at the show", self.look)

    # ---- figures over the last interval ----------------------------------------------------
    @staticmethod
    def _times() -> tuple[float, float]:
        t = os.times()
        return time.monotonic(), t.user + t.system

    def _cpu(self) -> float:
        (wall0, cpu0), (wall1, cpu1) = self._cpu_at, self._times()
        self._cpu_at = (wall1, cpu1)
        return (cpu1 - cpu0) / max(wall1 - wall0, 1e-3) / self.cpus

    def _frames_late(self) -> float:
        broadcast = self._broadcast()
        if broadcast is None:
            return 0.0
        sent0, late0 = self._frames
        sent, late = broadcast.frames_sent, broadcast.frames_late
        self._frames = (sent, late)
        return (late - late0) / (sent - sent0) if sent > sent0 else 0.0


NIGHT_WATCH = web.AppKey("night_watch", NightWatch)
