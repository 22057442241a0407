"""Polls the configured sources off the event loop and feeds the FusedClock.

NTP, the RTC and the like are polled at an interval that adapts as NTP's does: short while
the clock is settling or readings are rejected, doubling up to a ceiling once they agree. PTP
readings (ptp4l, a PTP hardware clock) are local and cheap, and their microseconds are only
worth having fresh: they are read at a short fixed interval of their own. Each interval is
jittered, so a fleet of servers started together does not poll in lock-step (one of the 2 a.m.
failure modes). An unreachable source gives one clear warning, never a crash or a stalled start-up.

Several NTP servers are read together each round and voted on (`ntp.consensus`) before the
clock sees them: a falseticker, or a server that just stepped, is counted as rejected for
that source and logged once, and never reaches the filter. PTP, PHC and RTC readings go to
the clock as they are.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import Any

from .devices import PHCSource, RTCSource
from .fused import FusedClock
from .instant import monotonic_and_system
from .measurement import Measurement, TimeSource
from .ntp import NTPSource, consensus
from .ptp import PTPSource

log = logging.getLogger(__name__)


class SourcePoller:
    def __init__(
        self,
        clock: FusedClock,
        sources: Sequence[TimeSource],
        min_interval: float = 2.0,
        max_interval: float = 64.0,
        ptp_interval: float = 1.0,
    ) -> None:
        self.clock = clock
        self.sources = sources
        self.ptp = [s for s in sources if isinstance(s, PTPSource | PHCSource)]
        self.rest = [s for s in sources if s not in self.ptp]
        self.min_interval, self.max_interval = min_interval, max_interval
        self.ptp_interval = ptp_interval
        self.interval = min_interval
        self._warned: set[str] = set()
        self._outvoted: set[str] = set()

    async def poll_once(self, sources: Sequence[TimeSource] | None = None) -> int:
        """Read the sources (all by default) once, in threads (NTP requests block); returns
        how many readings the clock accepted."""
        sources = self.sources if sources is None else sources
        loop = asyncio.get_running_loop()
        readings = await asyncio.gather(*(loop.run_in_executor(None, s.measure) for s in sources))
        voted = self._vote(
            [m for s, m in zip(sources, readings, strict=True) if isinstance(s, NTPSource)]
        )
        accepted = 0
        # tightest first: on a fresh clock the first good reading sets the start-up step,
        # and a reply that waited 10 ms in a busy server's queue may be 5 ms off
        pairs = sorted(zip(sources, readings, strict=True), key=lambda p: p[1].error)
        for source, m in pairs:
            if not m.ok:
                if source.name not in self._warned:
                    log.warning("time source %s unavailable: %s", source.name, m.reason)
                    self._warned.add(source.name)
                self.clock.ingest(m)
                continue
            self._warned.discard(source.name)
            if m.source in voted:
                self._outvote(m)
                continue
            # the reading compares the reference with the system clock; the fused clock
            # runs on its own oscillator: hand over the difference at this moment
            accepted += self.clock.ingest(m, self._system_minus_oscillator())
        return accepted

    def _system_minus_oscillator(self) -> float:
        mono, system = monotonic_and_system()
        return system - self.clock.oscillator(mono)

    def _vote(self, ntp: list[Measurement]) -> set[str]:
        """The NTP sources whose reading this round the others outvote."""
        if len(ntp) < 2:
            return set()
        kept = {m.source for m in consensus(ntp)}
        self._outvoted -= kept  # back in agreement: a later disagreement is logged again
        return {m.source for m in ntp if m.ok and m.source not in kept}

    def _outvote(self, m: Measurement) -> None:
        """Count a falseticker's reading as rejected for its source; the filter never sees it."""
        self.clock.refuse(m, self._system_minus_oscillator())
        if m.source not in self._outvoted:
            log.warning(
                "time source %s disagrees with the other NTP servers (reads %+.6f s): "
                "outvoted until it agrees again",
                m.source,
                m.offset,
            )
            self._outvoted.add(m.source)

    async def run(self) -> None:
        """Poll until cancelled; returns at once when no source is configured."""
        await asyncio.gather(self._run_adaptive(), self._run_ptp())

    async def _run_adaptive(self) -> None:
        while self.rest:
            accepted = await self.poll_once(self.rest)
            if accepted:
                self.interval = min(self.max_interval, self.interval * 2)
            else:
                self.interval = self.min_interval
            await asyncio.sleep(self.interval * random.uniform(0.8, 1.2))

    async def _run_ptp(self) -> None:
        while self.ptp:
            await self.poll_once(self.ptp)
            await asyncio.sleep(self.ptp_interval * random.uniform(0.9, 1.1))


def sources_from(
    ntp_servers: list[str],
    ptp_sockets: list[str],
    phc_devices: Sequence[str] = (),
    rtc_devices: Sequence[str] = (),
    ntp_version: int = 4,
) -> list[Any]:
    """Sources from settings: NTP servers as "host" or "host:port" (asked in NTP version
    `ntp_version`), ptp4l socket paths, PTP hardware clocks and RTCs as device paths."""
    sources: list[Any] = []
    for server in ntp_servers:
        host, _, port = server.rpartition(":") if ":" in server else (server, "", "123")
        sources.append(NTPSource(host, int(port), version=ntp_version))
    sources += [PTPSource(socket) for socket in ptp_sockets]
    sources += [PHCSource(path) for path in phc_devices]
    return sources + [RTCSource(path) for path in rtc_devices]
