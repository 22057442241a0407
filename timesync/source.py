"""What the fused clock knows of one reference source: its recent delays and bounds, its
jitter as observed, and the readings the estimate does not reach while it reports alone."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from .measurement import Measurement


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
    jitter: float | None = None  # s, σ of this source's readings as observed
    pairs: int = 0  # successive readings compared so far
    interval: float = 0.0  # s, between this source's readings, smoothed
    accepted_at: float | None = None  # monotonic time of the last reading the filter took
    followed: int = 0  # steps of this source the clock followed (it was the only one)
    # outlying readings in a row while this source reported alone: (at, offset, variance, error)
    _outlying: list[tuple[float, float, float, float]] = field(default_factory=list, repr=False)
    # the last reading the filter took though the estimate lies outside the reading's own error
    # bound (a noisy reading's wide gate lets a step in at a small weight), while this source
    # reported alone: the truth may be where it says; (at, offset, error), until its next
    _unreached: tuple[float, float, float] | None = field(default=None, repr=False)
    _recent: deque = field(default_factory=lambda: deque(maxlen=16), repr=False)
    _last: tuple[float, float] | None = field(default=None, repr=False)

    def unheeded(self) -> Iterator[tuple[float, float, float]]:
        """Readings the estimate does not reach that may be the truth, (at, offset, error):
        the outlying ones in a row, and the last one taken at a small weight."""
        for at, offset, _, error in self._outlying:
            yield at, offset, error
        if self._unreached is not None:
            yield self._unreached

    def remember(self, m: Measurement) -> None:
        """Keep this reading's delay and bound among the recent ones."""
        self._recent.append((m.delay, m.error))

    def excess(self, m: Measurement) -> float:
        """The delay this reading waited beyond the source's recent minimum (s)."""
        return m.delay - min(d for d, _ in self._recent)

    def variance(self, m: Measurement, best_bias: float) -> float:
        """This reading's variance: the source's observed jitter (its own error bound until
        there is some), plus the worst case of the delay beyond the recent minimum (all of it
        on one side, half of it in offset), plus the bias this source may carry beyond the
        least-biased source now reporting (`best_bias`)."""
        jitter = max(m.error if self.jitter is None else self.jitter, 1e-7)
        return jitter**2 + (self.excess(m) / 2) ** 2 + max(self.bias_bound - best_bias, 0.0) ** 2

    def bias_of(self, m: Measurement) -> float:
        """What this reading may be off by that averaging does not remove: the source's bias
        bound, plus half the delay it waited beyond the minimum. Queueing may sit on one side
        only (a loaded uplink, a server slow to send its stamped reply): then every reading
        errs the same way, and their mean errs by their mean wait, not by its spread."""
        return self.bias_bound + self.excess(m) / 2

    def current(self, now: float) -> bool:
        """Whether the filter took a reading of this source lately: within four of its own
        poll intervals (a falseticker's or an outlier's tight bound sets no standard)."""
        return self.accepted_at is not None and now - self.accepted_at <= 4 * max(self.interval, 1)

    @property
    def bias_bound(self) -> float:
        """What no averaging removes: the tightest error bound among the recent readings (an
        NTP path's asymmetry, up to half its shortest round trip, looks like a true offset)."""
        return min(e for _, e in self._recent)

    def learn(self, offset: float, at: float, error: float, drift: float, drift_var: float):
        """Fold the change since this source's previous reading into its jitter.

        Two readings dt apart differ by the noise of both plus the drift over dt: the filter's
        drift is taken out and so is what it still doubts of it (a cold start is not jitter).
        The filter's own process noise plays no part, so the estimate cannot feed on itself.
        Rejected readings count too: a source noisier than its bound claims must be able to
        teach that, or the gate would keep refusing it. A step is one outlying pair: each pair
        counts for at most 5 σ of the present estimate.
        """
        if self._last is None:
            self.jitter = max(error, 1e-7)  # until seen otherwise, the source's own bound
        else:
            o, t = self._last
            dt = at - t
            self.interval += (dt - self.interval) / min(self.pairs + 1, 8)
            change = offset - o - drift * dt
            sample = max(change * change - drift_var * dt * dt, 0.0) / 2
            j2 = (self.jitter or 1e-7) ** 2  # set at the first reading
            self.pairs += 1
            # the bound counts as 4 readings; ~64 pairs remembered
            j2 += (min(sample, 25 * j2) - j2) / min(self.pairs + 4, 64)
            self.jitter = max(j2**0.5, 1e-8)
        self._last = (offset, at)

    def public(self) -> dict:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}
