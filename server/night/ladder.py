"""The fallback ladder: the show steps down on purpose instead of falling over at 2 a.m.

Level 0 is the show as built; 1 compresses (shorter replies, long prompts condensed); 2 speaks
with a light voice; 3 asks the pages for light pictures. Three triggers want a level:

- **the night window** (local time of the show): `night_level`;
- **sustained low load** (the source's rule: little CPU, little GPU memory, few TTS jobs, for
  15 minutes): `economy_level`;
- **strain** (text-to-first-audio p99 over its budget, the event loop lagging, frames going
  out late, memory growing): one level more for each `enter_s` the strain lasts, one less for
  each `leave_s` of recovery.

The level is the highest any trigger wants, or the host's pin. Hysteresis keeps it from
flapping: a trigger counts only once it held without a break for its time, and strain ends
only when every figure is back under `leave_ratio` of its line. Time comes from an injectable
clock, so thirty nights can be simulated in seconds.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from ..config import NightConfig

log = logging.getLogger(__name__)

TOP = 3


@dataclass(frozen=True)
class Reading:
    """One look at the show and the machine. None: not known (no GPU, no speech yet)."""

    at: float  # s, the ladder's clock
    local: dt.time  # the show's local time of day
    cpu: float  # share of the machine's CPU the server used lately (0..1)
    gpu_memory_mb: float | None
    tts_jobs: int  # lines waiting or being made
    ttfa_p99_s: float | None
    loop_lag_p99_s: float | None
    frames_late: float  # share of frames sent late lately
    rss_growth: float  # resident memory against the show's first minutes (0.1: 10 % more)


class Sustained:
    """A condition that counts once it has held for `hold_s` without a break."""

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self.since: float | None = None

    def update(self, on: bool, now: float) -> bool:
        if not on:
            self.since = None
            return False
        if self.since is None:
            self.since = now
        return now - self.since >= self.hold_s

    def restart(self, now: float) -> None:
        """Counted once: the next count needs another full hold."""
        self.since = now


def in_window(local: dt.time, start: dt.time, end: dt.time) -> bool:
    """Whether `local` falls in [start, end), a window that may cross midnight."""
    return start <= local < end if start <= end else local >= start or local < end


class Ladder:
    def __init__(self, cfg: NightConfig, clock: Callable[[], float]) -> None:
        self.cfg, self.clock = cfg, clock
        self.start, self.end = (dt.time.fromisoformat(t) for t in cfg.window)
        self.level, self.reason, self.since = 0, "the show as built", clock()
        self.pinned: int | None = None
        self.night = False
        self.switches = 0
        self._strain_level = 0
        self._strained = Sustained(cfg.enter_s)
        self._recovered = Sustained(cfg.leave_s)
        self._low = Sustained(cfg.economy_after_s)
        self._busy = Sustained(cfg.enter_s)
        self._economy = False
        self.strain: str | None = None  # what strains the show, when something does
        self.listeners: list[Callable[[int, str], None]] = []

    def pin(self, level: int | None) -> None:
        """The host's word: this level whatever the triggers say (None: the triggers again)."""
        self.pinned = level
        self._set(self._wanted(), self._why())

    def observe(self, r: Reading) -> bool:
        """Fold in one reading; True when the level changed."""
        self.night = in_window(r.local, self.start, self.end)
        self._economy_step(r)
        self._strain_step(r)
        return self._set(self._wanted(), self._why())

    # ---- triggers ------------------------------------------------------------------------
    def _economy_step(self, r: Reading) -> None:
        c = self.cfg
        gpu_low = r.gpu_memory_mb is None or r.gpu_memory_mb < c.gpu_low_mb
        low = r.cpu < c.cpu_low and gpu_low and r.tts_jobs <= c.tts_jobs_low
        if self._low.update(low, r.at):
            self._economy = True
        # economy ends once the load has been back above its line (with margin) for enter_s
        busy = r.cpu >= c.cpu_low / c.leave_ratio or r.tts_jobs > c.tts_jobs_low
        if self._busy.update(busy, r.at):
            self._economy = False

    def _strain_step(self, r: Reading) -> None:
        self.strain = self._strained_by(r, 1.0)
        calm = self._strained_by(r, self.cfg.leave_ratio) is None
        if self._strained.update(self.strain is not None, r.at):
            self._strain_level = min(TOP, self._strain_level + 1)
            self._strained.restart(r.at)
        if self._recovered.update(calm and self._strain_level > 0, r.at):
            self._strain_level -= 1
            self._recovered.restart(r.at)

    def _strained_by(self, r: Reading, share: float) -> str | None:
        """The first figure over `share` of its line, in words (None: none is)."""
        c = self.cfg
        figures = (
            ("text-to-first-audio p99", r.ttfa_p99_s, c.ttfa_p99_s, "s"),
            ("event loop lag p99", r.loop_lag_p99_s, c.loop_lag_p99_s, "s"),
            ("frames late", r.frames_late, c.frames_late, ""),
            ("memory growth", r.rss_growth, c.rss_growth, ""),
        )
        for name, value, line, unit in figures:
            if value is not None and value > share * line:
                return f"{name} {value:.3g}{unit} over {share * line:.3g}{unit}"
        return None

    def _wanted(self) -> int:
        if self.pinned is not None:
            return self.pinned
        if not self.cfg.triggers:
            return 0
        c = self.cfg
        night = c.night_level if self.night else 0
        economy = c.economy_level if self._economy else 0
        return min(TOP, max(night, economy, self._strain_level))

    def _why(self) -> str:
        if self.pinned is not None:
            return "pinned by the host"
        if self._strain_level and self._strain_level >= self._wanted():
            return f"strain: {self.strain or 'recovering'}"
        if self.night and self.cfg.night_level >= self._wanted():
            return "the night window"
        if self._economy:
            return "low load"
        return "the show as built"

    def _set(self, level: int, reason: str) -> bool:
        if level == self.level:
            return False
        log.warning("night: fallback level %d -> %d (%s)", self.level, level, reason)
        self.level, self.reason, self.since = level, reason, self.clock()
        self.switches += 1
        for listener in self.listeners:
            listener(level, reason)
        return True

    def to_json(self, wall_since_ms: float | None = None) -> dict:
        return {
            "level": self.level,
            "reason": self.reason,
            "since_ms": wall_since_ms,
            "pinned": self.pinned is not None,
            "night": self.night,
        }


LADDER = web.AppKey("ladder", Ladder)
