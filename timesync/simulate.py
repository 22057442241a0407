"""Clock sources on a simulated timeline: the FusedClock tested and benchmarked against truth.

A simulated monotonic clock moves only when the runner advances it, so ten minutes of polling
run in a fraction of a second. The reference is the truth the sources try to report: an offset
from the local oscillator that grows with the crystal's drift, the drift itself wandering
slowly (temperature, ageing). PTP reads it to a microsecond. NTP reads it through a network
whose queues delay each direction differently: the offset error is half the difference, so a
reading that waited longer is worse, and now and then one direction stalls for 20 ms (a delay
spike: a 10 ms offset error, with a delay that says so). Either source can fall silent, and an
NTP server can step by a second at a chosen moment.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .fused import FusedClock
from .measurement import Measurement


class SimClock:
    """A monotonic clock that moves only when advanced."""

    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@dataclass
class Reference:
    """The truth as reference − oscillator (s): an offset, a drift, and the drift's slow walk."""

    offset: float = 0.300
    drift: float = 20e-6  # a server crystal is off by tens of ppm
    wander: float = 1e-18  # s²/s³, random-walk frequency: ~1e-8 over a few minutes
    # (s into the run, s): the reference itself moves for good then (a corrected server)
    steps: Sequence[tuple[float, float]] = ()
    elapsed: float = 0.0

    def advance(self, dt: float, rng: np.random.Generator) -> None:
        self.offset += self.drift * dt
        self.drift += rng.normal(0.0, (self.wander * dt) ** 0.5)
        end = self.elapsed + dt
        self.offset += sum(size for at, size in self.steps if self.elapsed < at <= end)
        self.elapsed += dt


@dataclass
class SimSource:
    """What a source shares: its name, poll interval, and when it is silent."""

    name: str
    every: float  # s between readings
    down: Sequence[tuple[float, float]] = ()  # (from, to) s into the run: no answer

    def poll(self, truth: float, at: float, elapsed: float, rng) -> Measurement:
        if any(start <= elapsed < end for start, end in self.down):
            return Measurement(self.name, 0.0, 0.0, float("inf"), at, False, "no answer")
        return self.read(truth, at, elapsed, rng)

    def read(self, truth: float, at: float, elapsed: float, rng) -> Measurement:
        raise NotImplementedError


@dataclass
class SimPTP(SimSource):
    """ptp4l as PTPSource reads it: gaussian noise, the error PTPSource would report."""

    name: str = "ptp"
    every: float = 1.0
    sigma: float = 1e-6
    path_delay: float = 20e-6

    def read(self, truth, at, elapsed, rng) -> Measurement:
        offset = truth + rng.normal(0.0, self.sigma)
        error = 1e-6 + 0.05 * self.path_delay  # PTPSource's formula
        return Measurement(self.name, offset, 2 * self.path_delay, error, at)


@dataclass
class SimNTP(SimSource):
    """An NTP server across a network: per-direction queueing, spikes, an optional step.

    Offset error = (out − back)/2 + host noise: the queueing part grows with the reading's
    excess delay (as in real NTP), the host part (scheduling, the server's own timestamping)
    does not. With the defaults the two make ~1 ms of jitter; a spike stalls one direction.
    """

    name: str = "ntp"
    every: float = 16.0
    one_way: float = 2e-3  # s, the quiet path each way
    queueing: float = 1e-3  # s, mean extra wait each way (exponential)
    host_noise: float = 0.7e-3  # s, σ of what the delay does not explain
    spike_chance: float = 0.03
    spike: float = 20e-3
    root_dispersion: float = 1e-4
    step_at: float | None = None  # s into the run: the server's time jumps by step_size
    step_size: float = 1.0

    def read(self, truth, at, elapsed, rng) -> Measurement:
        out = self.one_way + rng.exponential(self.queueing)
        back = self.one_way + rng.exponential(self.queueing)
        if rng.random() < self.spike_chance:
            if rng.random() < 0.5:
                out += self.spike
            else:
                back += self.spike
        offset = truth + (out - back) / 2 + rng.normal(0.0, self.host_noise)
        if self.step_at is not None and elapsed >= self.step_at:
            offset += self.step_size
        delay = out + back
        # NTPSource's bound: half the delay plus the server's dispersion (root delay 0 here)
        return Measurement(self.name, offset, delay, delay / 2 + self.root_dispersion, at)


@dataclass
class Trace:
    """What a run saw: the fused time against truth at every sample, each source's readings."""

    elapsed: np.ndarray  # s into the run, per sample
    fused: np.ndarray  # the fused time handed out (s; the oscillator starts at 0)
    error: np.ndarray  # fused − true time (s)
    bound: np.ndarray  # the clock's error_bound() at the sample
    readings: dict[str, list[tuple[float, float]]]  # source → (elapsed, reading − truth)
    cpu_s: float  # process CPU spent inside ingest() and now()
    seconds: float
    clock: FusedClock

    def window(self, start: float = 0.0, end: float = float("inf")) -> np.ndarray:
        return (self.elapsed >= start) & (self.elapsed < end)

    def source_errors(self, name: str, start: float = 0.0, end: float = float("inf")):
        return np.array([e for t, e in self.readings.get(name, []) if start <= t < end])

    def steps(self) -> np.ndarray:
        """How much the fused time moved between samples beyond the elapsed time (s)."""
        return np.diff(self.fused) - np.diff(self.elapsed)

    def worst_slew_ppm(self) -> float:
        return float(np.max(np.abs(self.steps()) / np.diff(self.elapsed))) * 1e6

    def backwards(self) -> int:
        """Samples at which the fused time was not later than at the one before."""
        return int(np.sum(np.diff(self.fused) <= 0))

    def first_reading(self, source: str, since: float) -> float:
        """When `source` first reported at or after `since` (s into the run)."""
        return min(t for t, _ in self.readings[source] if t >= since)

    def knowable(self, step_at: float, source: str = "ntp") -> np.ndarray:
        """The samples but those from a step of the reference at `step_at` to `source`'s first
        reading after it: nothing can know of the step before a reading says so."""
        return self.window(0, step_at) | self.window(self.first_reading(source, step_at))

    def uncovered(self, step_at: float, source: str = "ntp") -> np.ndarray:
        """Which knowable samples' error the bound did not cover."""
        return self.knowable(step_at, source) & (np.abs(self.error) > self.bound)


def run(
    sources: Sequence[SimSource],
    seconds: float,
    reference: Reference | None = None,
    seed: int = 0,
    sample_every: float = 0.1,
    **clock_options,
) -> Trace:
    """Poll each source at its interval and read the fused time every `sample_every` s.

    The first readings come before any time is handed out, so a large initial offset is the
    logged start-up step; after that every change is slewed.
    """
    rng = np.random.default_rng(seed)
    ref = reference or Reference()
    sim = SimClock()
    start = sim.t
    # the oscillator starts at 0 (wall_at_start): float64 then resolves well under a ns
    clock = FusedClock(monotonic=sim, wall_at_start=0.0, **clock_options)
    due = [0.0] * len(sources)
    readings: dict[str, list[tuple[float, float]]] = {s.name: [] for s in sources}
    rows, cpu = [], 0.0
    for i in range(round(seconds / sample_every) + 1):
        elapsed = i * sample_every
        for k, source in enumerate(sources):
            if elapsed + 1e-9 >= due[k]:
                due[k] += source.every
                m = source.poll(ref.offset, sim.t, elapsed, rng)
                if m.ok:
                    readings[source.name].append((elapsed, m.offset - ref.offset))
                t0 = time.process_time()
                clock.ingest(m)
                cpu += time.process_time() - t0
        t0 = time.process_time()
        now = clock.now()
        cpu += time.process_time() - t0
        truth = clock.oscillator() + ref.offset
        rows.append((elapsed, now, now - truth, clock.error_bound()))
        sim.t = start + (i + 1) * sample_every  # not +=: no rounding builds up
        ref.advance(sample_every, rng)
    a = np.array(rows)
    return Trace(a[:, 0], a[:, 1], a[:, 2], a[:, 3], readings, cpu, seconds, clock)


def percentiles(errors: np.ndarray) -> tuple[float, float]:
    """p50 and p99 of |error| (s); NaN for none."""
    if len(errors) == 0:
        return float("nan"), float("nan")
    e = np.abs(errors)
    return float(np.percentile(e, 50)), float(np.percentile(e, 99))


def lost_from(start: float) -> list[tuple[float, float]]:
    """A source that stops answering `start` s into the run, for good."""
    return [(start, float("inf"))]
