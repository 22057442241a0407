"""The broadcast standards' lip-sync windows, as picture − sound (ms): [low, high], the picture
at most −low early and at most high late. The host desk grades viewers' lip-sync by them, the
benchmarks set their goals by them, and the pages receive them (server/facts.py)."""

from __future__ import annotations

# ATSC IS-191: sound at most 15 ms ahead of the picture, 45 ms behind
ATSC = (-45.0, 15.0)
# EBU R37: sound at most 40 ms ahead of the picture, 60 ms behind
EBU_R37 = (-60.0, 40.0)


def in_window(offsets: list[float], window: tuple[float, float]) -> float | None:
    """The share (0..1) of picture − sound offsets inside a window; None for none."""
    if not offsets:
        return None
    low, high = window
    return round(sum(low <= ms <= high for ms in offsets) / len(offsets), 3)
