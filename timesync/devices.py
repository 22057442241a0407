"""Clock devices read directly: a PTP hardware clock (/dev/ptpN) and the RTC (/dev/rtcN).

A PHC is read with `clock_gettime` on its dynamic clock id, bracketed by two readings of the
system clock; the narrowest of a few brackets wins (as `phc2sys` does). The RTC ticks in whole
seconds, so it is read at a seconds edge. Where a device does not exist the source is absent
and says so; a device that cannot be read is a failed reading. Neither ever raises.
"""

from __future__ import annotations

import calendar
import fcntl
import os
import struct
import time
from collections.abc import Callable
from pathlib import Path

from .measurement import Measurement

PTP_UTC_OFFSET_S = 37.0  # a PHC runs on the PTP timescale (TAI): 37 s ahead of UTC since 2017
RTC_RD_TIME = 0x80247009  # _IOR('p', 0x09, struct rtc_time): nine ints
RTC_TIME = struct.Struct("9i")


def phc_clock_id(fd: int) -> int:
    """The dynamic POSIX clock id of an open /dev/ptpN (the kernel's FD_TO_CLOCKID)."""
    return ((~fd) << 3) | 3


def _read_phc(fd: int) -> float:
    return time.clock_gettime(phc_clock_id(fd))


def _failed(name: str, reason: str) -> Measurement:
    return Measurement(name, 0.0, 0.0, float("inf"), time.monotonic(), False, reason)


class DeviceSource:
    """A clock device opened for one reading: absent when missing, failed when unreadable."""

    path: str
    name: str
    kind = "device"  # what the device is: "absent: no <kind> at <path>"
    unreadable = "not a clock device"  # the reason when it opens but cannot be read

    def measure(self) -> Measurement:
        if not Path(self.path).exists():
            return _failed(self.name, f"absent: no {self.kind} at {self.path}")
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            return _failed(self.name, f"cannot open: {exc}")
        try:
            return self.read_device(fd)
        except OSError as exc:
            return _failed(self.name, f"{self.unreadable}: {exc}")
        finally:
            os.close(fd)

    def read_device(self, fd: int) -> Measurement:
        raise NotImplementedError


class PHCSource(DeviceSource):
    """A PTP hardware clock's offset from the system clock (UTC), read directly."""

    kind = "PTP hardware clock"
    unreadable = "not a PTP clock"

    def __init__(
        self,
        path: str = "/dev/ptp0",
        utc_offset_s: float = PTP_UTC_OFFSET_S,
        brackets: int = 5,
        read: Callable[[int], float] = _read_phc,
    ) -> None:
        self.path, self.utc_offset_s, self.brackets, self._read = path, utc_offset_s, brackets, read
        self.name = f"phc:{path}"

    def read_device(self, fd: int) -> Measurement:
        best: tuple[float, float] | None = None
        for _ in range(self.brackets):
            before = time.clock_gettime(time.CLOCK_REALTIME)
            phc = self._read(fd)
            after = time.clock_gettime(time.CLOCK_REALTIME)
            width = after - before
            if best is None or width < best[0]:
                best = (width, phc - self.utc_offset_s - (before + after) / 2)
        if best is None:
            raise ValueError("brackets must be at least 1")
        width, offset = best
        return Measurement(self.name, offset, width, width / 2 + 1e-6, time.monotonic())


def rtc_epoch(fields: tuple[int, ...]) -> int:
    """Seconds since the epoch of a `struct rtc_time` (the RTC keeps UTC)."""
    sec, minute, hour, mday, mon, year = fields[:6]
    return calendar.timegm((year + 1900, mon + 1, mday, hour, minute, sec, 0, 0, 0))


def _read_rtc(fd: int) -> int:
    raw = fcntl.ioctl(fd, RTC_RD_TIME, bytes(RTC_TIME.size))
    return rtc_epoch(RTC_TIME.unpack(raw))


class RTCSource(DeviceSource):
    """The real-time clock: one-second ticks, read at a seconds edge for a ms-level offset.

    A poor reference (its crystal drifts by ppm and it ticks in whole seconds) but one that
    keeps running with every network source gone: the holdover check of last resort.
    """

    kind = "RTC"
    unreadable = "not an RTC"

    def __init__(
        self, path: str = "/dev/rtc0", read: Callable[[int], int] = _read_rtc, poll_s: float = 0.001
    ) -> None:
        self.path, self._read, self.poll_s = path, read, poll_s
        self.name = f"rtc:{path}"

    def read_device(self, fd: int) -> Measurement:
        first = self._read(fd)
        deadline = time.monotonic() + 1.5
        while True:  # wait for the tick: the moment the RTC's seconds change
            before = time.time()
            now = self._read(fd)
            after = time.time()
            if now != first:
                break
            if time.monotonic() > deadline:
                return _failed(self.name, "the RTC is not ticking")
            time.sleep(self.poll_s)
        # the tick happened between the previous poll and `after`: bound it by the poll step
        offset = now - after
        error = (after - before) + self.poll_s
        return Measurement(self.name, offset, after - before, error, time.monotonic())
