"""A tiny NTP server for tests: answers on loopback with an injected offset (or not at all).

chrony serves this machine's own clock; to test offsets and steps the tests need a server
whose time is off by a known amount. `offset` and `silent` may be changed while it runs (a
step at a chosen moment); `jitter` adds gaussian noise (σ, s) to each reply's clock.
"""

from __future__ import annotations

import random
import socket
import threading
import time

import ntplib


class NTPResponder:
    def __init__(
        self, offset: float = 0.0, stratum: int = 2, jitter: float = 0.0, seed: int | None = None
    ) -> None:
        self.offset = offset
        self.stratum = stratum
        self.jitter = jitter
        self._rng = random.Random(seed)
        self.silent = False
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
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
                data, addr = self._sock.recvfrom(1024)
            except TimeoutError:
                continue
            # one noise draw for both timestamps: the server's clock is off, not its stopwatch
            off = self.offset + (self._rng.gauss(0.0, self.jitter) if self.jitter else 0.0)
            received = time.time() + off
            if self.silent:
                continue
            request = ntplib.NTPPacket()
            request.from_data(data)
            reply = ntplib.NTPPacket(version=request.version, mode=4)
            reply.stratum = self.stratum
            reply.ref_id = 0x7F000001
            reply.orig_timestamp = request.tx_timestamp
            reply.recv_timestamp = ntplib.system_to_ntp_time(received)
            reply.ref_timestamp = reply.recv_timestamp
            reply.tx_timestamp = ntplib.system_to_ntp_time(time.time() + off)
            self._sock.sendto(reply.to_data(), addr)
