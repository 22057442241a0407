"""A Kalman filter over (offset, drift) of the local oscillator against a reference clock.

State x = [θ, f]: θ the offset (s) of the reference from the local clock, f its drift (s/s).
Between measurements θ grows by f·dt; white phase noise and a random-walk frequency make the
process noise. Each source reports θ with its own variance (from its jitter and delay), so a
precise source weighs more, and a measurement far outside what the filter expects (an NTP step
at 2 a.m.) is gated out instead of dragging the clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class OffsetDriftFilter:
    """Two-state Kalman filter; times in seconds."""

    # q_θ: white phase noise density (s²/s). A crystal wanders nanoseconds a second; 0.1 µs/√s
    # leaves room for timestamping noise and still lets the filter average PTP's µs jitter
    # (at 1e-12 it took most of each PTP reading as news, and the fused time jittered with it)
    phase_noise: float = 1e-14
    frequency_noise: float = 1e-16  # q_f: random-walk frequency density (s²/s³)
    gate_sigmas: float = 5.0  # innovations beyond this many σ are rejected as outliers
    x: np.ndarray = field(default_factory=lambda: np.zeros(2))
    p: np.ndarray = field(default_factory=lambda: np.diag([1.0, 1e-8]))
    rejected: int = 0

    def _transition(self, dt: float) -> tuple[np.ndarray, np.ndarray]:
        f = np.array([[1.0, dt], [0.0, 1.0]])
        qt, qf = self.phase_noise, self.frequency_noise
        q = np.array([[qt * dt + qf * dt**3 / 3, qf * dt**2 / 2], [qf * dt**2 / 2, qf * dt]])
        return f, f @ self.p @ f.T + q

    def predict(self, dt: float) -> None:
        """Advance the state by `dt` seconds."""
        f, self.p = self._transition(dt)
        self.x = f @ self.x

    def predicted_offset_variance(self, dt: float) -> float:
        """The offset's variance `dt` seconds on without a measurement (holdover)."""
        return float(self._transition(dt)[1][0, 0])

    def update(self, offset: float, variance: float) -> bool:
        """Fold in a measured offset with its variance; False when gated out as an outlier."""
        innovation = offset - self.x[0]
        s = self.p[0, 0] + variance
        if innovation * innovation > self.gate_sigmas**2 * s:
            self.rejected += 1
            return False
        k = self.p[:, 0] / s
        self.x = self.x + k * innovation
        self.p = self.p - np.outer(k, self.p[0, :])
        self.p = (self.p + self.p.T) / 2  # keep it symmetric against rounding
        return True

    @property
    def offset(self) -> float:
        return float(self.x[0])

    @property
    def drift(self) -> float:
        return float(self.x[1])

    @property
    def offset_sigma(self) -> float:
        """One standard deviation of the offset estimate (s): the honest error bound's basis."""
        return float(np.sqrt(max(self.p[0, 0], 0.0)))
