"""Stamping on the fused clock: every time that leaves the process is fused time, in ms since
the Unix epoch, so the pages, the host panel and the metrics compare like with like."""

from __future__ import annotations

from timesync.fused import FusedClock

from ..media.mediaclock import MediaClock


class Stamps:
    """Monotonic instants and broadcast samples as fused time (ms), read when asked."""

    def __init__(self, clock: MediaClock, fused: FusedClock) -> None:
        self.clock, self.fused = clock, fused

    def fused_ms(self, mono: float) -> float:
        """Fused time (ms since the Unix epoch) of monotonic time `mono`, read now."""
        return round(self.fused.at(mono) * 1000, 3)

    def sample_ms(self, sample: int) -> float:
        """Fused time (ms) at which broadcast `sample` is due."""
        return self.fused_ms(self.clock.time_of(sample))

    def stamped(self, event: dict) -> dict:
        """A phrase or viseme event with `start_ms`: the fused time of its first sample, read
        as it leaves (the fused clock slews, so a replayed event is stamped afresh)."""
        if "frames" in event:
            frames = event["frames"]
            if not frames:
                return event
            first = frames[0]["sample"]
        else:
            first = event["start_sample"]
        return {**event, "start_ms": self.sample_ms(first)}
