"""Lip-sync figures from a probe's per-frame records (see probe.js): onsets and offsets.

A record is {"t": epoch ms, "rms": heard energy of the last 5 ms, "loudAt": when the first sample
above the onset amplitude in the probe's 43 ms buffer was heard (or null), "soundUntil": when its
last sample above silence was heard (or null), "mouth": mouth_open as drawn}. The audio onset
is that first loud sample after a quiet stretch (timed within the frame, not at the frame); the
mouth onset is the first frame drawn with the mouth open past a threshold near it.
Offset = mouth − audio (positive: the mouth is late).

Only onsets after `QUIET_MS` of quiet count (starts of lines and sentences): inside a phrase a
stop consonant's closure is silent while the lips already form it, which is no sync error.
"""

from __future__ import annotations

from collections.abc import Sequence

LOUD = 0.02  # RMS of speech as received; decoded silence is below 1e-3
QUIET = 0.005
OPEN = 0.2
QUIET_MS = 300.0
SEARCH_MS = 250.0


def audio_onsets(records: Sequence[dict], quiet_ms: float = QUIET_MS) -> list[float]:
    """Times (ms) where the heard audio turns loud after at least `quiet_ms` of quiet."""
    onsets, quiet_since = [], None
    for r in records:
        if r["rms"] < QUIET:
            quiet_since = r["t"] if quiet_since is None else quiet_since
        elif r.get("loudAt") is not None or r["rms"] >= LOUD:
            onset = r.get("loudAt") or r["t"]
            if quiet_since is not None and onset - quiet_since >= quiet_ms:
                onsets.append(onset)
            quiet_since = None
    return onsets


def mouth_onset(records: Sequence[dict], near: float, window: float = SEARCH_MS) -> float | None:
    """The first time within ±window of `near` that the drawn mouth opens past OPEN, after
    a closed frame (an already-open mouth has no onset here)."""
    was_closed = False
    for r in records:
        if r["t"] < near - window:
            continue
        if r["t"] > near + window:
            break
        if r["mouth"] < OPEN:
            was_closed = True
        elif was_closed:
            return r["t"]
    return None


def onset_offsets(records: Sequence[dict]) -> list[float]:
    """Mouth-minus-audio offsets (ms), one per audio onset that has a mouth onset near it."""
    out = []
    for t in audio_onsets(records):
        m = mouth_onset(records, t)
        if m is not None:
            out.append(m - t)
    return out


def silent_after(records: Sequence[dict], t: float, key: str = "soundUntil") -> float:
    """When the audio last had sound (timed within the probe's buffer), if after `t`; else `t`:
    the moment from which the page hears silence. `key`: "soundUntil" for the stream the page
    receives, "playedUntil" for what it plays."""
    until = [r[key] for r in records if r.get(key) is not None]
    return max([t, *until])
