"""The stage: utterances wait in a bounded queue and are performed one after another; an
interrupt stops a role's speech (or all of it) at the write head, everywhere at once. After a
restart it takes up what the logbook says was left (resuming.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Sequence
from typing import Any

from ..config import RoleConfig, StageConfig
from ..media.broadcast import Broadcast
from ..media.timeline import SpeechTimeline
from ..metrics import Metrics
from ..tasks import cancel_and_wait, supervised
from .announcing import Emit
from .pipeline import Pipeline
from .playout import Playout
from .scenes import TURNS_HEARD, answering
from .scheduling import RoleQueue
from .utterances import Outcomes, Utterance, UtteranceState

log = logging.getLogger(__name__)
# replies written in one generation: the one taken up and those after it. A step of the
# model for four rows took about as long as for one here (bench roles: four replies in 0.29
# of the time one by one, 16 ms more to the first reply's first token)
WRITTEN_TOGETHER = 4


class Stage:
    def __init__(
        self,
        pipeline: Pipeline,
        playout: Playout,
        broadcast: Broadcast,
        timeline: SpeechTimeline,
        stage: StageConfig,
        metrics: Metrics,
        outcomes: Outcomes,
        emit: Emit,
        roles: Sequence[RoleConfig] = (),
    ) -> None:
        self.pipeline, self.playout = pipeline, playout
        self.broadcast, self.timeline = broadcast, timeline
        self.metrics, self.outcomes, self.emit = metrics, outcomes, emit
        # the next line by role priority, aged by its wait (a single role: first come)
        weights = {r.name: r.weight for r in roles}
        caps = {r.name: r.queue_cap for r in roles if r.queue_cap is not None}
        self.queue: RoleQueue[Utterance] = RoleQueue(stage.queue_size, weights, caps)
        self.history: deque[Utterance] = deque(maxlen=stage.history)
        self.before_restart: list[dict] = []  # the records of utterances finished before it
        self.level = 0  # the night's fallback level: an utterance takes it when taken up
        self._current_task: asyncio.Task | None = None
        self._worker: asyncio.Task | None = None

    @property
    def current(self) -> Utterance | None:
        return self.playout.speaking

    # ---- input -------------------------------------------------------------------------
    def submit(
        self,
        text: str,
        character: RoleConfig,
        mode: str,
        cache: bool = False,
        source: str = "host",
    ) -> Utterance:
        """Accept an utterance or raise QueueFull; accepted ones are never dropped silently.
        `cache`: a line the show says again, its speech kept (speechcache.py)."""
        utt = Utterance(text, character.name, mode, character, cache=cache, source=source)
        self.submit_all([utt])
        return utt

    def submit_all(self, utterances: Sequence[Utterance]) -> None:
        """Accept all of them (a scene's lines) or, raising QueueFull, none."""
        self.queue.put_all(utterances)
        for utt in utterances:
            self.outcomes.accepted(utt)  # written down before the host hears it was accepted
            self.history.append(utt)
        self.metrics.queue_depth.set(len(self.queue))

    def withdraw(self, source: str, why: str) -> list[str]:
        """Take the waiting utterances of `source` off the queue (interrupted, with why)."""
        gone = self.queue.remove(lambda u: u.source == source)
        for utt in gone:
            self.outcomes.finish(utt, UtteranceState.INTERRUPTED, why)
        self.metrics.queue_depth.set(len(self.queue))
        return [u.id for u in gone]

    @property
    def quiet(self) -> bool:
        """Nothing waiting, nothing being made, nothing still playing out."""
        return not len(self.queue) and self.current is None and not self.playout.playing

    async def interrupt(self, role: str | None) -> int:
        """Stop speech of `role` (all when None) at the write head; returns that sample."""
        at = self.broadcast.write_head
        self.timeline.cut(at, role)
        stopped: list[str] = []
        for utt in self.queue.remove_role(role):
            self.outcomes.finish(utt, UtteranceState.INTERRUPTED)
            stopped.append(utt.id)
        stopped += [utt.id for utt in self.playout.stop(role)]
        cur = self.current
        stopping = None
        if cur is not None and (role is None or cur.role == role) and self._current_task:
            stopping = self._current_task
            stopping.cancel()  # before any await: it can schedule nothing more after `at`
            stopped.append(cur.id)
        self.pipeline.interrupted(at, role, stopped)
        # then the viewers, before waiting for the speaker to wind down: their pages silence
        # what they have buffered as soon as they know. A phrase event of a stopped utterance
        # may still be on its way out; the ids let the pages drop it.
        payload: dict[str, Any] = {"at_sample": at, "utterances": stopped}
        if role is not None:
            payload["role"] = role
        await self.emit("interrupt", payload)
        if stopping is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await stopping
        self.metrics.queue_depth.set(len(self.queue))
        return at

    # ---- the worker ----------------------------------------------------------------------
    def start(self) -> None:
        restarted = self.metrics.task_restarts.labels("stage").inc
        self._worker = asyncio.get_running_loop().create_task(
            supervised("stage", self._run, restarted), name="stage"
        )

    @property
    def working(self) -> bool:
        """The worker that takes utterances off the queue is running."""
        return self._worker is not None and not self._worker.done()

    async def stop(self) -> None:
        await cancel_and_wait(self._worker)
        self.pipeline.shutdown()

    async def _run(self) -> None:
        while True:
            utt = await self.queue.get()
            self.metrics.queue_depth.set(len(self.queue))
            self.playout.speaking = utt
            utt.level = self.level  # a level changes between utterances, never inside one
            if utt.reply_to is not None:  # a conversation's turn answers the line before
                utt.prompt = answering(utt.text, self._turns_before(utt))
            self.outcomes.speaking(utt)
            self._current_task = asyncio.get_running_loop().create_task(
                self._perform(utt), name=f"utterance-{utt.id}"
            )
            try:
                await self._current_task
            except asyncio.CancelledError:
                if self._worker is not None and self._worker.cancelling():
                    # the show stops: its logbook row stays unfinished, for the next start
                    raise
                self.outcomes.finish(utt, UtteranceState.INTERRUPTED)  # by a host
            except Exception as exc:
                log.exception("utterance %s failed", utt.id)
                self.outcomes.finish(utt, UtteranceState.FAILED, f"{type(exc).__name__}: {exc}")
            finally:
                self.playout.speaking = None
                self._current_task = None
                self.queue.finished(utt.role)
            # a stop that reached the utterance as it ended (and so did not end it) is a stop
            if self._worker is not None and self._worker.cancelling():
                raise asyncio.CancelledError

    async def _perform(self, utt: Utterance) -> None:
        await self.pipeline.perform(utt, self._beside(utt))
        self.playout.performed(utt, self.broadcast.write_head)

    def _beside(self, utt: Utterance) -> list[Utterance]:
        """The chat prompts of `utt`'s persona that go next, whose replies can be written in
        one generation with its own (at most WRITTEN_TOGETHER in all): each stands alone (no
        conversation's turn, which answers what is spoken before it) and has none yet."""
        if not self._asks_alone(utt):
            return []
        persona = utt.character.persona
        alike = [
            w
            for w in self.queue.waiting()
            if self._asks_alone(w) and w.character.persona == persona
        ]
        return alike[: WRITTEN_TOGETHER - 1]

    @staticmethod
    def _asks_alone(utt: Utterance) -> bool:
        return utt.mode == "chat" and utt.reply_to is None and not utt.cache and utt.written is None

    def _said(self, utt_id: str) -> Utterance | None:
        return next((u for u in reversed(self.history) if u.id == utt_id), None)

    def _turns_before(self, utt: Utterance) -> list[tuple[str, str]]:
        """(role, spoken text) of the conversation's turns before `utt`, oldest first, at most
        TURNS_HEARD: by their `reply_to` links, through the history and, after a restart,
        the records of what was finished before it."""
        turns: list[tuple[str, str]] = []
        link = utt.reply_to
        while link is not None and len(turns) < TURNS_HEARD and (turn := self._turn(link)):
            role, spoken, link = turn
            turns.append((role, spoken))
        return turns[::-1]

    def _turn(self, utt_id: str) -> tuple[str, str, str | None] | None:
        """A line's role, its text as spoken and the line it answered, from the history or
        the records kept from before a restart."""
        said = self._said(utt_id)
        if said is not None:
            return said.role, said.spoken_text, said.reply_to
        kept = next((r for r in reversed(self.before_restart) if r.get("id") == utt_id), None)
        if kept is None:
            return None
        return str(kept.get("role", "")), str(kept.get("spoken_text") or ""), kept.get("reply_to")

    # ---- what the pages and the host are told ----------------------------------------------
    def upcoming(self) -> list[tuple[str, dict]]:
        """Events of speech still to be played, for a viewer who joins now."""
        return self.pipeline.announcer.upcoming(self.broadcast.write_head)

    def viewer_onset(self, sid: str, onset: dict) -> None:
        """A viewer drew an utterance's first voiced viseme (its page's record, checked)."""
        utt = self.playout.find(onset["id"])
        utt = utt or self._said(onset["id"])
        if utt is not None:  # else an utterance long forgotten, or an id the page made up
            self.pipeline.figures.viewer_onset(utt, sid, onset)

    def snapshot(self) -> dict:
        return {
            "queue": [u.to_json() for u in self.queue.waiting()],
            "current": self.current.to_json() if self.current else None,
            "recent": (self.before_restart + [u.to_json() for u in self.history])[-20:],
        }
