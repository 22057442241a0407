"""NTP as a clock source: four-timestamp offset and delay from one or more servers.

The exchange is timed by the kernel where it can: Linux stamps the request as it leaves and
the reply as it arrives (SO_TIMESTAMPING, software stamps). Stamps taken in Python around
`sendto` and `recvfrom` carry the interpreter's and the socket layer's time, and not equally
on the way out and back: against a chronyd on loopback they biased every offset by ~20 µs,
more than the jitter a filter can average away. Kernel stamps bring that to a few µs (chrony
itself still stamps its reply in user space). ntplib supplies the packet format; the
timestamps stay integers of nanoseconds, because an NTP-era float has only 0.5 µs steps.
"""

from __future__ import annotations

import select
import socket
import struct
import time

import ntplib

from .measurement import Measurement
from .protocol import offset_and_delay

_NTP_EPOCH = ntplib.NTP.NTP_DELTA  # s from 1900 to 1970
_NS = 1_000_000_000
# Linux's socket options (asm-generic/socket.h, linux/net_tstamp.h); Python names none of them
_SO_TIMESTAMPING = 37
_TX_SOFTWARE, _RX_SOFTWARE, _REPORT_SOFTWARE, _OPT_TSONLY = 1 << 1, 1 << 3, 1 << 4, 1 << 11
_STAMP_FLAGS = _TX_SOFTWARE | _RX_SOFTWARE | _REPORT_SOFTWARE | _OPT_TSONLY
_MSG_ERRQUEUE = 0x2000
_TX_STAMP_WAIT_S = 0.005  # the send stamp is queued before the reply arrives, on loopback too


def to_ntp(ns: int) -> int:
    """Unix nanoseconds as a 64-bit NTP timestamp (32.32 fixed point from 1900)."""
    seconds, frac = divmod(ns, _NS)
    return ((seconds + _NTP_EPOCH) << 32) | ((frac << 32) // _NS)


def from_ntp(stamp: int) -> int:
    """A 64-bit NTP timestamp as Unix nanoseconds."""
    return ((stamp >> 32) - _NTP_EPOCH) * _NS + (((stamp & 0xFFFFFFFF) * _NS) >> 32)


class NTPSource:
    """Reads one NTP server; never raises (an unreachable server is a failed measurement)."""

    def __init__(self, host: str, port: int = 123, version: int = 4, timeout: float = 1.0):
        self.host, self.port, self.version, self.timeout = host, port, version, timeout
        self.name = f"ntp:{host}:{port}"
        self.kernel_stamps = False  # whether the last exchange was timed by the kernel

    def measure(self) -> Measurement:
        now = time.monotonic()
        try:
            reply, t1, t4 = self._exchange()
        except (OSError, ntplib.NTPException) as exc:
            reason = str(exc) or "no reply"
            return Measurement(self.name, 0.0, 0.0, float("inf"), now, False, reason)
        stats = ntplib.NTPStats()
        stats.from_data(reply)
        if stats.leap == 3 or stats.stratum == 0 or stats.stratum > 15:
            return Measurement(self.name, 0.0, 0.0, float("inf"), now, False, "unsynchronised")
        t2, t3 = (from_ntp(v) for v in struct.unpack_from("!QQ", reply, 32))
        offset, delay = offset_and_delay(t1, t2, t3, t4)
        offset, delay = offset / _NS, max(delay, 0) / _NS
        error = delay / 2 + stats.root_dispersion + stats.root_delay / 2
        return Measurement(self.name, offset, delay, error, now)

    def _exchange(self) -> tuple[bytes, int, int]:
        """Send one client request; the reply, and when the request left and the reply came."""
        family, _, _, _, address = socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            try:
                sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPING, _STAMP_FLAGS)
            except OSError:  # not Linux: Python's stamps only
                pass
            sock.connect(address)
            sock.settimeout(self.timeout)
            request = bytearray(ntplib.NTPPacket(mode=3, version=self.version).to_data())
            sent = time.time_ns()
            struct.pack_into("!Q", request, 40, to_ntp(sent))
            sock.send(request)
            while True:  # a late reply to someone else's request is not ours: wait on
                reply, ancillary, _, _ = sock.recvmsg(256, 256)
                arrived = time.time_ns()
                if len(reply) >= 48 and reply[24:32] == request[40:48]:
                    break
            rx, tx = _kernel_stamp(ancillary), _sent_stamp(sock)
            self.kernel_stamps = rx is not None and tx is not None
            if rx is not None and tx is not None:
                sent, arrived = tx, rx
            return bytes(reply), sent, arrived


def _kernel_stamp(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The software stamp in SCM_TIMESTAMPING ancillary data, in Unix nanoseconds."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPING and len(data) >= 16:
            seconds, nanoseconds = struct.unpack_from("qq", data)
            if seconds or nanoseconds:
                return seconds * _NS + nanoseconds
    return None


def _sent_stamp(sock: socket.socket) -> int | None:
    """The kernel's stamp of the request leaving, from the socket's error queue, if any."""
    deadline = time.monotonic() + _TX_STAMP_WAIT_S
    while True:
        try:
            _, ancillary, _, _ = sock.recvmsg(1, 256, _MSG_ERRQUEUE | socket.MSG_DONTWAIT)
            return _kernel_stamp(ancillary)
        except (BlockingIOError, InterruptedError):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            select.select([], [], [sock], left)
        except OSError:
            return None


def consensus(readings: list[Measurement], margin: float = 3e-4) -> list[Measurement]:
    """Drop the falsetickers: readings whose interval agrees with no majority of the others.

    Several servers agree on the time; a falseticker or a server that just stepped does not.
    Each reading says the true offset lies within its error bound (the four-timestamp offset
    is off by at most half the round trip), so two readings agree when their intervals,
    widened by `margin` for jitter, overlap; a reading is kept when it agrees with more than
    half of them, itself included. This is NTP's own test, not a distance from the median: a
    server answered late reads up to half its longer round trip off, and two such must not
    outvote the one answered at once, whose tight interval lies inside theirs. Fewer than
    three readings cannot outvote anyone: all are kept.
    """
    good = [m for m in readings if m.ok]
    if len(good) < 3:
        return good

    def agree(a: Measurement, b: Measurement) -> bool:
        return abs(a.offset - b.offset) <= a.error + b.error + margin

    return [m for m in good if 2 * sum(agree(m, n) for n in good) > len(good)]
