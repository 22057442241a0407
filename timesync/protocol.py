"""The four-timestamp exchange (as NTP, and the browser `timesync` event)."""

from __future__ import annotations


def offset_and_delay(t0: float, t1: float, t2: float, t3: float) -> tuple[float, float]:
    """Client sent at t0, server received at t1 and replied at t2, client got it at t3.

    offset = server − client = ((t1 − t0) + (t2 − t3)) / 2; delay = (t3 − t0) − (t2 − t1).
    """
    return ((t1 - t0) + (t2 - t3)) / 2, (t3 - t0) - (t2 - t1)
