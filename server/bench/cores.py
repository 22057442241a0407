"""Where a bench's processes run: the server on cores of its own, what stands for other
machines (a viewer's browser, an attacker) on the rest."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager

from .deadline import of_browser, processes


@contextmanager
def cores_apart() -> Iterator[tuple[set[int] | None, str]]:
    """The server's cores, and what the table says of them: with two cores or more, the first
    half, and this process and all it starts from now on (the browser, the viewer, the
    attacker) the rest. Given back on the way out."""
    mine = os.sched_getaffinity(0)
    cores = sorted(mine)
    if len(cores) < 2:
        yield None, "server and clients on the one core"
        return
    server = set(cores[: len(cores) // 2])
    os.sched_setaffinity(0, mine - server)
    try:
        yield server, f"server on {len(server)} of {len(cores)} cores, the clients on the rest"
    finally:
        os.sched_setaffinity(0, mine)


def placed(nice: int, cpus: set[int] | None) -> None:
    """In the server's process before it runs: its priority and its cores."""
    if nice:
        os.nice(nice)
    if cpus:
        os.sched_setaffinity(0, cpus)


def confine_browser(tag: str, tree: dict[int, tuple[int, str]] | None = None) -> int:
    """Every thread of the browser launched with `tag` (browser.launch) on the calling thread's
    cores; how many were elsewhere. Launched from a thread on the clients' cores, the browser
    starts there, but SwiftShader (its software WebGL) pins each of its rasterizer's worker
    threads to one core of the whole machine, the server's included: in the benches before
    this, the pages' drawing ran partly on the server's core, at the browser's raised priority.
    Threads started later are pinned anew, so a long run calls this again. `tree`: processes(),
    where the caller has read it already."""
    mine = os.sched_getaffinity(0)
    moved = 0
    for pid in of_browser(tag, tree if tree is not None else processes()):
        with contextlib.suppress(OSError):  # a thread or process gone meanwhile
            for tid in os.listdir(f"/proc/{pid}/task"):
                if os.sched_getaffinity(int(tid)) != mine:
                    os.sched_setaffinity(int(tid), mine)
                    moved += 1
    return moved
