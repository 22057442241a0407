"""The probe's figures: audio onsets after quiet, mouth onsets timed at the midpoint of a rise."""

from server.bench.lipsync_figures import (
    Frames,
    audio_onsets,
    mouth_onset,
    onsets,
)


def frames(mouths, start=1000.0, step=20.0, loud_from=None):
    """Probe records every `step` ms: the drawn mouth, and sound from `loud_from` on."""
    out = []
    for i, m in enumerate(mouths):
        t = start + i * step
        loud = loud_from is not None and t >= loud_from
        out.append(
            {"t": t, "rms": 0.1 if loud else 0.0, "loudAt": loud_from if loud else None, "mouth": m}
        )
    return out


def test_a_wide_vowel_and_a_narrow_one_are_timed_at_their_midpoints():
    wide = frames([0, 0, 0.2, 0.6, 1.0, 1.0])  # "aa": a fixed 0.2 threshold would say 1040
    narrow = frames([0, 0, 0.1, 0.2, 0.3, 0.3])  # "I": it would say 1060
    assert mouth_onset(wide, 1040) == 1060
    assert mouth_onset(narrow, 1040) == 1060


def test_a_rise_drawn_in_few_frames_is_followed_to_its_top():
    slow = frames([0, 0, 0.3, 1.0, 0.8, 0.2], step=33.0)  # 30 fps: the rise spans two frames
    assert mouth_onset(slow, 1040) == 1000 + 3 * 33.0  # half of 1.0, not of 0.3


def test_a_narrow_viseme_then_a_wider_one_is_timed_at_the_first():
    # "Yes": the y opens the mouth to 0.3 and slows, then the e takes it on to 0.55
    yes = frames([0, 0, 0.15, 0.28, 0.3, 0.42, 0.55, 0.55])
    assert mouth_onset(yes, 1040) == 1040  # half of the y's 0.3, not of the e's 0.55
    one = frames([0, 0, 0.16, 0.3, 0.4, 0.45, 0.48, 0.48])  # one viseme, easing to its top
    assert mouth_onset(one, 1040) == 1060


def test_the_first_visemes_opening_is_where_the_page_stops_drawing_it():
    # "I" eased into "E" without slowing between them (the line that came out a frame late):
    # half of the I's 0.39, reached at 0.27, not half of the E's 0.55
    rise = frames([0, 0.04, 0.27, 0.39, 0.47, 0.54, 0.55])
    for r, name in zip(rise, ["sil", "sil", "I", "I", "E", "E", "E"], strict=True):
        r["viseme"] = name
    assert mouth_onset(rise, 1040) == 1040
    assert mouth_onset([{k: v for k, v in r.items() if k != "viseme"} for r in rise], 1040) == 1060
    # the mouth opening while the page still names silence (it draws a little ahead)
    early = frames([0, 0.3, 0.6, 0.6, 0.6])
    for r, name in zip(early, ["sil", "sil", "aa", "aa", "O"], strict=True):
        r["viseme"] = name
    assert mouth_onset(early, 1040) == 1020


def test_a_slow_page_whose_mouth_opened_early_is_timed_from_a_closed_frame_before_the_window():
    # 4 frames a second: the closed frame before the opening is over 250 ms before the sound
    slow = frames([0, 0, 0.8, 0.8], start=500.0, step=260.0)
    assert mouth_onset(slow, 1040) == 1020
    assert mouth_onset(frames([0.8, 0.8, 0.8, 0.8], start=500.0, step=260.0), 1040) is None


def test_an_opening_too_small_to_see_is_no_onset_and_an_open_mouth_has_none():
    assert mouth_onset(frames([0, 0, 0.05, 0.08, 0.08, 0]), 1040) is None  # a p, an f
    assert mouth_onset(frames([0.6, 0.7, 0.8, 0.9]), 1040) is None


def test_the_offset_is_mouth_minus_sound_after_a_quiet_stretch():
    recs = frames([0] * 20 + [0.3, 0.8, 1.0, 1.0], loud_from=1000 + 20 * 20 + 12)
    assert audio_onsets(recs) == [1412]
    assert [m - t for t, m in onsets(recs)] == [1420 - 1412]


def test_a_stall_at_a_line_start_is_timed_a_vsync_after_its_frame_and_seen_late():
    """A page that draws 60 fps, then a frame every 150 ms while another program takes the CPU:
    the display's period is still 16.7 ms. The opening's frame is seen a vsync after it began
    (not the stall's 150 ms), and the onset is one the browser showed late."""
    period = 1000 / 60
    steady = frames([0] * 60, start=0.0, step=period)
    # the stall began well before the line: every frame within reach of its onset is slow
    stalled = frames([0] * 8 + [0.6, 1.0, 1.0, 1.0], start=1100.0, step=150.0, loud_from=2160.0)
    recs = [{**r, "frame": r["t"] - 2.0} for r in steady + stalled]
    found = onsets(recs)
    assert len(found) == 1
    (t, m) = found[0]
    assert abs(m - (2300.0 - 2.0 + period)) < 1e-6, m  # the 0.6 frame, seen a vsync after
    assert Frames(recs).late_at(m)


def test_sound_without_quiet_before_it_is_no_onset():
    recs = frames([0, 0.3, 0.8, 1.0], loud_from=1000)
    assert audio_onsets(recs) == []


def test_the_goals_read_each_window_by_its_own_edges():
    from server.bench.lipsync_tables import goals
    from server.media.syncwindows import EBU_R37, in_window

    centred = [-9.0, -4.0, 0.0, 3.0, 8.0] * 20
    assert goals(centred) == ["holds", "holds", "holds"]
    early = [*centred, -50.0, -50.0]  # 50 ms early: outside ATSC (−45), inside R37 (−60)
    assert goals(early)[1:] == ["misses", "holds"]
    assert goals([*centred, -50.0])[1] == "holds"  # one onset in 101 is beyond the p1
    late = [*centred, 41.0, 41.0]  # 41 ms late: outside R37 (+40) too
    assert goals(late)[1:] == ["misses", "misses"]
    assert goals([*centred, 41.0])[2] == "misses"  # every onset counts for R37
    assert goals([20.0] * 10)[0] == "misses" and goals([]) == ["—"] * 3
    assert in_window([-70.0, -50.0, 20.0, 45.0], EBU_R37) == 0.5


def test_the_mouth_is_timed_when_its_frame_is_seen_not_when_it_was_drawn():
    # 60 fps, one vsync missed; scripts ran 1-12 ms into each frame, seen a period after it
    drawn = frames([0, 0, 0.3, 0.6, 0.6, 0.6], start=1000.0, step=1000 / 60)
    for i, r in enumerate(drawn):
        r["frame"] = r["t"] + (1000 / 60 if i >= 4 else 0)
        r["t"] = r["frame"] + (1, 12, 3, 9, 2, 4)[i]
    assert abs(mouth_onset(drawn, 1040) - (1000 + 3 * 1000 / 60)) < 1e-9  # not at 1036.3


def test_a_frame_whose_scripts_ran_past_the_next_vsync_it_then_missed_is_seen_a_period_later():
    from server.bench.lipsync_figures import seen_at

    period = 1000 / 60
    stamps = [1000 + k * period for k in (0, 1, 2, 4, 5)]  # the vsync at 3 went by unused
    recs = [{"t": s + 3, "frame": s, "mouth": 0.0} for s in stamps]
    late, early = dict(recs[2]), dict(recs[2])
    late["t"] = stamps[2] + 21  # still running at the next vsync: it missed it
    early["t"] = stamps[2] + 4  # done in time: something after it held the page
    assert abs(seen_at(late, [*recs[:2], late, *recs[3:]]) - (stamps[2] + 2 * period)) < 1e-9
    assert abs(seen_at(early, [*recs[:2], early, *recs[3:]]) - (stamps[2] + period)) < 1e-9
    slow = dict(recs[1], t=stamps[1] + 21)  # ran late, yet the next vsync had its frame
    assert abs(seen_at(slow, [recs[0], slow, *recs[2:]]) - (stamps[1] + period)) < 1e-9


def test_a_frame_after_a_vsync_that_went_by_without_one_is_known_as_such():
    period = 1000 / 60
    stamps = [1000 + k * period for k in (0, 1, 2, 4, 5, 6, 7)]  # the vsync at 3 went by unused
    frames = Frames([{"t": s + 3, "frame": s, "mouth": 0.0} for s in stamps])
    # the frame begun at 4 is seen at 5, after the one begun at 2 was held two periods; the one
    # begun at 5, seen at 6, follows it (where the probe's onset is a frame after the page's)
    assert frames.late_at(1000 + 5 * period)
    assert frames.late_at(1000 + 6 * period)
    assert not frames.late_at(1000 + 7 * period)
    assert not frames.late_at(1000 + 3 * period)
    assert not frames.late_at(1000 + 60 * period)  # no frame seen then


def test_a_frame_whose_scripts_ran_past_its_vsync_is_seen_late_and_so_is_the_next():
    period = 1000 / 60
    stamps = [1000 + k * period for k in (0, 1, 2, 4, 5, 6)]
    recs = [{"t": s + 3, "frame": s, "mouth": 0.0} for s in stamps]
    recs[2]["t"] = stamps[2] + 21  # its scripts still ran at the next vsync, which went by
    frames = Frames(recs)
    assert frames.late_at(1000 + 4 * period)  # seen two periods after it was begun
    assert frames.late_at(1000 + 5 * period)  # the frame after it
    assert not frames.late_at(1000 + 2 * period)  # the one before it was on time


def test_sound_is_timed_at_the_speakers_and_the_render_time_figure_takes_the_latency_off():
    from server.bench.lipsync_figures import rendered_offsets

    # read at t; the newest sample read then leaves the speakers 42 ms later; the mouth opens
    # with the sound as heard there
    latency = 42.0
    recs = frames([0] * 20 + [0, 0, 0.3, 0.8, 1.0, 1.0], loud_from=1000 + 20 * 20 + 12 + latency)
    for r in recs:
        r["heard"], r["latency"] = r["t"] + latency, latency
        r["loudAt"] = r["loudAt"] if r["rms"] else None
    assert audio_onsets(recs) == [1454]
    assert [m - t for t, m in onsets(recs)] == [1460 - 1454]
    # the same frames against the sound as rendered: the mouth 42 ms late
    assert rendered_offsets(recs) == [1460 - (1454 - latency)]


def test_the_quiet_before_an_onset_is_timed_as_heard():
    # 280 ms of quiet as read, but the sound before it left the speakers 300 ms before: an onset
    recs = frames([0] * 30, loud_from=1000 + 14 * 20)
    for r in recs:
        r["heard"] = r["t"] + (0 if r["rms"] else -20)
    assert audio_onsets(recs) == [1280]
    recs_short = frames([0] * 30, loud_from=1000 + 14 * 20)
    for r in recs_short:
        r["heard"] = r["t"] + (0 if r["rms"] else 20)
    assert audio_onsets(recs_short) == []


def test_the_frame_rate_at_a_moment_counts_the_frames_of_the_second_before():
    # 10 frames a second for two seconds, then 5: records without a frame (reads) do not count
    stamps = [100.0 * k for k in range(20)] + [2000.0 + 200.0 * k for k in range(10)]
    records = [{"t": s, "frame": s} for s in stamps] + [{"t": 50.0 + 100 * k} for k in range(40)]
    frames = Frames(records)
    assert frames.rate_at(2000.0) == 10
    assert frames.rate_at(4000.0) == 5
    assert frames.rate_at(2500.0) == 8  # 1500-1900 at 10, 2000-2400 at 5


def test_a_starved_pages_frames_keep_the_displays_period():
    """Five pages on a busy core draw a frame every 100-250 ms, never two vsyncs apart: the
    display still refreshes every 16.7 ms, and its frames' timestamps are whole vsyncs."""
    from server.bench.lipsync_figures import display_period

    period = 1000 / 60
    vsyncs = [6, 9, 15, 7, 12, 6, 9, 6, 8, 10, 15, 6] * 5
    stamps = [1000 + period * sum(vsyncs[:k]) for k in range(len(vsyncs))]
    assert abs(display_period([{"frame": s} for s in stamps]) - period) < 1e-9
    fifty = [1000 + k * 20.0 for k in range(50)]  # a 50 Hz display
    assert abs(display_period([{"frame": s} for s in fifty]) - 20.0) < 1e-9


def test_a_frame_whose_scripts_ended_long_after_its_vsync_is_seen_after_them():
    """A starved page's scripts ran 150 ms after the frame's timestamp: its picture is seen at
    the first vsync after they ended, not two periods after the timestamp."""
    from server.bench.lipsync_figures import seen_at

    period = 1000 / 60
    stamps = [1000 + k * 10 * period for k in range(5)]
    recs = [{"t": s + 150, "frame": s, "mouth": 0.0} for s in stamps]
    assert abs(seen_at(recs[2], recs) - (stamps[2] + 9 * period)) < 1e-9  # 150 ms is 9 periods
    late = dict(recs[2], t=stamps[2] + 151)
    assert abs(seen_at(late, [*recs[:2], late, *recs[3:]]) - (stamps[2] + 10 * period)) < 1e-9


def test_sound_that_went_by_between_two_reads_gives_no_onset():
    """Reads further apart than the probe's buffer: the line start fell between them, and the
    read that first finds the line loud does not time its start."""
    recs = frames([0] * 20 + [0.3, 0.8, 1.0, 1.0], loud_from=1000 + 20 * 20 + 12)
    onset = next(r for r in recs if r["rms"] > 0)
    onset["unread"] = 40.0
    onset["loudAt"] = None
    assert audio_onsets(recs) == []
    later = frames([0] * 20, start=2000.0, loud_from=None)  # after the quiet, a timed onset
    later += frames([0.3, 0.8], start=2400.0, loud_from=2405.0)
    assert audio_onsets(recs + later) == [2405.0]


def test_a_starved_pages_line_start_is_timed_when_its_frame_can_be_seen():
    """A frame every ten vsyncs, its scripts ending 150 ms after its timestamp: the opening is
    seen at the first vsync after them, which the frame after it (beyond the search) confirms."""
    period = 1000 / 60
    step = 10 * period
    recs = frames([0] * 12 + [0.8, 1.0, 1.0, 1.0], start=1000.0, step=step, loud_from=2950.0)
    for r in recs:
        r["frame"], r["t"] = r["t"], r["t"] + 150.0
    # the opening's frame, stamped 3000, ran until 3150: seen at the vsync at 3150
    ((t, m),) = onsets(recs)
    assert t == 2950.0
    assert abs(m - (1000.0 + 12 * step + 9 * period)) < 1e-6, m


def test_a_pause_read_late_counts_from_where_its_sound_ended():
    """Reads 150 ms apart: the first quiet one comes 140 ms after the sound ended, which that
    read holds (`playedUntil`); the next line starts 320 ms after the end, a pause."""
    recs = [
        {"t": 1000.0, "heard": 1000.0, "rms": 0.1, "loudAt": None, "playedUntil": 1000.0},
        {"t": 1150.0, "heard": 1150.0, "rms": 0.0, "loudAt": None, "playedUntil": 1010.0},
        {"t": 1300.0, "heard": 1300.0, "rms": 0.0, "loudAt": None, "playedUntil": None},
        {"t": 1450.0, "heard": 1450.0, "rms": 0.1, "loudAt": 1330.0, "playedUntil": 1450.0},
    ]
    for r in recs:
        r["mouth"] = 0.0
    assert audio_onsets(recs) == [1330.0]
    recs[1]["playedUntil"] = None  # not known where it ended: from the quiet read on
    assert audio_onsets(recs) == []


def test_a_frame_drawn_silent_while_the_speakers_are_loud_is_counted():
    """Loud frames only: the page drew silence through one, a closed p through another (its
    lips shut on a sound, which is no fault), and quiet frames are not asked about."""
    from server.bench.lipsync_figures import silent_while_loud

    recs = [
        {"rms": 0.2, "mouth": 0.0, "viseme": "sil"},  # loud, drawn silent
        {"rms": 0.2, "mouth": 0.02, "viseme": "PP"},  # loud, the lips closed for a p
        {"rms": 0.2, "mouth": 0.6, "viseme": "aa"},
        {"rms": 0.0, "mouth": 0.0, "viseme": "sil"},  # quiet: not counted
    ]
    assert silent_while_loud(recs) == [True, False, False]


def test_a_steadily_starved_page_is_slow_not_late_at_every_frame():
    """Five pages on a busy core: a frame every ten vsyncs, its scripts 150 ms after its
    timestamp, all along. Its line starts are its usual frames, not stalls, and stay in the
    figure; a frame after a gap three times its usual is still seen late."""
    period = 1000 / 60
    step = 10 * period
    stamps = [1000 + k * step for k in range(40)]
    stamps[30:] = [s + 3 * step for s in stamps[30:]]  # a stall before the 31st frame
    frames = Frames([{"t": s + 150.0, "frame": s, "mouth": 0.0} for s in stamps])
    seen = [s + 9 * period for s in stamps]  # each at the first vsync after its scripts
    assert not frames.late_at(seen[20])
    assert frames.late_at(seen[30])
