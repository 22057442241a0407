"""Speech scheduled on the broadcast clock, read once per frame by the broadcast.

The stage writes speech chunks at sample positions; the broadcast reads 20 ms frames in order.
An interrupt cuts everything of a role from a sample onward, so nothing scheduled after the
interrupt point can reach a viewer.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass
class Segment:
    """One speech chunk placed on the broadcast clock (int16 mono, 48 kHz)."""

    start: int
    pcm: np.ndarray
    role: str
    utterance_id: str

    @property
    def end(self) -> int:
        return self.start + len(self.pcm)


class SpeechTimeline:
    """Ordered segments of scheduled speech; mixed where roles overlap."""

    def __init__(self) -> None:
        self._segments: deque[Segment] = deque()

    def schedule(self, segment: Segment) -> None:
        self._segments.append(segment)

    def read(self, start: int, count: int) -> tuple[np.ndarray, set[str]]:
        """Mix of all speech in [start, start+count), and the utterances it belongs to."""
        out = np.zeros(count, dtype=np.int32)
        heard: set[str] = set()
        end = start + count
        for seg in self._segments:
            lo, hi = max(start, seg.start), min(end, seg.end)
            if lo < hi:
                out[lo - start : hi - start] += seg.pcm[lo - seg.start : hi - seg.start]
                heard.add(seg.utterance_id)
        return np.clip(out, -32768, 32767).astype(np.int16), heard

    def drop_before(self, sample: int) -> None:
        """Forget segments that have been fully played."""
        self._segments = deque(s for s in self._segments if s.end > sample)

    def cut(self, at_sample: int, role: str | None = None) -> int:
        """Remove speech of `role` (all when None) from `at_sample` on; returns samples cut."""
        kept: deque[Segment] = deque()
        removed = 0
        for seg in self._segments:
            if role is not None and seg.role != role or seg.end <= at_sample:
                kept.append(seg)
            elif seg.start >= at_sample:
                removed += len(seg.pcm)
            else:
                keep = at_sample - seg.start
                removed += len(seg.pcm) - keep
                kept.append(Segment(seg.start, seg.pcm[:keep], seg.role, seg.utterance_id))
        self._segments = kept
        return removed

    def end_of(self, role: str | None = None) -> int:
        """First sample after the last scheduled speech (of `role`), 0 when none."""
        ends = [s.end for s in self._segments if role is None or s.role == role]
        return max(ends, default=0)
