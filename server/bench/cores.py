"""Where a bench's processes run: the server on cores of its own, what stands for other
machines (a viewer's browser, an attacker) on the rest."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


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
