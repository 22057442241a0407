"""A real ptp4l master and slave in two network namespaces joined by a veth pair: tests, benches.

Both run with software timestamps over layer 2 (no IP addresses needed) and free_running, since
namespaces share one system clock and a normal slave would steer it. The slave's offset from its
master is therefore the true error of a PTP reading: the truth is 0. Root only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from timesync.measurement import Measurement
from timesync.tools import which

from .processes import end

CONFIG = """[global]
free_running 1
logSyncInterval -3
logMinDelayReqInterval -3
logAnnounceInterval -2
"""


def missing() -> str | None:
    """Why a PTP pair cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root for network namespaces"
    for tool in ("ip", "ptp4l", "pmc"):
        if not which(tool):
            return f"{tool} is not installed (linuxptp, iproute2)"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class PTPPair:
    def __init__(self) -> None:
        tag = f"an{os.getpid() % 100000}"
        self.master_ns, self.slave_ns = f"{tag}m", f"{tag}s"
        self.dir = Path(tempfile.mkdtemp(prefix="ptp-"))
        self.socket = str(self.dir / "slave.sock")
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> PTPPair:
        try:
            self._start()
        except BaseException:
            self.__exit__()  # no namespace or daemon left behind by a half start
            raise
        return self

    def _start(self) -> None:
        m, s = self.master_ns, self.slave_ns
        _ip("netns", "add", m)
        _ip("netns", "add", s)
        _ip("link", "add", f"{m}v", "type", "veth", "peer", "name", f"{s}v")
        _ip("link", "set", f"{m}v", "netns", m)
        _ip("link", "set", f"{s}v", "netns", s)
        for ns in (m, s):
            _ip("-n", ns, "link", "set", f"{ns}v", "up")
        for ns, extra, role in ((m, "priority1 1\n", "master"), (s, "", "slave")):
            conf = self.dir / f"{role}.conf"
            conf.write_text(f"[{ns}v]\n" + CONFIG + extra)
            cmd = [
                "ip",
                "netns",
                "exec",
                ns,
                "ptp4l",
                "-2",
                "-S",
                "-f",
                str(conf),
                "-i",
                f"{ns}v",
                f"--uds_address={self.dir / (role + '.sock')}",
            ]
            if role == "slave":
                cmd.append("-s")
            self.procs.append(
                subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            end(p)
        for ns in (self.master_ns, self.slave_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def wait_tracking(self, source, timeout: float = 15.0) -> Measurement:
        """The slave's first good reading; TimeoutError when it does not track in time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = source.measure()
            if m.ok:
                return m
            time.sleep(0.2)
        raise TimeoutError(f"the PTP slave did not track its master: {m.reason}")
