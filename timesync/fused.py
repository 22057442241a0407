"""FusedClock: the local oscillator steered toward the reference sources, never backwards.

Time out = oscillator + applied offset. The Kalman filter estimates the reference's offset
and drift from every accepted measurement; the applied offset follows that estimate at a
bounded slew rate (default 500 ppm), so the time never jumps and never runs backwards. A
reading far from the estimate (an NTP server that steps by a second at 2 a.m.) is gated out as
an outlier. Where other sources still agree with the estimate, it stays out: they outvote it.
Where it is the only source reporting, the clock cannot tell a glitch from a reference that
moved for good, so it waits: after `follow_after` readings that agree with one another it takes
their offset as the new estimate and slews there faster (`follow_slew_ppm`), as ntpd's spike
detector and chrony's slewing do; meanwhile its error bound covers the outlying readings too, in
case they are the truth. Only at start-up, before any time was handed out, may a large error be
stepped away, and it is logged. Without measurements the filter's drift carries the clock
(holdover), its error bound growing honestly with the time since the last one.

Each reading's variance is its source's jitter as observed (a source's own error is a bound:
NTP's, half the round trip, is several times its real spread), plus the worst case of the
delay the reading waited beyond the source's recent minimum: one that sat 20 ms in one queue
can be 10 ms off, and weighs accordingly. A source's bias is no jitter, and no averaging
removes it: while a source with a tighter bound reports, each reading also counts the bias
bound it has beyond that one. So PTP (±1 µs) outweighs NTP (half a round trip) even where
NTP's readings are as steady as PTP's, as on loopback, and NTP carries the clock when PTP
is gone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .instant import monotonic_and_system
from .kalman import OffsetDriftFilter
from .measurement import Measurement
from .source import SourceState

log = logging.getLogger(__name__)


@dataclass
class FusedClock:
    monotonic: Callable[[], float] = time.monotonic
    wall_at_start: float | None = None  # default: the system clock when the monotonic is read
    max_slew_ppm: float = 500.0
    step_limit: float = 0.128  # s: a start-up error beyond this is stepped, not slewed
    # a lone source's outlying readings that agree, in a row, before the clock follows them
    follow_after: int = 4
    # the slew while catching up with a followed step: 1 s in under a minute, the time still
    # running forward at 98 % of its rate (chrony's default ceiling is 83,333 ppm)
    follow_slew_ppm: float = 20000.0
    filter: OffsetDriftFilter = field(default_factory=OffsetDriftFilter)

    def __post_init__(self) -> None:
        self._mono_at_start = self.monotonic()
        wall = self.wall_at_start
        if wall is None:
            # the clock the oscillator copies, read at the same instant as the monotonic one
            if self.monotonic is time.monotonic:
                self._mono_at_start, wall = monotonic_and_system()
            else:
                wall = time.time()
        self.wall_at_start = self._wall = wall
        self._filter_at = self._mono_at_start
        self._applied = 0.0  # s, added to the oscillator
        self._applied_at = self._mono_at_start
        self._handed_out = False
        self._synced = False
        self._bias = 0.0  # s, a bound on the estimate's bias: its sources' mixed as it was
        self._catching_up = False  # slewing at follow_slew_ppm toward a followed step
        self.sources: dict[str, SourceState] = {}

    # ---- reading the time -----------------------------------------------------------------
    def oscillator(self, mono: float | None = None) -> float:
        """The local oscillator: the wall time at start plus the monotonic time since."""
        m = self.monotonic() if mono is None else mono
        return self._wall + (m - self._mono_at_start)

    def now(self) -> float:
        """Fused time (s since the Unix epoch)."""
        mono = self.monotonic()
        self._slew_to(mono)
        self._handed_out = True
        return self.oscillator(mono) + self._applied

    def now_ms(self) -> float:
        return self.now() * 1000

    def at(self, mono: float) -> float:
        """Fused time (s) at monotonic time `mono`, near now: for stamping events planned on
        the monotonic clock (the media clock's samples) as the viewers will read them."""
        now = self.monotonic()
        self._slew_to(now)
        self._handed_out = True  # a stamp is handed out time: no start-up step after it
        return self.oscillator(mono) + self._applied

    def error_bound(self) -> float:
        """An honest bound (s) on the fused time's error: ~3σ of the estimate, holdover growth
        included, plus the bias its sources may carry, plus what is still being slewed."""
        mono = self.monotonic()
        residual = abs(self._estimate(mono) - self._applied)
        if not self._synced:
            return float("inf")
        sigma2 = self.filter.predicted_offset_variance(mono - self._filter_at)
        bound = 3 * max(sigma2, 0.0) ** 0.5 + self._bias + residual
        # a lone source's outlying readings may be the truth: until they are followed or
        # disowned, the bound reaches them; so may a reading taken that the estimate did not
        # reach, until the source's next
        for state in self.sources.values():
            for at, offset, error in state.unheeded():
                ahead = offset + self.filter.drift * (mono - at)
                bound = max(bound, abs(ahead - self._applied) + error)
        return bound

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
        # the slew so far went toward the estimate as it stood, at the rate that held: bring it
        # up to now before the reading moves the target (or starts a catch-up), or the next
        # read would apply the new target and rate to the time before this reading too
        self._slew_to(self.monotonic())
        offset = m.offset + system_minus_oscillator
        state.remember(m)
        best_bias = min(
            s.bias_bound for s in self.sources.values() if s is state or s.current(m.at)
        )
        variance = state.variance(m, best_bias)
        self._advance_filter(m.at)
        if not self._synced:
            self.filter.x[0] = offset
            self.filter.p[0, 0] = variance
            # the prior's offset-drift covariance went with its offset: kept beside a variance
            # this small, it left the matrix not positive (a negative variance two readings
            # on, and every later reading gated out)
            self.filter.p[0, 1] = self.filter.p[1, 0] = 0.0
            self._synced = True
            self._bias, state.weight = state.bias_of(m), 1.0
            if not self._handed_out and abs(offset - self._applied) > self.step_limit:
                log.warning("clock: stepping %.3f s at start-up (from %s)", offset, m.source)
                self._applied = offset
            accepted = True
        else:
            prior = self.filter.p[0, 0]
            accepted = self.filter.update(offset, variance)
            state.weight = prior / (prior + variance) if accepted else 0.0
            # the estimate moved this share toward the reading: so did its worst-case bias
            self._bias += state.weight * (state.bias_of(m) - self._bias)
        state.last_offset, state.last_error, state.last_at = offset, m.error, m.at
        state.learn(offset, m.at, m.error, self.filter.drift, float(self.filter.p[1, 1]))
        state._unreached = None
        if accepted and abs(offset - self.filter.offset) > m.error and self._alone(state, m.at):
            state._unreached = (m.at, offset, m.error)
        if accepted:
            state.accepted += 1
            state.accepted_at = m.at
            state._outlying.clear()
        elif self._alone(state, m.at) and self._outlies_again(state, m, offset, variance):
            self._follow(state, m.at)
            accepted = True
        else:
            state.rejected += 1
            log.warning("clock: %s reading %.6f s rejected as an outlier", m.source, offset)
        return accepted

    def refuse(self, m: Measurement, system_minus_oscillator: float = 0.0) -> None:
        """Count a reading refused before the filter (an NTP server the others outvote)."""
        state = self.sources.setdefault(m.source, SourceState(m.source))
        state.last_offset = m.offset + system_minus_oscillator
        state.last_error, state.last_at = m.error, m.at
        state.rejected += 1
        state.weight = 0.0

    # ---- a lone source that moved ------------------------------------------------------------
    def _alone(self, state: SourceState, now: float) -> bool:
        """Whether no other source has lately given a reading the filter took: then nothing
        outvotes this one."""
        return not any(s.current(now) for s in self.sources.values() if s is not state)

    def _outlies_again(
        self, state: SourceState, m: Measurement, offset: float, variance: float
    ) -> bool:
        """Remember an outlying reading of a lone source; True once `follow_after` of them in
        a row agree with one another (within the filter's gate, the drift taken out). One that
        disagrees with the first starts the run anew."""
        run = state._outlying
        if run:
            at0, offset0, variance0, _ = run[0]
            apart = offset - offset0 - self.filter.drift * (m.at - at0)
            if apart * apart > self.filter.gate_sigmas**2 * (variance + variance0):
                run.clear()
        run.append((m.at, offset, variance, m.error))
        return len(run) >= self.follow_after

    def _follow(self, state: SourceState, now: float) -> None:
        """Take a lone source's run of agreeing outlying readings as the new estimate (the
        filter was just advanced to `now`), and catch up with it at `follow_slew_ppm`."""
        run, drift = state._outlying, self.filter.drift
        weights = [1 / v for _, _, v, _ in run]
        offset = sum(
            w * (o + drift * (now - at)) for w, (at, o, _, _) in zip(weights, run, strict=True)
        ) / sum(weights)
        moved = offset - self.filter.offset
        self.filter.x[0] = offset
        self.filter.p[0, 0] = 1 / sum(weights)
        self.filter.p[0, 1] = self.filter.p[1, 0] = 0.0
        # each reading of the run lies within its own bound of the truth: so does their mean
        self._bias = sum(w * e for w, (*_, e) in zip(weights, run, strict=True)) / sum(weights)
        self._catching_up = True
        state.weight, state.followed = 1.0, state.followed + 1
        state.accepted += 1
        state.accepted_at = now
        run.clear()
        log.warning(
            "clock: %s moved %+.6f s and is the only source reporting: following it, slewing",
            state.name,
            moved,
        )

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
        ppm = self.follow_slew_ppm if self._catching_up else self.max_slew_ppm
        limit = ppm * 1e-6 * dt
        gap = target - self._applied
        self._applied += max(-limit, min(limit, gap))
        self._applied_at = mono
        # caught up when this slew reached the target, not when what is left would fit the
        # next one: that left up to a read's worth of catching up (4 ms at 0.2 s) to 500 ppm
        if self._catching_up and abs(gap) <= limit:
            self._catching_up = False

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
            "catching_up": self._catching_up,  # slewing at follow_slew_ppm after a step
            "sources": [s.public() for s in self.sources.values()],
        }
