"""Lip-sync figures from a probe's per-frame records (see probe.js): onsets and offsets.

A record is {"t": epoch ms, "heard": when the newest sample the probe read leaves the speakers,
"latency": the output latency the page's audio context reports (ms), "rms": the played energy of
the last 5 ms, "loudAt": when the first sample above the onset amplitude after 5 ms of quiet,
newer than the last record's, is heard (or null), "playedUntil": when its last sample above
silence is heard (or null), "mouth": mouth_open as drawn, "viseme": the viseme drawn, "frame":
the frame's timestamp, epoch ms, "unread": ms of the audio that went by between this read and
the one before, which no read held}. Sound is timed as it leaves the speakers, where the viewer
hears it; a render-time figure (`rendered_offsets`) takes the reported latency off. The audio
onset is that first loud sample after a quiet stretch (timed within the frame, not at the
frame); the mouth onset is the first frame drawn, as the mouth opens from closed, past half the
opening of its first viseme: an edge is timed at its midpoint, as the page centres each
viseme's crossfade on its start (a fixed threshold would time an "aa" earlier than an "I").
The mouth is timed when its frame is seen: a display period after the vsync it was begun at
(its timestamp), however late in it the scripts that drew it ran, unless they ran past the next
vsync and it went by without a frame: then a period later.
Offset = mouth − audio (positive: the mouth is late).

Only onsets after `QUIET_MS` of quiet count (starts of lines and sentences): inside a phrase a
stop consonant's closure is silent while the lips already form it, which is no sync error.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import pairwise
from statistics import median

LOUD = 0.02  # RMS of speech as received; decoded silence is below 1e-3
QUIET = 0.005
OPEN = 0.2  # an opening counts when the mouth reaches this (a p or an f barely opens it)
CLOSED = 0.05
SPEAKING = 0.05  # RMS well inside speech (a line's quietest voiced stretches are lower)
RISE_MS = 150.0  # a rise from closed lasts until the mouth stops opening, at most this long
QUIET_MS = 300.0
SEARCH_MS = 250.0


def audio_onsets(records: Sequence[dict], quiet_ms: float = QUIET_MS) -> list[float]:
    """Times (ms) where the heard audio turns loud after at least `quiet_ms` of quiet."""
    return [t for t, _ in _loud_after_quiet(records, quiet_ms)]


def _loud_after_quiet(records: Sequence[dict], quiet_ms: float) -> list[tuple[float, dict]]:
    onsets, quiet_since = [], None
    for r in records:
        heard = r.get("heard", r["t"])  # records without it were timed when read
        # where the quiet began: when the sound last heard ended, where this read holds that
        # (a page drawing a frame every 150 ms reads its first quiet that long after it)
        quiet_from = r.get("playedUntil") or heard
        if r.get("unread"):  # audio went by between two reads: an onset in it is not known
            quiet_since = quiet_from if r["rms"] < QUIET else None
            continue
        # an onset is reported once, by the read that first holds it, even where that read's
        # last samples are quiet again (a context that renders 50-190 ms at once)
        if r.get("loudAt") is not None or r["rms"] >= LOUD:
            onset = r.get("loudAt") or heard
            if quiet_since is not None and onset - quiet_since >= quiet_ms:
                onsets.append((onset, r))
            quiet_since = None
        elif r["rms"] < QUIET:
            quiet_since = quiet_from if quiet_since is None else quiet_since
    return onsets


def mouth_onset(
    records: Sequence[dict], near: float, window: float = SEARCH_MS, period: float | None = None
) -> float | None:
    """The first time within ±window of `near` that the drawn mouth, opening from a closed
    frame, passes half the opening of its first viseme (at least OPEN by the end of the rise;
    an already-open mouth has no onset here). A slow page draws a 40 ms rise in two or three
    frames, so the rise is followed to its top, not for a fixed time; but a rise that slows
    and then speeds up again is a second, wider viseme ("Yes": the narrow y, then the e), and
    the first viseme's opening is where it slowed. `period`: the display's, from all the
    records (display_period) when not given. Taken from the frames around the onset alone, a
    page stalled there (a frame every 150 ms) had its stall for the display's period: each of
    its frames was timed seen 150 ms after it began, not a vsync, and no longer matched the
    frame Frames.late_at looks for, so the stall's onsets were neither right nor left out."""
    if period is None:
        period = display_period(records)
    # and the frames after them, to know whether the last one's scripts missed its vsync; and
    # the one before them, the closed mouth an opening inside the window rose from (a page
    # drawing 4 frames a second that opened the mouth early drew it closed more than the window
    # before the sound, and the line was lost: the ones whose mouth was late were kept). The
    # records are in time order, as the probe takes them.
    start = bisect_left(records, near - window, key=_time)
    beyond = records[max(0, start - 1) : bisect_right(records, near + window + 1000.0, key=_time)]
    near_by = [r for r in beyond if r["t"] <= near + window]
    for i, closed in enumerate(near_by[:-1]):
        if closed["mouth"] >= CLOSED or near_by[i + 1]["mouth"] < CLOSED:
            continue
        rise = [closed, near_by[i + 1]]
        for r in near_by[i + 2 :]:
            if r["t"] > closed["t"] + RISE_MS or r["mouth"] < rise[-1]["mouth"]:
                break
            rise.append(r)
        if rise[-1]["mouth"] >= OPEN:
            first = _first_opening(rise)
            half = next(r for r in rise[1:] if r["mouth"] >= first / 2)
            return seen_at(half, beyond, period)
    return None


def _time(record: dict) -> float:
    return record["t"]


def seen_at(record: dict, records: Sequence[dict], period: float | None = None) -> float:
    """When a frame's picture is seen: at the first vsync after its scripts ran. That is a
    display period after its timestamp (the shortest common interval between the records'
    frames, as a page missing vsyncs has longer ones), or two when the scripts were still
    running at the first (the probe's own record is taken after the page's) and that vsync went
    by without a frame; when it was drawn, for records without a timestamp. `period`: the
    display's, when known from more records than these."""
    if "frame" not in record:
        return record["t"]
    stamps = [r["frame"] for r in records if "frame" in r]
    after = next((s for s in stamps if s > record["frame"]), None)
    return _seen(record, after, _period(stamps) if period is None else period)


def display_period(records: Sequence[dict]) -> float:
    """The display's period over all `records` that have a frame timestamp (_period)."""
    return _period([r["frame"] for r in records if "frame" in r])


def _seen(record: dict, after: float | None, period: float) -> float:
    """seen_at, given the next frame's timestamp and the display's period: where the frame
    missed its first vsync, the first after its scripts ended (a starved page's frame ends
    100-200 ms after its timestamp, and no picture is seen before it is drawn)."""
    stamp = record["frame"]
    if after is not None and record["t"] > stamp + period and after - stamp > 1.5 * period:
        return stamp + period * max(2, math.ceil((record["t"] - stamp) / period))
    return stamp + period


# displays' refresh rates: 60 Hz first (headless Chromium's, and most displays'), then the
# rest slowest first
REFRESH_HZ = (60, 48, 50, 72, 75, 90, 100, 120, 144, 165, 240)
WHOLE_MS = 0.5  # how far from a whole number of periods an interval between vsyncs may be


def _period(stamps: Sequence[float]) -> float:
    """The display's period. Frames' timestamps are vsyncs, so every interval between them is a
    whole number of periods: the first of REFRESH_HZ that nine in ten intervals keep to (the
    slowest such, as a faster one's multiples fit too, but 60 Hz where that fits: a page at
    every tenth vsync of one fits 48 Hz). Else the shortest common interval. A page drawing a
    frame every 100-250 ms (five pages on a busy core) has no interval of one period: its
    shortest common one, 50 ms at a 60 Hz display, was taken for the period before, and each
    of its frames was timed seen 33 ms too late. (Like the page itself, this takes a 120 Hz
    display drawn at 60 fps for 60 Hz.)"""
    gaps = sorted(b - a for a, b in pairwise(stamps) if b > a)
    if not gaps:
        return 1000 / 60
    for hz in REFRESH_HZ:
        period = 1000 / hz
        whole = sum(g > period - WHOLE_MS and _off_whole(g, period) <= WHOLE_MS for g in gaps)
        if whole >= 0.9 * len(gaps):
            return period
    return gaps[len(gaps) // 10]


def _off_whole(ms: float, period: float) -> float:
    """How far `ms` is from a whole number of `period`s."""
    return abs(ms - period * round(ms / period))


def silent_while_loud(records: Sequence[dict]) -> list[bool]:
    """For each frame drawn while the sound leaving the speakers was well inside speech (the
    last 5 ms the probe read at SPEAKING or more): whether the page drew silence then, no
    viseme and the mouth closed. A meter of every frame, not only of line starts: a page whose
    heard clock has lost the sound draws a shut mouth through loud speech, and its own figures,
    timed by that clock, do not show it."""
    loud = [r for r in records if r["rms"] >= SPEAKING]
    return [r.get("viseme") in (None, "sil") and r["mouth"] < CLOSED for r in loud]


class Frames:
    """The frames of a probe's records: when each was seen and whether late, worked out once
    for every onset looked up in them (a window holds thousands of frames and a hundred
    onsets; each look-up redid the display's period and the page's medians)."""

    def __init__(self, records: Sequence[dict]) -> None:
        framed = [r for r in records if "frame" in r]
        stamps = [r["frame"] for r in framed]
        period = _period(stamps)
        self.stamps = stamps
        self.seen = [_seen(r, a, period) for r, a in zip(framed, [*stamps[1:], None], strict=True)]
        # the page's usual: a frame is late against it, as the page holds one back
        # (FrameStats.held): after 1.5 times its median interval, or seen half a period later
        # after its timestamp than its median frame. At 60 fps those are 1.5 periods; a page
        # steadily starved (a frame every 150 ms, its scripts 150 ms after the vsync) is slow,
        # not late at every frame, which left none of its line starts in the figure.
        usual_gap = max(period, median([b - a for a, b in pairwise(stamps)] or [period]))
        delays = [s - a for s, a in zip(self.seen, stamps, strict=True)]
        usual_delay = max(period, median(delays or [0.0]))
        self.late = [
            (i > 0 and stamps[i] - stamps[i - 1] > 1.5 * usual_gap)
            or delay > usual_delay + 0.5 * period
            for i, delay in enumerate(delays)
        ]

    def rate_at(self, t: float) -> int:
        """Frames the page drew in the second before `t` (ms): its frame rate then, counted as
        the page counts the one it reports (framestats.js: fps)."""
        return bisect_left(self.stamps, t) - bisect_left(self.stamps, t - 1000.0)

    def late_at(self, t: float, within: float = 10.0) -> bool:
        """Whether the frame seen at `t` (within `within` ms), or the frame before it, was seen
        late through the browser: it came after a vsync that went by without a frame (the main
        thread, or the compositor, was busy), or its own scripts ran past the vsync it was due
        at. What started then was seen that much late however the page timed it. The frame
        before counts too: the page centres a viseme's crossfade on its start, so the frame it
        draws at the start shows the mouth about half open, and where that is a little under
        half the probe's onset is the next frame; had the page's frame been late, that one is
        late by as much."""
        seen = self.seen
        at = next((i for i in range(1, len(seen)) if abs(seen[i] - t) <= within), None)
        return at is not None and (self.late[at] or self.late[at - 1])


def _first_opening(rise: Sequence[dict]) -> float:
    """How wide the rise's first viseme opens the mouth: the widest it is drawn while the page
    still draws that viseme (its frames name it: `viseme`). Eased, a narrow viseme running
    into a wider one ("I" then "E") does not always slow between them; taken for one opening,
    the half of the wider one came a frame after the narrow one's (its 0.27 of 0.55 against
    0.266 drawn). Records that name no viseme: where the rise slows and speeds up again."""
    names = [r.get("viseme") for r in rise[1:]]
    first = next((v for v in names if v not in (None, "sil")), None)
    if first is None:
        return rise[_first_top(rise)]["mouth"]
    top = 0.0
    for r, name in zip(rise[1:], names, strict=True):
        if name not in ("sil", first):
            break
        top = max(top, r["mouth"])
    return top


def _first_top(rise: Sequence[dict]) -> int:
    """The frame of a rise where its first viseme is reached: where the opening, having slowed
    after its fastest, speeds up again; else the top."""
    speed = [(b["mouth"] - a["mouth"]) / max(b["t"] - a["t"], 1e-3) for a, b in pairwise(rise)]
    for k in range(1, len(speed)):
        if speed[k] > speed[k - 1] < max(speed[:k]):
            return k
    return len(rise) - 1


def onsets(records: Sequence[dict]) -> list[tuple[float, float]]:
    """(audio onset, mouth onset) times (ms), for each audio onset with a mouth onset near it."""
    period = display_period(records)
    pairs = [(t, mouth_onset(records, t, period=period)) for t in audio_onsets(records)]
    return [(t, m) for t, m in pairs if m is not None]


def rendered_offsets(records: Sequence[dict]) -> list[float]:
    """Mouth − sound (ms) with the sound timed when the page's audio context rendered it, its
    reported output latency before it is heard: what the page and the probe measured before
    they timed sound at the speakers."""
    period = display_period(records)
    loud = _loud_after_quiet(records, QUIET_MS)
    found = [(t, r, mouth_onset(records, t, period=period)) for t, r in loud]
    return [m - (t - r.get("latency", 0.0)) for t, r, m in found if m is not None]


def line_offset(onset: dict) -> float:
    """A page's own figure for one line, from its `utterance_onsets` entry: when it saw the
    line's first voiced viseme less when it heard it (ms, positive: the picture is late)."""
    return onset["drawn_ms"] - onset["heard_ms"]


def matched(page_onsets: Sequence[dict], probed: Sequence[tuple[float, float]], within=100.0):
    """The probe's offset beside the page's own for the same line, and when the probe saw the
    mouth open: the page's utterance onsets ({drawn_ms, heard_ms}) paired with the probe's
    mouth onset nearest the moment the page saw the line start (its clock and the probe's both
    read the wall clock, to a few ms)."""
    pairs = []
    for u in page_onsets:
        near = [(abs(m - u["drawn_ms"]), m - t, m) for t, m in probed]
        best = min(near, default=None)
        if best is not None and best[0] <= within:
            pairs.append((best[1], line_offset(u), best[2]))
    return pairs


def silent_after(records: Sequence[dict], t: float, key: str = "soundUntil") -> float:
    """When the audio last had sound (timed within the probe's buffer), if after `t`; else `t`:
    the moment from which the page hears silence. `key`: "soundUntil" for the stream the page
    receives, "playedUntil" for what it plays."""
    until = [r[key] for r in records if r.get(key) is not None]
    return max([t, *until])
