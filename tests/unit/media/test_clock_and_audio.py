"""Media clock arithmetic, RTP unwrapping, resampling, the speech timeline."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from server.media.broadcast import Broadcast
from server.media.mediaclock import MediaClock, unwrap_rtp
from server.media.timeline import DUCK, RAMP, Segment, SpeechTimeline
from server.show.resample import resample_int16, resampled_length


def test_media_clock_maps_time_to_samples_and_back():
    clock = MediaClock(epoch=100.0)
    assert clock.now_sample(101.0) == 48_000
    assert clock.time_of(48_000) == pytest.approx(101.0)
    assert clock.frame_index(959) == 0 and clock.frame_index(960) == 1
    assert clock.frame_start(3) == 2880
    assert clock.samples(0.02) == 960 and clock.seconds(960) == pytest.approx(0.02)


def test_skewed_clock_runs_fast_by_its_ppm():
    clock = MediaClock(epoch=0.0, rate_ppm=200)
    assert clock.now_sample(1000.0) == 48_000_000 + 9_600


@pytest.mark.parametrize(
    "rtp_ts, base, near, expected",
    [
        (1000, 1000, 0, 0),
        (5, 2**32 - 10, 0, 15),  # the RTP timestamp wrapped past 2**32
        (100, 200, 0, -100),  # just before the base (the codec delay makes the first pts < 0)
        (100, 200, 2**32, 2**32 - 100),
        (300, 200, 2**32 + 50, 2**32 + 100),  # a night later: the second lap
    ],
)
def test_rtp_unwrapping_picks_the_lap_nearest_the_last_sample(rtp_ts, base, near, expected):
    assert unwrap_rtp(rtp_ts, base, near) == expected


def test_resampling_keeps_duration_and_pitch():
    sr_in, n = 22_050, 22_050 * 2 + 7
    t = np.arange(n) / sr_in
    tone = (np.sin(2 * np.pi * 440 * t) * 10_000).astype(np.int16)
    out = resample_int16(tone, sr_in, 48_000)
    assert len(out) == resampled_length(n, sr_in, 48_000) == round(n * 48_000 / sr_in)
    spectrum = np.abs(np.fft.rfft(out.astype(float)))
    peak_hz = np.argmax(spectrum) * 48_000 / len(out)
    assert abs(peak_hz - 440) < 2
    # no start-up delay: the onset of a click stays at the same time
    click = np.zeros(2205, np.int16)
    click[1000] = 20_000
    moved = resample_int16(click, sr_in, 48_000)
    assert abs(int(np.argmax(np.abs(moved))) - round(1000 * 48_000 / sr_in)) <= 1


def test_timeline_reads_mixes_and_cuts():
    tl = SpeechTimeline()
    tl.schedule(Segment(100, np.full(2900, 1000, np.int16), "a", "u1"))
    tl.schedule(Segment(1000, np.full(1200, 500, np.int16), "b", "u2"))
    pcm, heard = tl.read(0, 3200)
    assert pcm[99] == 0 and pcm[100] == 1000 and pcm[2500] == 1000 and pcm[3000] == 0
    assert heard == {"u1", "u2"}
    assert tl.end_of("a") == 3000 and tl.end_of() == 3000 and tl.end_of("b") == 2200
    assert tl.cut(2000, "a") == 1000  # only role a, from sample 2000 on
    pcm, _ = tl.read(0, 3200)
    assert pcm[1999] > 0 and pcm[2100] == 500 and pcm[2199] == 500 and pcm[2200] == 0
    tl.cut(0)
    assert not np.any(tl.read(0, 3200)[0])


def test_a_voice_that_comes_in_over_another_is_on_top_the_other_ducked_without_a_click():
    tl = SpeechTimeline()
    tl.schedule(Segment(0, np.full(4800, 1000, np.int16), "a", "first"))
    tl.schedule(Segment(1000, np.full(1000, 400, np.int16), "b", "later"))
    tl.schedule(Segment(2000, np.full(1000, 400, np.int16), "b", "later"))  # its next phrase
    pcm, heard = tl.read(0, 4800)
    assert heard == {"first", "later"}
    assert pcm[999] == 1000  # before the second voice: the first alone, whole
    assert pcm[1000 + RAMP] == 1000 * DUCK + 400  # under it: ducked, for all its phrases
    assert pcm[2000] == 1000 * DUCK + 400
    assert pcm[3000 + 10] == 1000  # after it: back whole
    # the gain glides: no step bigger than the ramp's from one sample to the next
    steps = np.abs(np.diff(pcm[900:1100].astype(float) - np.r_[np.zeros(100), np.full(100, 400)]))
    assert steps.max() <= 1000 * (1 - DUCK) / RAMP + 1
    # a role read alone (what its own onsets are found in) is not ducked
    alone, _ = tl.read(0, 4800, "a")
    assert np.all(alone == 1000)
    # the first voice's own later phrases do not put it on top of the one that came in after it
    tl.schedule(Segment(4800, np.full(1000, 1000, np.int16), "a", "first"))
    tl.schedule(Segment(4800, np.full(1000, 400, np.int16), "b", "later"))
    assert tl.read(5000, 1)[0][0] == 1000 * DUCK + 400


def test_a_late_broadcast_lets_the_loop_run_between_the_frames_it_catches_up():
    async def run():
        clock = MediaClock(epoch=time.monotonic() - 0.4)  # 20 frames behind from the start
        broadcast = Broadcast(clock, SpeechTimeline())
        seen = []

        async def other_work():  # a viewer's sender, socket.io: anything else on the loop
            while len(seen) < 200:
                seen.append(broadcast.frames_sent)
                await asyncio.sleep(0)

        other = asyncio.create_task(other_work())
        broadcast.start()
        await asyncio.sleep(0.1)
        await broadcast.stop()
        other.cancel()
        return seen

    seen = asyncio.run(run())
    assert any(0 < n < 20 for n in seen), seen[:40]  # it ran while frames were caught up
