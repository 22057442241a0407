"""Where sound starts in a chunk of speech, on the broadcast clock.

The page's heard clock (RTP playout readings) is off by 10-40 ms at speech onsets, by line:
the jitter buffer changes while the stream is quiet. The server knows exactly which sample
sound starts at, so it says so (the `onsets` of a `visemes` event), and the page, which hears
the stream a little before it plays it, anchors its clock on each onset it hears.

An onset is the first loud sample after `quiet_ms` of quiet samples; softer samples between
them end the quiet run but do not cancel the onset (a soft rise still leads to one). The
chunk's first loud sample is always one: what came before it is another chunk's business, and
the page only matches the onsets it hears after a quiet stretch of its own (a longer one than
this, so every onset it hears is among these).

The pages take these numbers from here (server/facts.py renders them into each page).
"""

from __future__ import annotations

import numpy as np

from ..media.mediaclock import SAMPLE_RATE
from .visemes import VisemeFrame

LOUD = 0.02  # of full scale: the start of a sound
QUIET = 0.004  # at most this is silence (Opus-decoded silence stays below 0.001)
QUIET_MS = 50.0
SNAP_MS = 40.0  # a voiced viseme this close after a sound onset in "silence" starts at it
VOWELS = {"aa", "E", "I", "O", "U"}  # open shapes: the mouth opens with their sound, not before


def sound_onsets(
    pcm: np.ndarray, rate: int, quiet_ms: float = QUIET_MS, before: np.ndarray | None = None
) -> list[int]:
    """Sample offsets in int16 `pcm` where sound starts (see the module's docstring).
    `before`: the speech placed just before it, where it goes on from it (the rest of a
    sentence after its opening, opening.py): its first sound is no onset unless quiet leads
    to it there too."""
    if before is not None and len(before):
        found = sound_onsets(np.concatenate([before, pcm]), rate, quiet_ms)
        return [o - len(before) for o in found if o >= len(before)]
    x = np.abs(pcm.astype(np.int32))
    loud = np.flatnonzero(x > LOUD * 32768)
    if not len(loud):
        return []
    quiet = np.concatenate([[0], (x <= QUIET * 32768).astype(np.int8), [0]])
    edges = np.diff(quiet)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    run_ends = ends[ends - starts >= quiet_ms * rate / 1000]
    after = np.searchsorted(loud, run_ends)
    return sorted({int(loud[0])} | {int(loud[i]) for i in after if i < len(loud)})


def open_on_sound(
    frames: list[VisemeFrame], onsets: list[int], rate: int = SAMPLE_RATE
) -> list[VisemeFrame]:
    """The frames with each voiced viseme that follows a pause starting where its sound does,
    when the sound starts in that pause (within SNAP_MS of the viseme), or, for a vowel, in its
    first SNAP_MS. Piper's alignment puts a line's first vowel 5-15 ms after its sound begins,
    now and then 5 ms before it; the mouth opens with the sound. (A consonant stays: its lips
    take their shape before its burst.)"""
    out = list(frames)
    for onset in onsets:
        for i in range(1, len(out)):
            pause, voiced = out[i - 1], out[i]
            if voiced.sample > onset + SNAP_MS * rate / 1000:
                break
            if pause.viseme != "sil" or voiced.viseme == "sil":
                continue
            late = onset - voiced.sample  # < 0: the sound starts in the pause
            in_pause = pause.sample <= onset < voiced.sample
            snap = min(SNAP_MS * rate / 1000, voiced.duration)
            in_vowel = voiced.viseme in VOWELS and 0 < late < snap
            if in_pause or in_vowel:
                out[i] = VisemeFrame(onset, voiced.viseme, voiced.duration - late, voiced.weight)
                if onset > pause.sample:
                    out[i - 1] = VisemeFrame(pause.sample, "sil", onset - pause.sample)
                else:
                    del out[i - 1]
                break
    return out
