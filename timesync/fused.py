"""FusedClock: the local oscillator steered toward the reference sources, never backwards.

Time out = oscillator + applied offset. The Kalman filter estimates the reference's offset
and drift from every accepted measurement; the applied offset follows that estimate at a
bounded slew rate (default 500 ppm), so the time never jumps and never runs backwards — even
when a source steps by a second at 2 a.m. (the filter gates the step out as an outlier). Only
at start-up, before any time was handed out, may a large error be stepped away, and it is
logged. Without measurements the filter's drift carries the clock (holdover), its error bound
growing honestly with the time since the last one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .kalman import OffsetDriftFilter
from .measurement import Measurement

log = logging.getLogger(__name__)


@dataclass
class SourceState:
    """What the clock knows of one source, for the status surface."""

    name: str
    last_offset: float | None = None
    last_error: float | None = None
    last_at: float | None = None
    accepted: int = 0
    rejected: int = 0
    failed: int = 0
    weight: float = 0.0  # share of the most recent update's information


@dataclass
class FusedClock:
    monotonic: Callable[[], float] = time.monotonic
    wall_at_start: float = field(default_factory=time.time)
    max_slew_ppm: float = 500.0
    step_limit: float = 0.128  # s: a start-up error beyond this is stepped, not slewed
    filter: OffsetDriftFilter = field(default_factory=OffsetDriftFilter)

    def __post_init__(self) -> None:
        self._mono_at_start = self.monotonic()
        self._filter_at = self._mono_at_start
        self._applied = 0.0  # s, added to the oscillator
        self._applied_at = self._mono_at_start
        self._handed_out = False
        self._synced = False
        self.sources: dict[str, SourceState] = {}

    # ---- reading the time -----------------------------------------------------------------
    def oscillator(self, mono: float | None = None) -> float:
        """The local oscillator: the wall time at start plus the monotonic time since."""
        m = self.monotonic() if mono is None else mono
        return self.wall_at_start + (m - self._mono_at_start)

    def now(self) -> float:
        """Fused time (s since the Unix epoch)."""
        mono = self.monotonic()
        self._slew_to(mono)
        self._handed_out = True
        return self.oscillator(mono) + self._applied

    def now_ms(self) -> float:
        return self.now() * 1000

    def error_bound(self) -> float:
        """An honest bound (s, ~3σ) on the fused time's error, holdover growth included."""
        mono = self.monotonic()
        residual = abs(self._estimate(mono) - self._applied)
        if not self._synced:
            return float("inf")
        dt = mono - self._filter_at
        f = self.filter
        sigma2 = f.p[0, 0] + 2 * dt * f.p[0, 1] + dt * dt * f.p[1, 1] + f.phase_noise * dt
        return 3 * max(sigma2, 0.0) ** 0.5 + residual

    # ---- feeding measurements ---------------------------------------------------------------
    def ingest(self, m: Measurement, system_minus_oscillator: float = 0.0) -> bool:
        """Fold in one source reading; returns whether it was accepted.

        Sources measure the reference against the system clock; `system_minus_oscillator`
        (time.time() − oscillator() at the reading) turns that into reference − oscillator.
        """
        state = self.sources.setdefault(m.source, SourceState(m.source))
        if not m.ok:
            state.failed += 1
            return False
        offset = m.offset + system_minus_oscillator
        variance = max(m.error, 1e-7) ** 2
        self._advance_filter(m.at)
        if not self._synced:
            self.filter.x[0] = offset
            self.filter.p[0, 0] = variance
            self._synced = True
            if not self._handed_out and abs(offset - self._applied) > self.step_limit:
                log.warning("clock: stepping %.3f s at start-up (from %s)", offset, m.source)
                self._applied = offset
            accepted = True
        else:
            prior = self.filter.p[0, 0]
            accepted = self.filter.update(offset, variance)
            state.weight = prior / (prior + variance) if accepted else 0.0
        state.last_offset, state.last_error, state.last_at = offset, m.error, m.at
        if accepted:
            state.accepted += 1
        else:
            state.rejected += 1
            log.warning("clock: %s reading %.6f s rejected as an outlier", m.source, offset)
        return accepted

    # ---- internals ---------------------------------------------------------------------------
    def _advance_filter(self, mono: float) -> None:
        if mono > self._filter_at:
            self.filter.predict(mono - self._filter_at)
            self._filter_at = mono

    def _estimate(self, mono: float) -> float:
        """The filter's offset extrapolated to `mono` with its drift."""
        return self.filter.offset + self.filter.drift * (mono - self._filter_at)

    def _slew_to(self, mono: float) -> None:
        dt = mono - self._applied_at
        if dt <= 0:
            return
        target = self._estimate(mono) if self._synced else self._applied
        limit = self.max_slew_ppm * 1e-6 * dt
        change = max(-limit, min(limit, target - self._applied))
        self._applied += change
        self._applied_at = mono

    def status(self) -> dict:
        """Sources, weights, offsets and the error bound: the GET /api/v1/time body."""
        bound = self.error_bound()
        return {
            # with no source configured (the embedded default) the show runs on the local
            # oscillator alone, and says so
            "running_on": "fused sources" if self._synced else "local oscillator",
            "synced": self._synced,
            "offset_s": self._applied,
            "drift_ppm": self.filter.drift * 1e6,
            "error_bound_s": None if bound == float("inf") else bound,
            "max_slew_ppm": self.max_slew_ppm,
            "sources": [vars(s) for s in self.sources.values()],
        }
