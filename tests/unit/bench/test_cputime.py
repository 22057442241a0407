"""Where a long run's CPU went: each part's processes found and their CPU read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from server.bench.cputime import CpuReader


def test_a_viewer_that_spins_reads_as_a_busy_core_and_an_idle_server_as_none():
    spin = "import time\nt = time.time()\nwhile time.time() - t < 30: pass"
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    busy = subprocess.Popen([sys.executable, "-c", spin])
    try:
        reader = CpuReader(idle.pid, "no-browser", [busy.pid])
        assert reader.read(time.monotonic()) is None  # nothing to compare with yet
        time.sleep(2.0)
        parts = reader.read(time.monotonic())
        assert parts is not None
        # a whole core where nothing else runs; on a busy machine it gets less, but most
        assert 0.5 <= parts["viewers"] <= 1.05, parts
        assert parts["server"] < 0.05 and parts["renderers"] == 0.0, parts
        cores = [v for k, v in parts.items() if k.startswith("core ")]
        assert len(cores) == os.cpu_count() and sum(cores) >= 0.5, parts
    finally:
        for proc in (idle, busy):
            proc.kill()
            proc.wait()
