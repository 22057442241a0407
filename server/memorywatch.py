"""Memory as the study behind the show watches it, sampled every few seconds: the process's
resident memory on any machine; on CUDA, the caching allocator's allocated and reserved bytes
and its fragmentation, 1 − largest free block / total free (healthy under 0.35: a request the
size of the largest free block still fits without asking the driver for more, the failure a
fragmented GPU meets at 2 a.m.).

Each crossing of a threshold raises one alert (server/anomalies.py, in bytes or a share); it is
raised again only after the figure came back under 90 % of its threshold, so a figure hovering
at the line does not raise one every sample.
"""

from __future__ import annotations

import logging
import os
import resource
import sys
from collections.abc import Iterable
from typing import Any

from .anomalies import Alert, Anomalies
from .metrics import Metrics
from .tasks import every

log = logging.getLogger(__name__)

FRAGMENTATION_ALERT = 0.35
RSS_SHARE_OF_MEMORY = 0.75  # the default RSS alert: this share of the machine's memory
REARM = 0.9  # an alert is raised again once its figure is back under this share of the line


def rss_bytes() -> int:
    """The process's resident memory now (Linux: /proc; elsewhere the peak, as close as the
    standard library gets)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def machine_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def fragmentation(free_blocks: Iterable[int]) -> tuple[float, int, int]:
    """(1 − largest / total, largest, total) over the allocator's free blocks; 0 when none."""
    sizes = [b for b in free_blocks if b > 0]
    total = sum(sizes)
    if not total:
        return 0.0, 0, 0
    largest = max(sizes)
    return 1 - largest / total, largest, total


def free_blocks(snapshot: list[dict[str, Any]]) -> list[int]:
    """The free ("inactive") blocks inside the segments torch.cuda.memory_snapshot() lists."""
    return [
        block["size"]
        for segment in snapshot
        for block in segment.get("blocks", [])
        if block.get("state") == "inactive"
    ]


def cuda_memory() -> dict[str, float] | None:
    """The CUDA allocator's figures, or None where torch has no CUDA device in use."""
    torch = sys.modules.get("torch")  # never imported for this: the models bring it
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    frag, largest, total = fragmentation(free_blocks(torch.cuda.memory_snapshot()))
    return {
        "allocated": float(torch.cuda.memory_allocated()),
        "reserved": float(torch.cuda.memory_reserved()),
        "fragmentation": frag,
        "largest_free": float(largest),
        "free": float(total),
    }


class MemoryWatch:
    def __init__(
        self, metrics: Metrics, anomalies: Anomalies, rss_alert_bytes: int | None = None
    ) -> None:
        self.metrics, self.anomalies = metrics, anomalies
        self.rss_alert_bytes = rss_alert_bytes or int(RSS_SHARE_OF_MEMORY * machine_memory_bytes())
        self._raised: set[str] = set()
        self.last: dict[str, float] = {}

    def sample(
        self, rss: int | None = None, gpu: dict[str, float] | None | bool = True
    ) -> dict[str, float]:
        """Read (or take) the figures, export them, raise what crossed its line."""
        rss = rss_bytes() if rss is None else rss
        figures: dict[str, float] = {"rss": float(rss)}
        self.metrics.process_rss.set(rss)
        self._check("rss", rss, self.rss_alert_bytes, "bytes")
        cuda = cuda_memory() if gpu is True else gpu or None
        if cuda is not None:
            figures.update({f"gpu_{k}": v for k, v in cuda.items()})
            self.metrics.gpu_memory.labels("allocated").set(cuda["allocated"])
            self.metrics.gpu_memory.labels("reserved").set(cuda["reserved"])
            self.metrics.gpu_fragmentation.set(cuda["fragmentation"])
            self._check("gpu_fragmentation", cuda["fragmentation"], FRAGMENTATION_ALERT, "share")
        self.last = figures
        return figures

    def _check(self, series: str, value: float, line: float, unit: str) -> None:
        if value > line and series not in self._raised:
            self._raised.add(series)
            log.warning("memory: %s at %.3g %s, over its line of %.3g", series, value, unit, line)
            self.anomalies.raise_alert(Alert(series, value, line, unit, self.anomalies.wall_ms()))
        elif value < REARM * line:
            self._raised.discard(series)

    async def run(self, every_s: float = 10.0) -> None:
        await every(every_s, "memory: sampling", self.sample)
