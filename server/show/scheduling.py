"""The role scheduler: which waiting line goes next when several roles compete for the models.

The dubbing study's scheduler ranks a waiting request by role weight × continuity ÷ its waiting
time, which puts whoever waited longest last: under steady load, a low-weight role is never
served. Here waiting ages a line up instead:

    priority = weight(role) × (1 + continuity, where the role's last line ended within
               CONTINUITY_S) × e^(wait / aging_s)

and lines are compared by its logarithm, log weight + log boost + wait / aging_s (e^(wait/τ)
overflows in an hour). Every waiting line ages at the same rate, so a line that arrived d
seconds after another goes first only where its weight and boost are e^(d/τ) times larger: no
line arriving more than HORIZON = τ · ln(heaviest × (1 + continuity) ÷ its weight) after it ever
goes before it. That makes the wait bounded (`starvation_bound_s`): ahead of a line are at most
the lines already waiting when it came (fewer than the queue holds) and those arriving within
the horizon, of which no more than the queue holds plus one per line served meanwhile.

The stage takes its next line whenever it is free (a pick sorts the waiting lines, at most
`maxsize`, into the order the host sees): each pick ranks them as they stand then. Between
picks the ranking is re-evaluated every `period_s` (50 ms) for what the host sees
(`waiting()`). The queue is bounded
in all and per role: a role past its cap is refused with its name (429), the others still are
taken.

A scene's lines keep their order: a line that follows another (`Utterance.after`) is not
picked while that one waits. Its wait runs from its arrival all the same, so when its turn
comes it outranks what came after it.

A dubbing request's lines are paced (`put_all(paced=True)`): its client plays them in turn, so
a line that follows another is not due until that one is made and has played (`played`), and
its wait runs from then (earliest deadline first, among the lines of one weight). Until then
it goes only where nothing due waits. The lines of a storm of requests are then each
request's first before any's second: a client waits for its first audio, not for its last,
which has the first's playing time to come in.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

from .utterances import QueueFull

CONTINUITY_S = 0.3  # a role's line that ended this recently keeps the floor for its next
CONTINUITY = 0.5  # the boost it gets: (1 + CONTINUITY)
AGING_S = 2.0  # τ: a line gains a factor e for each τ it waits
NOT_DUE = math.inf  # a paced line's due time until the line before it has played


class Waiting(Protocol):
    """What the queue schedules: an utterance of the show, or a line to dub (server/dub)."""

    @property
    def id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def after(self) -> str | None: ...


W = TypeVar("W", bound=Waiting)


class RoleQueue(Generic[W]):
    """Waiting work (utterances, lines to dub), picked by role priority with aging; bounded in
    all and per role."""

    def __init__(
        self,
        maxsize: int,
        weights: Mapping[str, float] | None = None,
        caps: Mapping[str, int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        continuity: float = CONTINUITY,
        aging_s: float = AGING_S,
        period_s: float = 0.05,
    ) -> None:
        self.maxsize = maxsize
        self.weights = dict(weights or {})
        self.caps = dict(caps or {})
        self.clock, self.continuity, self.aging_s, self.period_s = (
            clock,
            continuity,
            aging_s,
            period_s,
        )
        self._items: list[tuple[float, int, W]] = []  # (due: arrival or played, order, it)
        self._order = 0
        self._ready = asyncio.Event()
        self._last: tuple[str, float] | None = None  # the role that spoke last, when it ended
        self._ranked: list[W] = []
        self._ranked_at = float("-inf")

    def __len__(self) -> int:
        return len(self._items)

    # ---- in ---------------------------------------------------------------------------------
    def put(self, utterance: W) -> None:
        self.put_all([utterance])

    def put_all(self, utterances: Sequence[W], paced: bool = False) -> None:
        """All of them or, where the queue or a role's cap has no room for all, none. `paced`:
        each that follows another is due only once that one has played (`played`)."""
        if len(self._items) + len(utterances) > self.maxsize:
            raise QueueFull(f"utterance queue is full ({self.maxsize})")
        for role, adding in Counter(u.role for u in utterances).items():
            cap = self.caps.get(role)
            if cap is not None and sum(u.role == role for _, _, u in self._items) + adding > cap:
                raise QueueFull(f'role "{role}" has {cap} lines waiting, its most')
        now = self.clock()
        for utterance in utterances:
            due = NOT_DUE if paced and utterance.after is not None else now
            self._items.append((due, self._order, utterance))
            self._order += 1
        self._ranked_at = float("-inf")
        self._ready.set()

    def played(self, line_id: str, at: float) -> None:
        """The line `line_id` is made and ends playing at `at` (or failed: `at` now): the paced
        line after it is due then."""
        self._items = [
            (at if u.after == line_id and due == NOT_DUE else due, order, u)
            for due, order, u in self._items
        ]
        self._ranked_at = float("-inf")

    def finished(self, role: str) -> None:
        """A line of `role` ended now: its next one keeps the floor for CONTINUITY_S."""
        self._last = (role, self.clock())

    # ---- ranking -----------------------------------------------------------------------------
    def weight(self, role: str) -> float:
        return self.weights.get(role, 1.0)

    def rank(self, role: str, arrived: float, now: float) -> float:
        """log(priority) of a line of `role` that arrived at `arrived`, at `now`."""
        boost = 0.0
        if self._last is not None and self._last[0] == role:
            if now - self._last[1] <= CONTINUITY_S:
                boost = math.log1p(self.continuity)
        return math.log(self.weight(role)) + boost + (now - arrived) / self.aging_s

    def _key(self, item: tuple[float, int, W], now: float) -> tuple[float, int]:
        """Higher goes first: the rank, and in a tie the earlier."""
        arrived, order, utt = item
        return (self.rank(utt.role, arrived, now), -order)

    # ---- out ---------------------------------------------------------------------------------
    async def get(self) -> W:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        self._ranked_at = float("-inf")
        best = self._in_order(self.clock())[0]
        self._items.remove(best)
        return best[2]

    def waiting(self) -> list[W]:
        """The waiting lines in the order they would be picked, ranked at most `period_s`
        ago (the host panel asks every second; a burst of asks ranks once)."""
        now = self.clock()
        if now - self._ranked_at >= self.period_s:
            self._ranked, self._ranked_at = [u for _, _, u in self._in_order(now)], now
        return list(self._ranked)

    def _in_order(self, now: float) -> list[tuple[float, int, W]]:
        """The waiting items in the order the picks take them: by rank at `now`, each scene
        line moved to just after the line it follows where it ranked before it."""
        ranked = sorted(self._items, key=lambda x: self._key(x, now), reverse=True)
        unplaced = {u.id for _, _, u in ranked}
        out: list[tuple[float, int, W]] = []
        held: dict[str, list[tuple[float, int, W]]] = {}  # lines whose line before is unplaced

        def place(item: tuple[float, int, W]) -> None:
            out.append(item)
            unplaced.discard(item[2].id)
            for follower in held.pop(item[2].id, []):
                place(follower)

        for item in ranked:
            if item[2].after in unplaced:
                held.setdefault(item[2].after, []).append(item)
            else:
                place(item)
        return out

    def remove_role(self, role: str | None) -> list[W]:
        """Take out every waiting utterance of `role` (all when None)."""
        return self.remove(lambda u: role is None or u.role == role)

    def remove(self, which: Callable[[W], bool]) -> list[W]:
        """Take out every waiting utterance `which` picks."""
        gone = [u for _, _, u in self._items if which(u)]
        self._items = [x for x in self._items if not which(x[2])]
        self._ranked_at = float("-inf")
        return gone

    # ---- the bound -------------------------------------------------------------------------
    def horizon_s(self, role: str) -> float:
        """No line arriving later than this after one of `role` goes before it."""
        heaviest = max([self.weight(role), *self.weights.values()])
        return max(
            0.0, self.aging_s * math.log(heaviest * (1 + self.continuity) / self.weight(role))
        )

    def starvation_bound_s(self, role: str, longest_s: float, shortest_s: float) -> float:
        """The longest a line of `role` can wait before it is picked, where each line takes
        the models between `shortest_s` and `longest_s`: the lines waiting when it came (at
        most maxsize − 1), and those arriving within the horizon (at most maxsize, plus one
        for each line served meanwhile), each served whole; the one being served when it came
        on top."""
        horizon = self.horizon_s(role)
        ahead = (self.maxsize - 1) + self.maxsize + math.ceil(horizon / shortest_s)
        return (ahead + 1) * longest_s
