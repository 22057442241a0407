"""A tiny NTP server for the tests and the benches: answers on loopback with an injected offset
(or not at all).

chrony serves this machine's own clock; to test offsets and steps, and to step the only source
of a real run of the show (`bench nights`), a server is needed whose time is off by a known
amount. `offset` and `silent` may be changed while it runs (a
step at a chosen moment); `jitter` adds gaussian noise (σ, s) to each reply's clock.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
import time

import ntplib

from timesync.ntp import _REPORT_SOFTWARE, _RX_SOFTWARE, _SO_TIMESTAMPING, _kernel_stamp, to_ntp


class NTPResponder:
    def __init__(
        self, offset: float = 0.0, stratum: int = 2, jitter: float = 0.0, seed: int | None = None
    ) -> None:
        self.offset = offset
        self.stratum = stratum
        self.jitter = jitter
        self._rng = random.Random(seed)
        self.silent = False
        self.bogus_origin = False  # answer with an origin stamp that is not the request's
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        # the kernel stamps each request's arrival: a thread woken under load (the client's
        # process holds the GIL) stamped it 100-200 µs late, reading as a 50-100 µs offset
        try:
            self._sock.setsockopt(
                socket.SOL_SOCKET, _SO_TIMESTAMPING, _RX_SOFTWARE | _REPORT_SOFTWARE
            )
        except OSError:  # not Linux: Python's stamp
            pass
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> NTPResponder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, ancillary, _, addr = self._sock.recvmsg(1024, 256)
            except TimeoutError:
                continue
            stamp = _kernel_stamp(ancillary)
            # one noise draw for both timestamps: the server's clock is off, not its stopwatch
            off = self.offset + (self._rng.gauss(0.0, self.jitter) if self.jitter else 0.0)
            off_ns = round(off * 1e9)
            received = (stamp if stamp is not None else time.time_ns()) + off_ns
            if self.silent:
                continue
            request = ntplib.NTPPacket()
            request.from_data(data)
            reply = ntplib.NTPPacket(version=request.version, mode=4)
            reply.stratum = self.stratum
            reply.ref_id = 0x7F000001
            # the stamps are written in integer ns, as the client reads them; the origin field
            # is the request's transmit stamp copied bit for bit, as RFC 5905 asks: clients
            # match replies by it, and a float round trip would lose its low bits
            packet = bytearray(reply.to_data())
            origin = bytes(8) if self.bogus_origin else data[40:48]
            struct.pack_into("!Q8sQ", packet, 16, to_ntp(received), origin, to_ntp(received))
            # the transmit stamp last, just before the reply leaves
            struct.pack_into("!Q", packet, 40, to_ntp(time.time_ns() + off_ns))
            self._sock.sendto(bytes(packet), addr)
