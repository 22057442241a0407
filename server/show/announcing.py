"""Announcing: each placed chunk's phrase and viseme events go to the pages ahead of playout.

They are kept until the broadcast has played them, for a viewer who joins meanwhile (kept until
someone joined, they grew by some 8 KB a phrase all night), and trimmed at an interrupt as the
pages trim what they hold.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .placing import PlacedSpeech
from .stamps import Stamps

Emit = Callable[[str, dict], Awaitable[None]]  # a socket.io event to every page


@dataclass(frozen=True)
class Announced:
    end: int  # the broadcast sample it plays until
    role: str
    phrase: dict  # the "utterance" event
    visemes: dict  # the "visemes" event


class Announcer:
    def __init__(self, emit: Emit, stamps: Stamps) -> None:
        self.emit, self.stamps = emit, stamps
        self._kept: deque[Announced] = deque()

    def __len__(self) -> int:
        return len(self._kept)

    async def announce(self, placed: PlacedSpeech) -> None:
        phrase = {
            "id": placed.utterance_id,
            "role": placed.role,
            "text": placed.text,
            "start_sample": placed.start,
            "end_sample": placed.end,
        }
        visemes = {
            "utterance_id": placed.utterance_id,
            "role": placed.role,
            "sample_rate": self.stamps.clock.sample_rate,
            "frames": [f.to_json() for f in placed.frames],
            "onsets": placed.onsets,
        }
        self._kept.append(Announced(placed.end, placed.role, phrase, visemes))
        await self.emit("utterance", self.stamps.stamped(phrase))
        await self.emit("visemes", self.stamps.stamped(visemes))

    def forget_played(self, head: int) -> None:
        """Events of speech the broadcast has passed are no use to a viewer who joins."""
        while self._kept and self._kept[0].end <= head:
            self._kept.popleft()

    def upcoming(self, head: int) -> list[tuple[str, dict]]:
        """Events of speech still to be played from `head` on, for a viewer who joins now."""
        self.forget_played(head)
        events: list[tuple[str, dict]] = []
        for kept in self._kept:
            events += [
                ("utterance", self.stamps.stamped(kept.phrase)),
                ("visemes", self.stamps.stamped(kept.visemes)),
            ]
        return events

    def forget_after(self, at: int, role: str | None) -> None:
        """Trim what was announced at an interrupt, as the viewers do on `interrupt`."""
        kept: deque[Announced] = deque()
        for a in self._kept:
            if role is not None and a.role != role or a.end <= at:
                kept.append(a)
            elif a.phrase["start_sample"] < at:
                frames = [f for f in a.visemes["frames"] if f["sample"] < at]
                onsets = [o for o in a.visemes["onsets"] if o < at]
                cut = {**a.visemes, "frames": frames, "onsets": onsets}
                kept.append(Announced(at, a.role, {**a.phrase, "end_sample": at}, cut))
        self._kept = kept
