"""NTP as a clock source: four-timestamp offset and delay from one or more servers."""

from __future__ import annotations

import statistics
import time

import ntplib

from .measurement import Measurement


class NTPSource:
    """Reads one NTP server; never raises (an unreachable server is a failed measurement)."""

    def __init__(self, host: str, port: int = 123, version: int = 4, timeout: float = 1.0):
        self.host, self.port, self.version, self.timeout = host, port, version, timeout
        self.name = f"ntp:{host}:{port}"
        self._client = ntplib.NTPClient()

    def measure(self) -> Measurement:
        now = time.monotonic()
        try:
            r = self._client.request(self.host, self.version, self.port, self.timeout)
        except (ntplib.NTPException, OSError) as exc:
            return Measurement(self.name, 0.0, 0.0, float("inf"), now, False, str(exc))
        if r.stratum == 0 or r.stratum > 15:
            return Measurement(self.name, 0.0, 0.0, float("inf"), now, False, "unsynchronised")
        error = r.delay / 2 + r.root_dispersion + r.root_delay / 2
        return Measurement(self.name, r.offset, r.delay, error, now)


def consensus(readings: list[Measurement], max_deviations: float = 3.0) -> list[Measurement]:
    """Drop readings whose offset lies far from the others (median absolute deviation).

    Several servers agree on the time; a falseticker or a server that just stepped does not.
    A reading whose own error bound still reaches the median is kept however tight the
    others agree: the true time may lie anywhere in it (the four-timestamp offset is off by
    at most half the round trip), so only a reading whose interval misses the consensus is
    a falseticker. Fewer than three readings cannot outvote anyone: all are kept.
    """
    good = [m for m in readings if m.ok]
    if len(good) < 3:
        return good
    middle = statistics.median(m.offset for m in good)
    spread = statistics.median(abs(m.offset - middle) for m in good)
    # a floor on the spread: servers that agree to the microsecond must not reject jitter
    limit = max_deviations * max(spread * 1.4826, 1e-4)
    return [m for m in good if abs(m.offset - middle) <= max(limit, m.error)]
