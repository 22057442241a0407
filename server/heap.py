"""The heap the show keeps all night.

Once the models are loaded, nearly every object the process will hold all night exists: some
400,000 of them (torch, transformers, Piper). Python's cyclic collector walks all of them in
each full collection, 200 ms on two cores with the GIL held, and the broadcast loop sent ten
frames late each time: a burst of offers or socket connections, whose objects outlive the
young generations, brought one on. `settle()` freezes what exists then into the collector's
permanent generation (the pause drops to what was allocated since) and times every
collection from then on, so a pause at 2 a.m. shows up in the metrics with its generation.

glibc keeps memory freed in the middle of its heap: after hundreds of peers opened and
closed, the process kept 100 MB it no longer used. `hand_back_every()` returns it
(malloc_trim, 4 ms the first time, 0.1 ms after) once a minute, off the loop's thread.

It also gives each thread that allocates a heap of its own (an arena, 64 MB at a time, up to
eight per core), and what one thread frees only its own reuses: the LLM's keys and values,
which grow a little with every token, left holes of every size in each. Forty LLM replies in a
row left 24 MB more resident, trimmed; with `fewer_arenas()` (two, which the show's threads
share), 6 MB. (Keeping glibc's threshold for mapping a block apart at 128 KB, instead of the
size of the largest block freed, left none, but Piper then took half as much CPU again: its
large temporaries were mapped and faulted in on every sentence.)
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import time
from typing import Any

log = logging.getLogger(__name__)

_pause_started: dict[int, float] = {}
_pauses: Any | None = None  # the histogram the running server exports


def _timed(phase: str, info: dict) -> None:
    generation = info["generation"]
    if phase == "start":
        _pause_started[generation] = time.perf_counter()
    elif generation in _pause_started and _pauses is not None:
        _pauses.labels(str(generation)).observe(
            time.perf_counter() - _pause_started.pop(generation)
        )


def settle(pauses: Any | None = None) -> None:
    """Freeze every object alive now out of the collector's walks; with `pauses` (a
    histogram labelled by generation), time each collection from now on."""
    global _pauses
    gc.collect()
    gc.freeze()
    _pauses = pauses
    if _timed not in gc.callbacks:
        gc.callbacks.append(_timed)
    log.info("heap settled: %d objects frozen", gc.get_freeze_count())


def unsettle() -> None:
    """When the show stops: what was frozen can be collected again (a process that starts
    another show, as the tests do, would otherwise keep the first one's cycles)."""
    global _pauses
    _pauses = None
    gc.unfreeze()


def _libc(function: str) -> Any | None:
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), function) if name else None
    except (OSError, AttributeError):  # not glibc: nothing to tune or hand back this way
        return None


M_ARENA_MAX = -8  # mallopt's parameter (malloc.h)


def fewer_arenas(arenas: int = 2) -> bool:
    """Let glibc's threads share `arenas` heaps; call before any thread allocates (glibc
    settles the limit when a thread first needs an arena of its own). True where it took."""
    mallopt = _libc("mallopt")
    return mallopt is not None and mallopt(M_ARENA_MAX, arenas) == 1


async def hand_back_every(period_s: float = 60.0) -> None:
    """Give the heap's freed memory back to the system every `period_s`, for good."""
    trim = _libc("malloc_trim")
    if trim is None:
        return
    while True:
        await asyncio.sleep(period_s)
        await asyncio.to_thread(trim, 0)
