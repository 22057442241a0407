"""The dubbing desk: lines from every request wait in one role scheduler, as the show's
utterances do (server/show/scheduling.py), and are spoken one at a time on the show's own TTS
thread, after the show's speech (Speaking.beside): dubbing never holds up the broadcast.

`fifo` puts the lines in arrival order instead (every role of one weight, no aging): the
baseline `bench roles` measures the scheduler against.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence

import numpy as np

from ..config import RoleConfig
from ..media.mediaclock import SAMPLE_RATE
from ..show.placing import lips
from ..show.resample import resample_int16
from ..show.scheduling import RoleQueue
from ..show.speaking import Speaking, voice_of
from ..tasks import cancel_and_wait
from .lines import Dubbed, DubLine

log = logging.getLogger(__name__)
FIFO_AGING_S = 1e12  # no aging: with equal weights, the earliest line goes first


class DubDesk:
    def __init__(
        self,
        speaking: Callable[[], Speaking | None],
        roles: Sequence[RoleConfig],
        queue_size: int,
        fifo: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if fifo:
            self.queue: RoleQueue[DubLine] = RoleQueue(
                queue_size, clock=clock, continuity=0.0, aging_s=FIFO_AGING_S
            )
        else:
            weights = {r.name: r.weight for r in roles}
            self.queue = RoleQueue(queue_size, weights, clock=clock)
        self.speaking = speaking
        self.clock = clock
        self._worker: asyncio.Task | None = None

    def submit(self, lines: Sequence[DubLine]) -> None:
        """Queue all of a request's lines, or raise QueueFull with none queued."""
        self.queue.put_all(lines)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._run(), name="dubbing")

    def withdraw(self, lines: Sequence[DubLine]) -> None:
        """A client gone: its lines still waiting are not spoken."""
        ids = {line.id for line in lines}
        for line in self.queue.remove(lambda w: w.id in ids):
            line.done.cancel()

    async def stop(self) -> None:
        await cancel_and_wait(self._worker)

    async def _run(self) -> None:
        while True:
            line = await self.queue.get()
            if line.done.done():  # its client went away
                continue
            line.started_at = self.clock()
            try:
                dubbed = await self._speak(line)
            except asyncio.CancelledError:
                line.done.cancel()
                raise
            except Exception as exc:
                log.warning("dubbing line %s failed: %s", line.id, exc)
                if not line.done.done():
                    line.done.set_exception(exc)
            else:
                if not line.done.done():
                    line.done.set_result(dubbed)
            finally:
                line.finished_at = self.clock()
                self.queue.finished(line.role)

    async def _speak(self, line: DubLine) -> Dubbed:
        speaking = self.speaking()
        if speaking is None:
            raise RuntimeError("the models are not loaded")
        pcm: list[np.ndarray] = []
        frames, onsets, at = [], [], 0
        chunks = speaking.beside(line.text, voice_of(line.character))
        async with contextlib.aclosing(chunks) as spoken:
            async for chunk in spoken:
                audio = resample_int16(chunk.audio, chunk.sample_rate, SAMPLE_RATE)
                mouth, found, _ = lips(chunk, audio, at, SAMPLE_RATE)  # as the show's
                frames += mouth
                onsets += found
                pcm.append(audio)
                at += len(audio)
        if not pcm:
            raise RuntimeError("nothing to speak")
        return Dubbed(np.concatenate(pcm), frames, onsets)
