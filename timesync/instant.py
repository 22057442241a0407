"""The monotonic clock and the system clock read at one instant.

A Python call takes a microsecond or more (more after a sleep): reading one clock after the
other hands their difference over with that much error, as large as PTP's jitter. The system
clock is read on both sides of the monotonic one and the narrowest of three tries kept, as
phc2sys reads a PTP hardware clock.
"""

from __future__ import annotations

import time


def monotonic_and_system(since_ns: int = 0) -> tuple[float, float]:
    """(monotonic s, system s since `since_ns`) at one moment. Seconds since 1970 as a float
    resolve only 0.24 µs: a measurement that needs better counts from its own start."""
    tries = []
    for _ in range(3):
        before = time.time_ns()
        mono = time.monotonic()
        after = time.time_ns()
        tries.append((after - before, mono, ((before + after) // 2 - since_ns) / 1e9))
    _, mono, system = min(tries)
    return mono, system
