"""Speech scheduled on the broadcast clock, read once per frame by the broadcast.

The stage writes speech chunks at sample positions; the broadcast reads 20 ms frames in order.
An interrupt cuts everything of a role from a sample onward, so nothing scheduled after the
interrupt point can reach a viewer.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

DUCK = 0.5  # −6 dB: a voice under one that came in after it
RAMP = 480  # 10 ms at 48 kHz, into the duck and out of it


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
    """Ordered segments of scheduled speech; mixed where roles overlap, the voice that came in
    last on top: the others are ducked under it (by DUCK, with RAMP-long ramps, no click)."""

    def __init__(self) -> None:
        self._segments: deque[Segment] = deque()
        self._began: dict[str, int] = {}  # each utterance's first sample: who came in last

    def schedule(self, segment: Segment) -> None:
        self._segments.append(segment)
        self._began.setdefault(segment.utterance_id, segment.start)

    def read(self, start: int, count: int, role: str | None = None) -> tuple[np.ndarray, set[str]]:
        """Mix of all speech (of `role` alone, not ducked, where given) in [start,
        start+count), and the utterances it belongs to."""
        out = np.zeros(count, dtype=np.float64)
        heard: set[str] = set()
        end = start + count
        spans = self._spans() if role is None else {}
        for seg in self._segments:
            lo, hi = max(start, seg.start), min(end, seg.end)
            if lo >= hi or role is not None and seg.role != role:
                continue
            pcm = seg.pcm[lo - seg.start : hi - seg.start].astype(np.float64)
            began = self._began[seg.utterance_id]
            over = [(a, b) for r, b0, a, b in spans.values() if r != seg.role and b0 > began]
            if over:
                pcm *= _ducked(np.arange(lo, hi), over)
            out[lo - start : hi - start] += pcm
            heard.add(seg.utterance_id)
        return np.clip(np.round(out), -32768, 32767).astype(np.int16), heard

    def _spans(self) -> dict[str, tuple[str, int, int, int]]:
        """Each utterance still scheduled: (role, first sample, then the first and end of
        the speech of it still held)."""
        spans: dict[str, tuple[str, int, int, int]] = {}
        for seg in self._segments:
            held = spans.get(seg.utterance_id)
            lo, hi = (seg.start, seg.end) if held is None else (held[2], max(held[3], seg.end))
            spans[seg.utterance_id] = (seg.role, self._began[seg.utterance_id], lo, hi)
        return spans

    def drop_before(self, sample: int) -> None:
        """Forget segments that have been fully played."""
        self._segments = deque(s for s in self._segments if s.end > sample)
        held = {s.utterance_id for s in self._segments}
        self._began = {u: at for u, at in self._began.items() if u in held}

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


def _ducked(samples: np.ndarray, over: list[tuple[int, int]]) -> np.ndarray:
    """The gain at each of `samples` of a voice that the spans `over` ([first, end) of later
    voices) come in over: DUCK inside them, ramping over RAMP samples at their edges."""
    depth = np.zeros(len(samples))
    for first, end in over:
        inside = np.minimum(samples - first, end - samples) / RAMP
        depth = np.maximum(depth, np.clip(inside, 0.0, 1.0))
    return 1.0 - (1.0 - DUCK) * depth
