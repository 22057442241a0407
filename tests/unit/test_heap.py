"""The heap the show keeps all night: what lives all night is out of the collector's walks, its
pauses are exported, and freed memory goes back to the system."""

from __future__ import annotations

import asyncio
import gc
import re
import subprocess
import sys

from server import heap
from tests.harness import page_text


def test_a_live_show_has_frozen_its_long_lived_objects_and_exports_each_pause(tone_server):
    assert gc.get_freeze_count() > 10_000  # the models, the app, the stage
    gc.collect()
    text = asyncio.run(page_text(tone_server, "/metrics"))
    counted = re.search(r'allnighter_gc_pause_seconds_count\{generation="2"\} (\S+)', text)
    assert counted and float(counted.group(1)) >= 1, text[:2000]


def test_freed_memory_is_handed_back_each_period(monkeypatch):
    trims: list[int] = []
    monkeypatch.setattr(heap, "_libc", lambda name: trims.append if name == "malloc_trim" else None)

    async def run() -> None:
        task = asyncio.create_task(heap.hand_back_every(0.05))
        await asyncio.sleep(0.28)
        task.cancel()

    asyncio.run(run())
    assert 4 <= len(trims) <= 6 and set(trims) == {0}


# Eight threads alive at once, each allocating; then glibc's count of its heaps (malloc_stats
# prints one "Arena N:" block per heap to the process's stderr).
THREADS_ALLOCATE = """
import ctypes, sys, threading
from server import heap
if sys.argv[1] == "fewer":
    assert heap.fewer_arenas(2)
together = threading.Barrier(8)
def work():
    kept = [bytearray(4096) for _ in range(64)]
    together.wait()
ts = [threading.Thread(target=work) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
ctypes.CDLL(None).malloc_stats()
"""


def _arenas(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", THREADS_ALLOCATE, mode], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return len(re.findall(r"^Arena \d+:", done.stderr, re.M))


def test_the_shows_threads_share_two_heaps():
    assert _arenas("default") > 2  # glibc alone gives each thread one of its own
    assert 1 <= _arenas("fewer") <= 2
