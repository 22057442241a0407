"""Where a long run's CPU goes: the server, the browser's GPU process and renderers, the
viewers, each core; read from /proc, as cores busy (CPU seconds a second) since the last read.

The real hour's pages drew 20 frames a second in its first ten minutes and 16 in its last,
with nothing in its figures to say why: these readings say which process took more, or got
less, as the hour went on.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .deadline import below, of_browser, processes

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
PARTS = ("server", "GPU process", "renderers", "zygotes", "browser, other", "viewers")
KINDS = {
    "--type=gpu-process": "GPU process",
    "--type=renderer": "renderers",
    "--type=zygote": "zygotes",
}
# A zygote forks renderers and waits. One once spun in the kernel for a whole run (most of a
# core, no tab could be opened, dead renderers left unreaped): its share is read apart.


def _cpu_s(pid: int) -> float | None:
    """The process's CPU seconds so far, its threads' included; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # comm may hold spaces and parentheses
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime, stime


def _cores() -> dict[str, float]:
    """Each core's busy seconds so far (all but idle and iowait)."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *ticks = line.split()
        if name.startswith("cpu") and name != "cpu":
            t = [int(x) for x in ticks]
            out[f"core {name[3:]}"] = (sum(t[:8]) - t[3] - t[4]) * TICK_S
    return out


class CpuReader:
    """Reads, each call, how busy each part has been since the previous call."""

    def __init__(self, server: int, browser_tag: str, viewers: Iterable[int] = ()) -> None:
        self.server, self.tag = server, browser_tag
        self.viewers = set(viewers)  # replaced when the viewers drop and others join
        self._last: dict[int, float] = {}  # pid → CPU s at the last read
        self._last_cores = _cores()
        self._last_at: float | None = None

    def part_of(self, tree: dict[int, tuple[int, str]]) -> dict[int, str]:
        """Each process of the run: which part it is."""
        out = {pid: "server" for pid in below(tree, [self.server])}
        out |= {pid: "viewers" for pid in below(tree, self.viewers)}
        for pid in of_browser(self.tag, tree):
            cmd = tree[pid][1]
            kind = "browser, other"
            for switch, part in KINDS.items():
                if switch in cmd:
                    kind = part
            out[pid] = kind
        return out

    def read(
        self, at: float, tree: dict[int, tuple[int, str]] | None = None
    ) -> dict[str, float] | None:
        """Cores busy per part and per core since the last read (`at`: monotonic s); None at
        the first. A process that ended between two reads is not counted for that span.
        `tree`: processes(), where the caller has read it already."""
        now: dict[int, float] = {}
        busy = dict.fromkeys(PARTS, 0.0)
        for pid, part in self.part_of(tree if tree is not None else processes()).items():
            used = _cpu_s(pid)
            if used is None:
                continue
            now[pid] = used
            if pid in self._last:
                busy[part] += used - self._last[pid]
        cores = _cores()
        for name, used in cores.items():
            busy[name] = used - self._last_cores.get(name, used)
        span = None if self._last_at is None else at - self._last_at
        self._last, self._last_cores, self._last_at = now, cores, at
        if not span:
            return None
        return {part: seconds / span for part, seconds in busy.items()}
