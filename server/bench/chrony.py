"""A real chronyd serving NTP on 127.0.0.1, for tests and benches of the clock sources.

Started as in the project's recipe: `chronyd -x -d -u root -f CONF` with its own port, pid and
drift files, loopback only and no command port; `-x` and our own `-f` keep it from touching
the system clock or reaching the internet pool. chrony serves this machine's own clock, so a
reading of it has an offset of ~0: offsets and steps need server/bench/ntpserver.py.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import ntplib

from timesync.tools import which

from .processes import end


def chronyd_path() -> str | None:
    """chronyd's path, or None when chrony is not installed (it lives in /usr/sbin)."""
    return which("chronyd")


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def chrony_on_loopback(tmpdir: str | Path, ready_timeout: float = 5.0) -> Iterator[int]:
    """Run chronyd on 127.0.0.1 until the block ends; yields its NTP port once it answers.

    Its configuration, pid, drift file and log (chronyd.log) are written in `tmpdir`.
    Raises FileNotFoundError when chronyd is not installed, RuntimeError (with its log) when
    it exits or does not answer in `ready_timeout` seconds.
    """
    exe = chronyd_path()
    if exe is None:
        raise FileNotFoundError("chronyd is not installed (apt-get install chrony)")
    tmp = Path(tmpdir)
    port = _free_udp_port()
    conf = tmp / "chrony.conf"
    conf.write_text(
        f"port {port}\n"
        "bindaddress 127.0.0.1\n"
        "allow 127.0.0.1\n"
        "local stratum 8\n"
        "cmdport 0\n"
        f"pidfile {tmp / 'chronyd.pid'}\n"
        f"driftfile {tmp / 'chrony.drift'}\n"
    )
    log_path = tmp / "chronyd.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [exe, "-x", "-d", "-u", "root", "-f", str(conf)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            _wait_until_serving(proc, port, ready_timeout, log_path)
            yield port
        finally:
            end(proc)


def _wait_until_serving(proc: subprocess.Popen, port: int, timeout: float, log: Path) -> None:
    client = ntplib.NTPClient()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chronyd exited ({proc.returncode}): {log.read_text().strip()}")
        with contextlib.suppress(ntplib.NTPException, OSError):
            if 0 < client.request("127.0.0.1", 4, port, 0.2).stratum < 16:
                return
        time.sleep(0.01)
    raise RuntimeError(f"chronyd did not answer on port {port}: {log.read_text().strip()}")
