"""PTP (IEEE 1588) as a clock source: a running ptp4l read through its management client.

`pmc` asks ptp4l over its Unix socket for the current data set (offset from master, mean path
delay, steps removed) and the port state. Where neither pmc nor the socket exists the source is
absent and says so; it never raises.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from .measurement import Measurement
from .tools import which

FIELDS = re.compile(r"^\s*(stepsRemoved|offsetFromMaster|meanPathDelay|portState)\s+(\S+)", re.M)
TRACKING_STATES = {"SLAVE", "UNCALIBRATED"}  # a free-running slave stays UNCALIBRATED


class PTPSource:
    """Reads ptp4l's view of the master through `pmc -u -s SOCKET`."""

    def __init__(self, socket: str = "/var/run/ptp4l", pmc: str = "pmc", timeout: float = 1.0):
        self.socket, self.timeout = socket, timeout
        self.pmc = which(pmc)
        self.name = f"ptp:{socket}"

    def measure(self) -> Measurement:
        now = time.monotonic()
        if self.pmc is None:
            return self._failed(now, "absent: pmc (linuxptp) is not installed")
        if not Path(self.socket).exists():
            return self._failed(now, f"absent: no ptp4l socket at {self.socket}")
        try:
            out = subprocess.run(
                [
                    self.pmc,
                    "-u",
                    "-b",
                    "0",
                    "-s",
                    self.socket,
                    "GET CURRENT_DATA_SET",
                    "GET PORT_DATA_SET",
                ],
                capture_output=True,
                text=True,
                timeout=self.timeout,
            ).stdout
        except (OSError, subprocess.TimeoutExpired) as exc:
            return self._failed(now, f"pmc failed: {exc}")
        values = dict(FIELDS.findall(out))
        if "offsetFromMaster" not in values:
            return self._failed(now, "ptp4l did not answer")
        steps = int(values.get("stepsRemoved", "0"))
        delay_ns = float(values.get("meanPathDelay", "0"))
        state = values.get("portState", "")
        if steps < 1 or delay_ns == 0 or state not in TRACKING_STATES:
            return self._failed(now, f"not tracking a master yet ({state or 'no state'})")
        # ptp4l reports slave − master; the reference (master) minus the local clock is −that
        offset = -float(values["offsetFromMaster"]) * 1e-9
        # software timestamping: trust a reading to a microsecond plus a share of the path
        error = 1e-6 + 0.05 * delay_ns * 1e-9
        return Measurement(self.name, offset, 2 * delay_ns * 1e-9, error, now)

    def _failed(self, now: float, reason: str) -> Measurement:
        return Measurement(self.name, 0.0, 0.0, float("inf"), now, False, reason)
