"""The dubbing desk: lines from every request wait in one role scheduler, as the show's
utterances do (server/show/scheduling.py), and its workers take them up as each gets free. The
first speaks on the show's own TTS thread, after the show's speech (Speaking.beside): dubbing
never holds up the broadcast. Each other (`[dub] workers`) speaks the show's voice
(Models.dubbing: its session, run from several threads at once) on a thread of its own, below
the show's TTS thread in priority: on a machine of several cores, lines are spoken at once.

A request's lines are paced (server/show/scheduling.py): its later lines are due when the
ones before them have been made and played, so under load every client's first line goes
before anyone's second.

`fifo` puts the lines in arrival order instead (every role of one weight, no aging, no
pacing): the baseline `bench roles` measures the scheduler against.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence

import numpy as np

from models.protocols import TTS, SpeechChunk, VoiceStyle

from ..config import RoleConfig
from ..media.mediaclock import SAMPLE_RATE
from ..show.inference import ModelThread
from ..show.placing import lips
from ..show.resample import resample_int16
from ..show.scheduling import RoleQueue
from ..show.speaking import Speaking, voice_of
from ..tasks import cancel_and_wait
from .lines import Dubbed, DubLine

log = logging.getLogger(__name__)
FIFO_AGING_S = 1e12  # no aging: with equal weights, the earliest line goes first
# the other workers' threads, below the show's TTS thread (10): where they share a core with
# it, the show's speech gets three times their share
WORKER_NICE = 15
Reader = Callable[[str, VoiceStyle], AsyncGenerator[SpeechChunk, None]]


class DubDesk:
    def __init__(
        self,
        speaking: Callable[[], Speaking | None],
        roles: Sequence[RoleConfig],
        queue_size: int,
        fifo: bool = False,
        clock: Callable[[], float] = time.monotonic,
        workers: int = 1,
        voices: Callable[[], Sequence[TTS]] = tuple,
        deadline_s: float | None = None,
    ) -> None:
        """`voices()`: the other workers' voices, once loaded (at most `workers` − 1 of them
        are used); `deadline_s`: a synthesis call on their threads that takes longer fails."""
        if fifo:
            self.queue: RoleQueue[DubLine] = RoleQueue(
                queue_size, clock=clock, continuity=0.0, aging_s=FIFO_AGING_S
            )
        else:
            weights = {r.name: r.weight for r in roles}
            self.queue = RoleQueue(queue_size, weights, clock=clock)
        self.paced = not fifo
        self.speaking, self.voices = speaking, voices
        self.clock = clock
        self.workers, self.deadline_s = workers, deadline_s
        self._threads: list[ModelThread] = []  # the other workers', started with them
        self._tasks: list[asyncio.Task | None] = [None] * workers
        self._next: dict[str, DubLine] = {}  # a paced line, by the id of the line before it

    def submit(self, lines: Sequence[DubLine]) -> None:
        """Queue all of a request's lines, or raise QueueFull with none queued."""
        self.queue.put_all(lines, paced=self.paced)
        if self.paced:
            self._next.update((line.after, line) for line in lines if line.after is not None)
        loop = asyncio.get_running_loop()
        for k in range(len(self._readers())):
            task = self._tasks[k]
            if task is None or task.done():
                self._tasks[k] = loop.create_task(self._run(k), name=f"dubbing-{k}")

    def _readers(self) -> list[Reader]:
        """What each worker speaks with: the show's TTS thread (asked each line: a restarted
        stage has a new one), then the other voices loaded."""
        speaking = self.speaking()
        if speaking is None:
            return []
        voices = list(self.voices())[: self.workers - 1]
        while len(self._threads) < len(voices):
            name = f"dubbing-tts-{len(self._threads) + 1}"
            self._threads.append(ModelThread(name, nice=WORKER_NICE, deadline_s=self.deadline_s))
        pairs = zip(self._threads, voices, strict=False)
        return [speaking.beside, *(_reader(thread, voice) for thread, voice in pairs)]

    def withdraw(self, lines: Sequence[DubLine]) -> None:
        """A client gone: its lines still waiting are not spoken."""
        ids = {line.id for line in lines}
        for line in self.queue.remove(lambda w: w.id in ids):
            line.done.cancel()
        for line in lines:
            self._next.pop(line.id, None)

    async def stop(self) -> None:
        for task in self._tasks:
            await cancel_and_wait(task)
        for thread in self._threads:
            thread.shutdown()

    async def _run(self, worker: int) -> None:
        while True:
            line = await self.queue.get()
            if line.done.done():  # its client went away
                continue
            line.started_at = self.clock()
            try:
                dubbed = await self._speak(line, worker)
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
                line.finished_at = finished = self.clock()
                self.queue.finished(line.role)
                self._due_next(line, finished)

    def _due_next(self, line: DubLine, finished: float) -> None:
        """The line after `line`, which ended at `finished`, is due when `line` has played (at
        once, where it failed)."""
        follower = self._next.pop(line.id, None)
        if follower is None:
            return
        follower.due_at = finished
        if line.spoken:
            follower.due_at += line.done.result().pcm.size / SAMPLE_RATE
        self.queue.played(line.id, follower.due_at)

    async def _speak(self, line: DubLine, worker: int) -> Dubbed:
        readers = self._readers()
        if worker >= len(readers):
            raise RuntimeError("the models are not loaded")
        pcm: list[np.ndarray] = []
        frames, onsets, at = [], [], 0
        chunks = readers[worker](line.text, voice_of(line.character))
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


def _reader(thread: ModelThread, voice: TTS) -> Reader:
    def read(text: str, style: VoiceStyle) -> AsyncGenerator[SpeechChunk, None]:
        return thread.iterate(voice.speak, text, style)

    return read
