"""The lifecycle of the server's long-running asyncio tasks."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def cancel_and_wait(*tasks: asyncio.Task | None) -> None:
    """Cancel tasks and wait until they have really finished (their cleanups have run)."""
    live = [t for t in tasks if t is not None]
    for task in live:
        task.cancel()
    await asyncio.gather(*live, return_exceptions=True)


async def supervised(
    name: str,
    run: Callable[[], Awaitable[None]],
    restarted: Callable[[], None] = lambda: None,
    delay_s: float = 0.2,
) -> None:
    """Run `run()` for as long as the server does: one that fails is logged and started again
    (an exception in the broadcast loop would otherwise have stopped the audio for everyone
    until a restart), after `delay_s`, doubling up to 5 s while it keeps failing within a
    second of starting. Cancelling stops it; one that returns is done."""
    wait = delay_s
    while True:
        started = time.monotonic()
        try:
            await run()
            return
        except Exception:
            log.exception("%s failed; starting it again", name)
        restarted()
        wait = wait * 2 if time.monotonic() - started < 1.0 else delay_s
        await asyncio.sleep(min(wait, 5.0))


async def every(period_s: float, what: str, look: Callable[[], object]) -> None:
    """Call `look()` (plain or async; what it returns is not used) every `period_s` for as
    long as the server runs. A look that fails is logged and the next comes on time: a figure
    that cannot be read once is no reason to stop watching."""
    while True:
        try:
            result = look()
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("%s failed", what)
        await asyncio.sleep(period_s)
