"""Async bridges to the blocking model adapters: nothing here blocks the event loop.

Each model gets its own single worker thread, so a long ASR job can never hold up the TTS, and
calls to one model are serialised (the model objects are not thread-safe).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from models.device import lower_priority  # noqa: F401 (the benches take it from here too)

T = TypeVar("T")
_DONE = object()


class ModelThread:
    """One dedicated thread for one model's blocking calls; `nice` lowers its priority by that
    much below the thread that first calls it (the server's)."""

    def __init__(self, name: str, nice: int = 0) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name, initializer=self._init)
        self._nice = nice

    def _init(self) -> None:
        # the ASR thread (and the threads it starts) yields the CPU to the speech path instead
        # of delaying audio
        if self._nice:
            lower_priority(self._nice)

    def run_sync(self, fn: Any, *args: Any) -> Any:
        """Run on this thread and wait (from another thread, e.g. while loading models).

        A model built here starts its worker threads here, and they inherit the nice value.
        """
        return self._pool.submit(fn, *args).result()

    async def call(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def iterate(self, make: Any, *args: Any) -> AsyncIterator[Any]:
        """Run a blocking generator on this thread, yielding its items to the loop one by one."""
        gen: Iterator[Any] = await self.call(make, *args)
        try:
            while True:
                item = await self.call(next, gen, _DONE)
                if item is _DONE:
                    return
                yield item
        finally:
            # closing runs on the model thread too (it may join a generate thread)
            await asyncio.shield(self.call(gen.close))

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


async def stream_tokens(
    llm: Any, messages: list[dict], cancel: threading.Event, **kwargs: Any
) -> AsyncIterator[Any]:
    """Stream an LLM's TokenPieces; setting `cancel` (or leaving early) stops generation."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()

    def pump() -> None:
        try:
            for piece in llm.stream(messages, cancel=cancel, **kwargs):
                loop.call_soon_threadsafe(queue.put_nowait, piece)
                if cancel.is_set():
                    break
        except BaseException as exc:  # hand the failure to the consumer
            loop.call_soon_threadsafe(queue.put_nowait, exc)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, _DONE)

    thread = threading.Thread(target=pump, name="llm-stream", daemon=True)
    thread.start()
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        cancel.set()
