"""Async bridges to the blocking model adapters: nothing here blocks the event loop.

Each model gets its own single worker thread, so a long ASR job can never hold up the TTS, and
calls to one model are serialised (the model objects are not thread-safe).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import queue
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar, TypeVarTuple, cast

from models.device import lower_priority  # noqa: F401 (the benches take it from here too)
from models.protocols import LLM, Messages, TokenPiece

log = logging.getLogger(__name__)
T = TypeVar("T")
Ts = TypeVarTuple("Ts")
_DONE = object()


class ModelTimeout(TimeoutError):
    """A model call that did not return within its deadline; the message says which."""


LIVE, BACKGROUND = 0, 1  # a call's rank on its model's thread: the show's own first


class ModelThread:
    """One dedicated thread for one model's blocking calls; `nice` lowers its priority by that
    much below the thread that starts it (the server's).

    Calls wait in rank order: a LIVE call (the show's speech) goes before every BACKGROUND one
    (a dubbing job) still waiting, so work beside the show delays its speech by one call at
    most (an iterator's calls are one item each: a sentence of speech).

    With `deadline_s`, an async call that has not returned by then raises ModelTimeout and the
    thread is given up: its call may never return (a hung synthesis), and every later call
    would wait behind it. Later calls go to a fresh thread; the old one ends when its call
    does. (Daemon threads: a hung one does not hold the process at exit.)"""

    def __init__(self, name: str, nice: int = 0, deadline_s: float | None = None) -> None:
        self.name = name
        self.deadline_s = deadline_s
        self._nice = nice
        self._order = itertools.count()
        self._jobs = self._start()

    def _start(self) -> queue.PriorityQueue:
        jobs: queue.PriorityQueue = queue.PriorityQueue()
        threading.Thread(target=self._work, args=(jobs,), name=self.name, daemon=True).start()
        return jobs

    def _work(self, jobs: queue.PriorityQueue) -> None:
        # the ASR thread (and the threads it starts) yields the CPU to the speech path instead
        # of delaying audio
        if self._nice:
            lower_priority(self._nice)
        while (job := jobs.get()[2]) is not None:
            fn, args, done = job
            if done.set_running_or_notify_cancel():
                try:
                    done.set_result(fn(*args))
                except BaseException as exc:
                    done.set_exception(exc)

    def _put(self, jobs: queue.PriorityQueue, rank: int, job: tuple | None) -> None:
        jobs.put((rank, next(self._order), job))  # the count keeps one rank first come first

    def _submit(
        self,
        fn: Callable[[*Ts], T],
        *args: *Ts,
        jobs: queue.PriorityQueue | None = None,
        rank: int = LIVE,
    ) -> Future[T]:
        done: Future[T] = Future()
        self._put(jobs or self._jobs, rank, (fn, args, done))
        return done

    def run_sync(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        """Run on this thread and wait (from another thread, e.g. while loading models).

        A model built here starts its worker threads here, and they inherit the nice value.
        """
        return self._submit(fn, *args).result()

    async def call(self, fn: Callable[[*Ts], T], *args: *Ts, rank: int = LIVE) -> T:
        done = asyncio.wrap_future(self._submit(fn, *args, rank=rank))
        try:
            # asyncio.timeout, not wait_for: wait_for returns the result of a call that ends
            # as its task is cancelled, and the cancel (an interrupt, a stop) was lost
            async with asyncio.timeout(self.deadline_s):
                return await done
        except TimeoutError:
            self._give_up()
            raise ModelTimeout(f"{self.name} did not answer within {self.deadline_s:g} s") from None

    def _give_up(self) -> None:
        """Leave the thread to its call; what comes next runs on a new one."""
        self._put(self._jobs, BACKGROUND + 1, None)
        self._jobs = self._start()
        log.error("%s: a call outlived its deadline; going on with a new thread", self.name)

    async def iterate(
        self, make: Callable[[*Ts], Iterator[T]], *args: *Ts, rank: int = LIVE
    ) -> AsyncGenerator[T, None]:
        """Run a blocking iterator (a generator: it is closed when the iteration ends) on this
        thread, yielding its items to the loop one by one."""
        gen: Iterator[T] = await self.call(make, *args, rank=rank)
        close = getattr(gen, "close", lambda: None)
        owner = self._jobs
        try:
            while True:
                item = await self.call(next, gen, _DONE, rank=rank)
                if item is _DONE:
                    return
                yield cast(T, item)
        finally:
            if self._jobs is owner:
                # closing runs on the model thread too (it may join a generate thread); one
                # stuck there gives the thread up, and what ended the iteration stands (an
                # interrupt stays an interrupt)
                with contextlib.suppress(ModelTimeout):
                    await asyncio.shield(self.call(close, rank=rank))
            else:  # given up while the generator ran: its own thread closes it, if ever
                self._submit(close, jobs=owner)

    def shutdown(self) -> None:
        self._put(self._jobs, BACKGROUND + 1, None)


async def stream_tokens(
    llm: LLM,
    messages: Messages,
    cancel: threading.Event,
    deadline_s: float | None = None,
    **kwargs: Any,
) -> AsyncGenerator[TokenPiece, None]:
    """Stream an LLM's TokenPieces; setting `cancel` (or leaving early) stops generation. A
    token awaited longer than `deadline_s` raises ModelTimeout (the stream is cancelled)."""
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
            try:
                async with asyncio.timeout(deadline_s):
                    item = await queue.get()
            except TimeoutError:
                raise ModelTimeout(f"the LLM gave no token within {deadline_s:g} s") from None
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        cancel.set()
