"""The real hour's table says what a host would want to know: memory that grew, a line lost,
a clock that did not follow, viewers who did not come back, each with its verdict."""

from __future__ import annotations

import os
from types import SimpleNamespace

from server.bench.cputime import CpuReader
from server.bench.nightlive_table import Run, report, rss_between
from server.bench.nightlive_trend import PageReport
from server.bench.table import rows_of

TITLE = "bench nights: a real run"


def a_run(**changes) -> Run:
    run = Run(
        total_s=3600,
        placed="server on 1 of 2 cores",
        pages=5,
        viewers=20,
        rss_start=1000.0,
        rss_end=1010.0,
        frames=(180_000.0, 0.0),
        first={"page": [5.0, -4.0, 8.0] * 100, "probe": [3.0, -2.0] * 20},
        last={"page": [5.5, -4.0, 8.5] * 100, "probe": [3.0, -2.5] * 20},
        clock={"offset_s": 0.0502, "error_bound_s": 0.001},
        clock_before=0.0001,
        clock_truth=0.050,
        heard={"viewers_heard": 20, "expected": 1000, "lost": 0},
        rejoin_s=3.0,
        drained=True,
        # the show's own gap; a hang's line (the hang struck 4 s into the gap, and its line
        # failed at the deadline); a failed reply's two gaps (the drill struck 2 s into one)
        silences=[(100.0, 6.0), (1256.0, 24.7), (2338.0, 10.3), (2500.0, 31.0)],
        counts={"accepted": 300.0, "done": 297.0, "interrupted": 0.0, "failed": 3.0},
        failures=["drill: the synthesis raised", "drill: the LLM raised", "did not answer"],
        faults=[(720.0, "tts_raises"), (1260.0, "tts_hangs"), (2340.0, "llm_raises")],
    )
    for key, value in changes.items():
        setattr(run, key, value)
    return run


def test_a_healthy_hour_holds_every_goal():
    out = report(a_run())
    rows = rows_of(out, TITLE)
    verdicts = {name: row["verdict"] for name, row in rows.items() if row["verdict"] != "—"}
    assert set(verdicts.values()) == {"holds"}, out
    assert rows["RSS MB, after the first window"]["change"] == "1.00", out  # % growth
    assert rows["lost (accepted, no outcome, drained)"]["last / at end"] == "0.00", out
    # the faults' silences are theirs, though they began before the fault struck; the show's
    # own longest is the 31 s one, which began with no fault near
    assert rows["longest silence s (all)"]["last / at end"] == "31.0", out
    assert rows["not during a fault or 60 s after"]["last / at end"] == "31.0", out
    assert "1 × drill: the synthesis raised" in out and "tts_hangs at 21.0 min" in out
    # listed, with when they began
    assert "silences over 10 s: 24.7 s at 20.9 min, 10.3 s at 39.0 min, 31.0 s at 41.7 min" in out


def test_a_silence_long_after_a_fault_or_ended_before_it_is_the_shows_own():
    for silence in ((1400.0, 12.0), (1200.0, 50.0)):  # 140 s after; ended 10 s before
        out = report(a_run(silences=[silence], faults=[(1260.0, "tts_hangs")]))
        rows = rows_of(out, TITLE)
        assert rows["not during a fault or 60 s after"]["last / at end"] != "0.00", out
    out = report(a_run(silences=[(1256.0, 24.7)], faults=[(1260.0, "tts_hangs")]))
    assert rows_of(out, TITLE)["not during a fault or 60 s after"]["last / at end"] == "0.00"


def test_onsets_on_frames_held_back_are_left_out_of_the_goal_and_counted():
    """A page's machine that stalled more in the last window (its frames held back by another
    program) does not fail the server's lip-sync goal; the share left out says it did."""
    held = {"page held": [120.0] * 60}
    out = report(a_run(last={**a_run().last, **held}))
    rows = rows_of(out, TITLE)
    assert rows["at the same frame rates, page"]["verdict"] == "holds", out
    left_out = rows["onsets on frames held back, left out %"]
    assert (left_out["first / at start"], left_out["last / at end"]) == ("0.00", "16.7"), out
    assert rows["\\|p95\\| ms with them"]["last / at end"] == "120.0", out


def test_a_viewer_machine_drawing_fewer_frames_is_not_the_shows_lip_sync():
    """The last window's pages drew 8 frames a second where the first drew 10: every onset
    waits longer for its frame, and the plain |p95| widens. At each rate the figures are the
    same, so at the same rates the goal holds; where they widen at each rate, it fails."""

    def window(at8: int, at10: int, wider: float = 0.0) -> dict[str, list]:
        eight = [float(x) + wider for x in range(0, 100, 2)] * at8  # up to a frame: 125 ms
        ten = [float(x) + wider for x in range(0, 80, 2)] * at10  # 100 ms
        rates = [8] * len(eight) + [10] * len(ten)
        return {"page": eight + ten, "page rates": rates, "probe": [3.0, -2.0] * 20}

    first, slower = window(at8=2, at10=8), window(at8=8, at10=2)
    out = report(a_run(first=first, last=slower))
    rows = rows_of(out, TITLE)
    plain = rows["lip-sync \\|p95\\| ms, page, viseme onsets"]
    assert float(plain["change"]) > 2.0, out
    same = rows["at the same frame rates, page"]
    assert (same["change"], same["verdict"]) == ("0.00", "holds"), out
    assert rows_of(out, TITLE)["left out, at a rate one window lacked %, page"]["change"] == "0.00"
    wider = rows_of(report(a_run(first=first, last=window(8, 2, wider=3.0))), TITLE)
    assert wider["at the same frame rates, page"]["verdict"] == "fails"


def test_onsets_at_a_rate_only_one_window_had_are_left_out_and_counted():
    first = {"page": [10.0] * 90 + [90.0] * 10, "page rates": [20] * 90 + [5] * 10}
    last = {"page": [10.0] * 100, "page rates": [20] * 100}
    rows = rows_of(report(a_run(first=first, last=last)), TITLE)
    same = rows["at the same frame rates, page"]
    assert (same["first / at start"], same["last / at end"], same["verdict"]) == (
        "10.0",
        "10.0",
        "holds",
    )
    assert rows["left out, at a rate one window lacked %, page"]["change"] == "5.00"


def test_growth_a_lost_line_a_stuck_clock_and_missing_viewers_each_fail():
    out = report(
        a_run(
            rss_end=1030.0,
            counts={"accepted": 300.0, "done": 296.0, "interrupted": 0.0, "failed": 3.0},
            clock={"offset_s": 0.0101, "error_bound_s": 0.001},
            heard={"viewers_heard": 19, "expected": 1000, "lost": 0},
            last={"page": [9.0, -4.0, 12.0] * 100, "probe": [3.0, -2.5] * 20},
        )
    )
    rows = rows_of(out, TITLE)
    assert rows["RSS MB, after the first window"]["verdict"] == "fails", out
    assert rows["lost (accepted, no outcome, drained)"]["verdict"] == "fails", out
    assert rows["its error ms, against its bound"]["verdict"] == "fails", out
    assert rows["viewers back after the drop"]["verdict"] == "fails", out
    assert rows["at the same frame rates, page"]["verdict"] == "fails", out
    # a show that never drained has lost what it could not say
    undrained = rows_of(report(a_run(drained=False)), TITLE)
    assert undrained["lost (accepted, no outcome, drained)"]["verdict"] == "fails"


def test_a_tab_that_died_fails_and_says_when():
    healthy = rows_of(report(a_run()), TITLE)["stage pages crashed (at min)"]
    assert (healthy["last / at end"], healthy["verdict"]) == ("0 of 5", "holds")
    out = report(a_run(pages_crashed=[3420.0, 3450.0]))
    crashed = rows_of(out, TITLE)["stage pages crashed (at min)"]
    assert (crashed["last / at end"], crashed["verdict"]) == ("2 of 5, 57.0, 57.5", "fails"), out


def test_memory_is_compared_by_a_minutes_median_not_by_one_reading():
    # a reply in progress swings one reading by tens of MB; a minute's median does not move
    steady = [(float(t), 1000.0 + (60.0 if t % 7 == 0 else 0.0)) for t in range(600, 3601)]
    run = a_run(rss=steady)
    assert rss_between(run, 600, 660) == 1000.0
    assert rss_between(run, 3540, 3600) == 1000.0
    assert rss_between(run, 0, 500) == 0.0  # no reading there


def test_the_show_is_looked_at_every_second_while_the_run_reads_its_pages(monkeypatch):
    """A window's figures hold the run's main thread for 20-30 s: the looks go on beside it,
    so that gap reads neither as a silence nor as missing RSS readings."""
    import threading
    import time

    from server.bench import nightlive

    quiet = threading.Event()  # on the air until set
    snap = {"recent": [], "current": None}
    monkeypatch.setattr(nightlive.scrape, "get_json", lambda *_: snap)
    monkeypatch.setattr(nightlive.scrape, "rss_mb", lambda _pid: 1000.0)
    monkeypatch.setattr(nightlive, "playing", lambda _snap: not quiet.is_set())
    night = nightlive.LiveNight.__new__(nightlive.LiveNight)  # no server, pages or viewers
    night.url, night.pid, night.run = "http://127.0.0.1:9", 0, Run()
    night.silences, night.failures = nightlive.Silences(), {}
    night.started, night._looked_at = time.monotonic(), 0.0
    night._lookout, night._stop = None, threading.Event()
    night.cpu = CpuReader(os.getpid(), "no-browser")
    night.pages = SimpleNamespace(tag="no-browser")
    night.start_looking()
    time.sleep(3.5)  # the main thread busy with the pages
    assert len(night.run.rss) >= 2 and not night.silences.stretches
    quiet.set()
    set_at = night.elapsed()
    time.sleep(3.0)
    stopped = night.elapsed()
    night.stop_looking()
    time.sleep(1.0)  # reading the last window's figures: no part of the silence
    assert len(night.silences.stretches) == 1, night.silences.stretches
    ((began, lasted),) = night.silences.stretches
    assert set_at <= began and lasted > 0.5 and began + lasted <= stopped


def test_the_spans_say_when_the_frames_fell_and_which_process_took_the_core():
    # the pages draw 20 frames a second for 50 minutes, then 16, while the renderers take more
    reports = [
        PageReport(float(t), 20.0 if t < 3000 else 16.0, [10.0, -30.0], 1, 100.0 + (t >= 3000))
        for t in range(0, 3600, 5)
    ]
    cpu = [
        (float(t), {"server": 0.9, "renderers": 0.3 if t < 3000 else 0.5, "core 0": 0.95})
        for t in range(10, 3600, 10)
    ]
    heap = [(float(t), [12.0, None]) for t in range(60, 3600, 60)]
    rss = [(float(t), 1200.0 + t / 60) for t in range(0, 3600)]  # a steady MB a minute
    out = report(a_run(page_reports=reports, cpu=cpu, heap=heap, rss=rss))
    spans = rows_of(out, "the run span by span")
    assert list(spans) == ["0–10", "10–20", "20–30", "30–40", "40–50", "50–60"]
    first, last = spans["0–10"], spans["50–60"]
    assert (first["fps"], last["fps"]) == ("20.0", "16.0")
    assert (first["renderers"], last["renderers"]) == ("0.30", "0.50")
    assert first["page lip-sync |p95| ms"] == "30.0" and first["held back %"] == "33.3"
    assert first["JS heap MB"] == "12.0" and first["core 0"] == "0.95"
    assert (first["stream held ms"], last["stream held ms"]) == ("100.0", "101.0")
    assert (first["server RSS MB"], last["server RSS MB"]) == ("1205.0", "1255.0")
    assert first["viewers"] == "0.00"  # a part never read is idle, not missing


def test_the_probes_few_line_starts_are_shown_with_their_interval_and_not_judged():
    """The probe's |p95| of a window's 120-200 line starts rests on its widest ten: a change of
    60 ms is within what it cannot tell apart, so it checks the page's figure, unjudged; the
    page's thousands of onsets carry the goal, each window's |p95| with its interval."""
    first = {
        "page": [float(x % 100) for x in range(10_000)],
        "probe": [float(x) for x in range(200)],
    }
    last = {**first, "probe": [float(x) * 0.7 for x in range(120)]}
    rows = rows_of(report(a_run(first=first, last=last)), TITLE)
    assert rows["at the same frame rates, probe"]["verdict"] == "—"
    assert float(rows["at the same frame rates, probe"]["change"]) < -60
    assert rows["at the same frame rates, page"]["verdict"] == "holds"
    page, probe = rows["its 95 % interval, page"], rows["its 95 % interval, probe"]
    assert page["first / at start"] == "94.0–95.0"  # 95 lies between them
    low, high = (float(x) for x in probe["first / at start"].split("–"))
    assert low < 189 < high and high - low > 10


def test_frames_drawn_silent_through_loud_sound_are_counted_in_each_window():
    """Every frame, not only line starts: a page whose clock lost the sound in the last window
    drew a shut mouth through loud speech, which its own figures, timed by that clock, miss."""
    first = {"page": [5.0] * 300, "silent while loud": [0.0] * 999 + [1.0]}
    last = {"page": [5.0] * 300, "silent while loud": [0.0] * 900 + [1.0] * 100}
    rows = rows_of(report(a_run(first=first, last=last)), TITLE)
    row = rows["frames silent while the sound was loud % (of 1000, 1000)"]
    assert (row["first / at start"], row["last / at end"]) == ("0.10", "10.0"), row
