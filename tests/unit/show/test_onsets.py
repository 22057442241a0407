"""Sound onsets on the broadcast clock, and visemes that open with the sound."""

from __future__ import annotations

import numpy as np

from server.show.onsets import open_on_sound, sound_onsets
from server.show.visemes import VisemeFrame

RATE = 48000
MS = RATE // 1000


def tone(ms: float, amp: float = 0.3, ramp_ms: float = 0.0) -> np.ndarray:
    n = int(ms * MS)
    t = np.arange(n) / RATE
    envelope = np.minimum(1.0, t * 1000 / ramp_ms) if ramp_ms else np.ones(n)
    return np.round(amp * envelope * np.sin(2 * np.pi * 200 * t + 0.5) * 32767).astype(np.int16)


def quiet(ms: float) -> np.ndarray:
    return np.zeros(int(ms * MS), np.int16)


def test_the_first_sound_and_each_sound_after_a_pause_are_onsets() -> None:
    pcm = np.concatenate([quiet(30), tone(200), quiet(80), tone(100), quiet(20), tone(100)])
    found = sound_onsets(pcm, RATE)
    # the 20 ms gap is inside speech (a stop's closure), not a pause
    assert len(found) == 2, found
    first_loud = np.flatnonzero(np.abs(pcm[: 230 * MS].astype(int)) > 0.02 * 32768)[0]
    assert found[0] == first_loud
    assert 310 * MS <= found[1] <= 311 * MS


def test_a_soft_rise_leads_to_an_onset_at_its_first_loud_sample() -> None:
    pcm = np.concatenate([quiet(100), tone(200, ramp_ms=30)])
    found = sound_onsets(pcm, RATE)
    loud = np.flatnonzero(np.abs(pcm.astype(int)) > 0.02 * 32768)
    assert found == [int(loud[0])]
    assert found[0] > 100 * MS + 1 * MS  # the rise's first samples are softer than an onset


def test_silence_has_no_onsets() -> None:
    assert sound_onsets(quiet(500), RATE) == []
    assert sound_onsets(tone(300, amp=0.003), RATE) == []


def frames(*spans: tuple[str, int]) -> list[VisemeFrame]:
    out, at = [], 0
    for viseme, ms in spans:
        out.append(VisemeFrame(at, viseme, ms * MS))
        at += ms * MS
    return out


def test_a_voiced_viseme_after_a_pause_opens_where_its_sound_starts() -> None:
    track = frames(("sil", 20), ("O", 100), ("nn", 50))
    moved = open_on_sound(track, [8 * MS])
    assert [(f.viseme, f.sample, f.duration) for f in moved] == [
        ("sil", 0, 8 * MS),
        ("O", 8 * MS, 112 * MS),
        ("nn", 120 * MS, 50 * MS),
    ]
    # sound from the chunk's first sample: no silence is left before the vowel
    assert [f.viseme for f in open_on_sound(track, [0])] == ["O", "nn"]
    assert open_on_sound(track, [0])[0].duration == 120 * MS


def test_a_vowel_aligned_before_its_sound_opens_when_the_sound_starts() -> None:
    track = frames(("sil", 20), ("E", 100), ("nn", 50))
    moved = open_on_sound(track, [25 * MS])
    assert [(f.viseme, f.sample, f.duration) for f in moved] == [
        ("sil", 0, 25 * MS),
        ("E", 25 * MS, 95 * MS),
        ("nn", 120 * MS, 50 * MS),
    ]
    # a sound well inside the vowel is not its start
    assert open_on_sound(track, [70 * MS]) == track


def test_visemes_stay_where_the_sound_gives_no_reason_to_move_them() -> None:
    track = frames(("sil", 100), ("DD", 60), ("aa", 100))
    # a stop's burst comes inside its own viseme: the lips closed before it
    assert open_on_sound(track, [130 * MS]) == track
    # a sound long before the viseme is not its start
    assert open_on_sound(track, [10 * MS]) == track
    assert open_on_sound(track, []) == track
