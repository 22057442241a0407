"""The ASR check hears each phrase as the broadcast sent it, whole, once."""

from __future__ import annotations

import numpy as np

from server.show.phrasetap import PhraseTap

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


def test_an_opening_goes_on_with_the_rest_of_its_sentence_as_one_phrase():
    sound = np.arange(10 * FRAME, dtype=np.int16)
    got = []
    tap = PhraseTap(lambda *args: got.append(args))
    opening = tap.expect("u1", "Welcome back", 0, 1500, chunk="head")
    broadcast(sound, tap, FRAME)  # its first frame left before the rest was synthesized
    assert tap.extend(opening, 1500, 2500, "Welcome back to the show.", chunk="both")
    broadcast(sound, tap, 10 * FRAME)
    assert [(g[1], g[3], g[4]) for g in got] == [("Welcome back to the show.", 0, "both")]
    assert np.array_equal(got[0][2], sound[:4000])  # the first frame too
    # handed on already, or not right after it: not extended
    assert not tap.extend(opening, 4000, 100, "late", chunk=None)
    other = tap.expect("u2", "Hi", 5000, 500, chunk=None)
    assert not tap.extend(other, 5600, 100, "gap", chunk=None)
