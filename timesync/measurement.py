"""What every clock source reports: one reading of the reference against the local clock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Measurement:
    """One reading of a source: the reference's offset from the local clock, and its quality."""

    source: str
    offset: float  # s, reference − local
    delay: float  # s, round trip
    error: float  # s, a bound on this reading's error (half the delay plus dispersion)
    at: float  # time.monotonic() of the reading
    ok: bool = True
    reason: str = ""


class TimeSource(Protocol):
    """A source the fused clock reads: NTP servers, ptp4l, PTP hardware clocks, RTCs."""

    name: str

    def measure(self) -> Measurement:
        """One reading (blocking: a network exchange or a device read)."""
        ...
