"""What a viewer may send, checked at the edge: each figure a page reports within what any page
plausibly measures, its records of when it drew a line's first voiced viseme, and its chat
text without the characters that would rewrite the screens showing it. Nothing a viewer sends
reaches the show before it passed here (server/transport/signals.py)."""

from __future__ import annotations

import math
import unicodedata
from typing import Any, TypeGuard

DAY_MS = 86_400_000
# What a page may report, each within what any page plausibly measures: a figure outside is
# dropped at the edge, so none can overflow a sum or turn a median into infinity (which
# the host panel then could not parse). The most any output device plausibly has is 5 s
# (Bluetooth headsets and busy sound servers: hundreds of ms); a viewer's own clock may be
# off the server's by a year.
STAT_RANGES = {
    "lipsync_offset_ms": (-10_000.0, 10_000.0),
    "fps": (0.0, 1000.0),
    "dropped_frames": (0.0, 1e9),
    "clock_offset_ms": (-366.0 * DAY_MS, 366.0 * DAY_MS),
    "clock_uncertainty_ms": (0.0, DAY_MS),
    "lipsync_calibration_ms": (-10_000.0, 10_000.0),
    "render_scale": (0.0, 16.0),
    "frame_jitter_ms": (0.0, 60_000.0),
    "visemes_seen_share": (0.0, 1.0),
    "output_latency_ms": (0.0, 5000.0),
    "lookahead_ms": (0.0, 5000.0),
}
ONSET_RANGE_MS = (-10_000.0, 10_000.0)  # a drawn viseme against its sound, picture − sound
# a page's output device latency: how it knows it (web/static/stage/latency.js)
OUTPUT_LATENCY_SOURCES = {"reported", "timestamp", "none"}
UTTERANCE_ONSETS_PER_REPORT = 50  # utterances' first voiced visemes a page may report at once
UTTERANCE_ID_CHARS = 64
UTTERANCE_ONSET_FIELDS = ("id", "sample", "heard_ms", "drawn_ms")  # all that is passed on

# Bidi embeddings, overrides, isolates and marks: in a viewer's message they reorder the text
# around it on every screen that shows it (the host panel's included)
BIDI_CONTROLS = frozenset(
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
)


def plain_text(text: str) -> str:
    """A viewer's text without control characters (one line: no newlines either), bidi
    controls, or halves of surrogate pairs (JSON can carry one; it is no text)."""
    return "".join(
        c for c in text if c not in BIDI_CONTROLS and unicodedata.category(c) not in ("Cc", "Cs")
    )


def valid_onset_roles(value: Any, onsets: int) -> bool:
    """A page's `lipsync_onset_roles`: the role of each of its `onsets` lip-sync offsets."""
    return (
        isinstance(value, list)
        and len(value) == onsets
        and all(r is None or isinstance(r, str) and len(r) <= UTTERANCE_ID_CHARS for r in value)
    )


def valid_utterance_onsets(value: Any, now_ms: float) -> bool:
    """A page's `utterance_onsets`: where and when it drew each utterance's first voiced
    viseme, on the server's clock (`now_ms`) as the page reads it."""
    return (
        isinstance(value, list)
        and len(value) <= UTTERANCE_ONSETS_PER_REPORT
        and all(valid_utterance_onset(item, now_ms) for item in value)
    )


def valid_utterance_onset(item: Any, now_ms: float) -> bool:
    today = (now_ms - DAY_MS, now_ms + DAY_MS)
    return (
        isinstance(item, dict)
        and isinstance(item.get("id"), str)
        and len(item["id"]) <= UTTERANCE_ID_CHARS
        and isinstance(item.get("sample"), int)
        and not isinstance(item["sample"], bool)
        and 0 <= item["sample"] < 2**53
        and within(item.get("heard_ms"), today)
        and within(item.get("drawn_ms"), today)
        and abs(item["drawn_ms"] - item["heard_ms"]) <= ONSET_RANGE_MS[1]
    )


def finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def within(value: Any, bounds: tuple[float, float]) -> bool:
    """A number (not a bool) inside `bounds`, ends included: never inf or NaN."""
    return finite(value) and bounds[0] <= value <= bounds[1]
