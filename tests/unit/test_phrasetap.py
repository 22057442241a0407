"""The ASR check hears each phrase as the broadcast sent it, whole, once."""

from __future__ import annotations

import numpy as np

from server.phrasetap import PhraseTap

FRAME = 960


def broadcast(sound: np.ndarray, tap: PhraseTap, upto: int) -> None:
    """Emit `sound` (the broadcast's samples from 0) frame by frame up to sample `upto`."""
    for start in range(0, upto, FRAME):
        tap.frame(start, sound[start : start + FRAME])


def test_a_phrase_is_gathered_across_frames_and_handed_on_once_complete():
    sound = np.arange(10 * FRAME, dtype=np.int16)
    got = []
    tap = PhraseTap(lambda *args: got.append(args))
    tap.expect("u1", "Hello there.", 1500, 2000, chunk="c1")  # inside frames 1 to 3
    tap.expect("u1", "And more.", 3500, 1000, chunk="c2")  # right after it
    broadcast(sound, tap, 3 * FRAME)
    assert got == []  # the first ends at 3500, inside the frame not yet sent
    broadcast(sound, tap, 10 * FRAME)
    assert [(g[0], g[1], g[3], g[4]) for g in got] == [
        ("u1", "Hello there.", 1500, "c1"),
        ("u1", "And more.", 3500, "c2"),
    ]
    assert np.array_equal(got[0][2], sound[1500:3500])
    assert np.array_equal(got[1][2], sound[3500:4500])
    assert len(tap) == 0


def test_an_interrupted_utterance_is_not_checked():
    got = []
    tap = PhraseTap(lambda *args: got.append(args))
    tap.expect("cut", "Never mind.", 0, 3 * FRAME, chunk=None)
    tap.expect("kept", "Still here.", 3 * FRAME, FRAME, chunk=None)
    tap.frame(0, np.ones(FRAME, np.int16))
    tap.forget(["cut"])
    for start in range(FRAME, 5 * FRAME, FRAME):
        tap.frame(start, np.ones(FRAME, np.int16))
    assert [g[0] for g in got] == ["kept"]
