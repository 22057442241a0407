"""The local oscillator clock: wall time anchored once, then advanced by the monotonic clock.

It never steps (an NTP step of the system clock at 2 a.m. does not move it) and never goes
backwards. NTP and PTP sources and their fusion build on it (timesync's later parts).
"""

from __future__ import annotations

import time


class OscillatorClock:
    """Milliseconds since the Unix epoch, from the monotonic clock after one anchor reading."""

    source = "oscillator"

    def __init__(self) -> None:
        self._anchor_wall_ns = time.time_ns()
        self._anchor_mono_ns = time.monotonic_ns()

    def now_ns(self) -> int:
        return self._anchor_wall_ns + (time.monotonic_ns() - self._anchor_mono_ns)

    def now_ms(self) -> float:
        return self.now_ns() / 1e6

    def wall_of_monotonic(self, monotonic_s: float) -> float:
        """The clock's reading (ms) at a given time.monotonic() value."""
        return (self._anchor_wall_ns + (monotonic_s * 1e9 - self._anchor_mono_ns)) / 1e6
