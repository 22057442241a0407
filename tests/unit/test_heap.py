"""The heap the show keeps all night: what lives all night is out of the collector's walks, its
pauses are exported, and freed memory goes back to the system."""

from __future__ import annotations

import asyncio
import gc
import re

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
    monkeypatch.setattr(heap, "_malloc_trim", lambda: trims.append)

    async def run() -> None:
        task = asyncio.create_task(heap.hand_back_every(0.05))
        await asyncio.sleep(0.28)
        task.cancel()

    asyncio.run(run())
    assert 4 <= len(trims) <= 6 and set(trims) == {0}
