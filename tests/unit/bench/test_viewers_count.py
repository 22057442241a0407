"""A long run's viewers count what they heard from a tally of each frame's place and arrival,
not from the frames: a frame missing, and one that came late, are each counted once."""

from __future__ import annotations

from server.bench.viewer import Tally
from server.bench.viewers import counted
from server.media.mediaclock import FRAME_SAMPLES as FRAME


def test_a_frame_missing_and_one_late_are_counted_from_the_tally():
    tally = Tally()
    for k in range(500):
        if k == 100:
            continue  # lost on the way
        arrived = 10.0 + k * FRAME / 48_000 + 0.040  # a steady 40 ms behind the broadcast
        if k == 300:
            arrived += 0.250  # held up: 250 ms later than the others
        tally.add(k * FRAME, arrived)
    assert counted(tally) == (500, 1, 1)
    tally.clear()
    assert not tally.samples and not tally.arrived
