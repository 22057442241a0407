"""Polls the configured sources off the event loop and feeds the FusedClock.

The poll interval adapts as NTP's does: short while the clock is settling or readings are
rejected, doubling up to a ceiling once they agree. Each interval is jittered, so a fleet of
servers started together does not poll in lock-step (one of the 2 a.m. failure modes). An
unreachable source gives one clear warning, never a crash or a stalled start-up.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Sequence
from typing import Any

from .devices import PHCSource, RTCSource
from .fused import FusedClock
from .ntp import NTPSource
from .ptp import PTPSource

log = logging.getLogger(__name__)


class SourcePoller:
    def __init__(
        self,
        clock: FusedClock,
        sources: list[Any],
        min_interval: float = 2.0,
        max_interval: float = 64.0,
    ) -> None:
        self.clock = clock
        self.sources = sources
        self.min_interval, self.max_interval = min_interval, max_interval
        self.interval = min_interval
        self._warned: set[str] = set()

    async def poll_once(self) -> int:
        """Read every source once (in threads: NTP requests block); returns how many agreed."""
        loop = asyncio.get_running_loop()
        readings = await asyncio.gather(
            *(loop.run_in_executor(None, s.measure) for s in self.sources)
        )
        accepted = 0
        for source, m in zip(self.sources, readings, strict=True):
            if not m.ok:
                if source.name not in self._warned:
                    log.warning("time source %s unavailable: %s", source.name, m.reason)
                    self._warned.add(source.name)
                self.clock.ingest(m)
                continue
            self._warned.discard(source.name)
            # the reading compares the reference with the system clock; the fused clock
            # runs on its own oscillator: hand over the difference at this moment
            accepted += self.clock.ingest(m, time.time() - self.clock.oscillator())
        return accepted

    async def run(self) -> None:
        """Poll until cancelled; returns at once when no source is configured."""
        while self.sources:
            accepted = await self.poll_once()
            if accepted:
                self.interval = min(self.max_interval, self.interval * 2)
            else:
                self.interval = self.min_interval
            await asyncio.sleep(self.interval * random.uniform(0.8, 1.2))


def sources_from(
    ntp_servers: list[str],
    ptp_sockets: list[str],
    phc_devices: Sequence[str] = (),
    rtc_devices: Sequence[str] = (),
) -> list[Any]:
    """Sources from settings: NTP servers as "host" or "host:port", ptp4l socket paths, PTP
    hardware clocks and RTCs as device paths."""
    sources: list[Any] = []
    for server in ntp_servers:
        host, _, port = server.rpartition(":") if ":" in server else (server, "", "123")
        sources.append(NTPSource(host, int(port)))
    sources += [PTPSource(socket) for socket in ptp_sockets]
    sources += [PHCSource(path) for path in phc_devices]
    return sources + [RTCSource(path) for path in rtc_devices]
