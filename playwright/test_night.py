"""The night's light pictures in real Chromium: at fallback level 3 the stage draws its avatar
in Canvas 2D (less for a viewer's machine to do), the mouth still follows the sound, and back
at level 0 the page draws in WebGL again. And the night bench's deadline on its pages."""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from types import SimpleNamespace

import pytest
from conftest import Host, until_final
from playwright.sync_api import Error as PlaywrightError
from test_stage import CANVAS_STATS, _wait_loud

from server.bench.browser import launch, now_ms, open_stage, probe, records
from server.bench.cores import confine_browser
from server.bench.cputime import CpuReader
from server.bench.deadline import answered_within, kill_browser, of_browser, processes
from server.bench.inprocess import LiveServer
from server.bench.lipsync_figures import LOUD, OPEN, onsets
from server.bench.pages import Pages, open_pages
from server.bench.watcher import Watcher
from server.media.syncwindows import ATSC

RENDERER = "() => window.allnighter.state().renderer"


def _pin(host: Host, level: int | None) -> None:
    status, body = host.call("POST", "/api/v1/fallback", {"level": level})
    assert status == 200, body


def test_light_pictures_draw_in_2d_with_the_mouth_on_the_sound_and_webgl_comes_back(
    browser, show: LiveServer, host: Host
):
    page = open_stage(browser, show.url)
    try:
        assert page.evaluate(RENDERER) == "webgl"
        until_final(host, host.say("Oh, hello."))  # the page settles on a first line
        _pin(host, 3)
        page.wait_for_function(f"() => ({RENDERER})() === 'canvas2d'", timeout=10_000)
        page.wait_for_timeout(1000)
        probe(page)
        t0 = now_ms(page)
        page.wait_for_timeout(1500)  # quiet before the line
        quiet = page.evaluate(CANVAS_STATS)
        uid = host.say("All right, the night is long. Only the owls know how long it is.")
        _wait_loud(page, t0)
        page.wait_for_function("() => window.allnighter.state().mouth_open > 0.4", timeout=10_000)
        speaking = page.evaluate(CANVAS_STATS)
        until_final(host, uid)
        page.wait_for_timeout(1500)  # the line plays out, then quiet
        recs = records(page, t0)

        loud = [r for r in recs if r["rms"] >= LOUD]
        assert loud, "no audio above silence reached the page"
        first, last = loud[0]["t"], loud[-1]["t"]
        speech = [r for r in recs if first <= r["t"] <= last]
        assert sum(r["mouth"] > OPEN for r in speech) / len(speech) > 0.4, "the mouth kept still"
        before = [r for r in recs if r["t"] < first - 150]
        after = [r for r in recs if r["t"] > last + 300]
        assert before and max(r["mouth"] for r in before) < 0.05, "mouth moved before the sound"
        assert after and max(r["mouth"] for r in after) < 0.05, "mouth moved after the sound"
        # the line's start (and the sentence's after its pause) on the sound, by the probe
        starts = [m - t for t, m in onsets(recs)]
        assert starts, "the probe found no line start"
        assert ATSC[0] <= statistics.median(starts) <= ATSC[1], starts
        # the 2D picture is drawn, and it moves
        assert quiet["std"] > 5 and speaking["std"] > 5, "the canvas is blank"
        assert sum(abs(a - b) for a, b in zip(quiet["px"], speaking["px"], strict=True)) > 0
        assert page.evaluate(RENDERER) == "canvas2d"

        _pin(host, 0)
        page.wait_for_function(f"() => ({RENDERER})() === 'webgl'", timeout=10_000)
        until_final(host, host.say("And now, back to the full picture."))
        assert page.evaluate("() => window.allnighter.state().fps") > 10
        assert not page.errors, page.errors
    finally:
        _pin(host, None)  # the triggers decide again (off in these tests: level 0)
        page.close()


def test_a_browser_whose_page_never_answers_is_killed_at_its_deadline_and_the_call_raises(
    browser,
):
    # bench nights reads its pages' figures within a deadline: a page that never answers
    # (a tab whose renderer died unnoticed) must not hold the run for good
    tag = f"deadline-{os.getpid()}"
    other = launch(SimpleNamespace(chromium=browser.browser_type), tag)
    page = other.new_page()
    started = time.monotonic()
    with pytest.raises(PlaywrightError), answered_within(tag, 1.0) as killed:
        page.evaluate("() => new Promise(() => {})")  # never resolves
    assert killed.is_set() and time.monotonic() - started < 30
    # only the browser with that tag: the others' pages still answer
    alive = browser.new_page()
    try:
        assert alive.evaluate("() => 1 + 1") == 2
    finally:
        alive.close()


def test_a_tab_that_crashes_is_counted_and_the_other_tabs_figures_are_still_read(
    browser, show: LiveServer
):
    # an hour's run once lost every figure to two dead tabs: the others must still count
    tag = f"crash-{os.getpid()}"
    other = launch(SimpleNamespace(chromium=browser.browser_type), tag)
    try:
        watchers = [Watcher(other, show.url) for _ in range(2)]
        # SwiftShader pins its workers to cores of its choosing: they are brought back
        confine_browser(tag)
        mine, tree = os.sched_getaffinity(0), processes()
        threads = [t for p in of_browser(tag, tree) for t in os.listdir(f"/proc/{p}/task")]
        assert len(threads) > 10 and all(_cores_of(int(t), mine) == mine for t in threads)
        pages = Pages(watchers, tag, deadline_s=60.0)
        marks = pages.marks()
        assert [w for w, _ in marks] == watchers
        # the first tab: the one the run would wait on, whose crash event may come late
        with contextlib.suppress(PlaywrightError):
            watchers[0].page.goto("chrome://crash")  # the renderer dies
        deadline = time.monotonic() + 20
        while watchers[0].crashed_at is None and time.monotonic() < deadline:
            pages.wait(0.2)
        assert watchers[0].crashed_at is not None, "the crash went unnoticed"
        figures = pages.figures(marks)
        assert pages.killed_at is None, "the browser was killed for one dead tab"
        assert figures["fps"] and min(figures["fps"]) > 0  # the live tab's own reports
        assert pages.alive == watchers[1:] and len(pages.crashes()) == 1
        marks = pages.marks()
        assert [w for w, _ in marks] == watchers[1:]
        # a long run's probe drops what no window needs, and the page's heap is read
        reader = CpuReader(os.getpid(), tag)
        reader.read(time.monotonic())
        pages.wait(2.0)
        (heap,) = pages.forget(marks)
        assert heap is not None and heap > 1.0, heap
        kept = records(watchers[1].page, 0.0)
        assert kept and min(r["t"] for r in kept) >= marks[0][1][0]
        busy = reader.read(time.monotonic())
        assert busy is not None and busy["renderers"] > 0.01 and busy["GPU process"] > 0.01, busy
    finally:
        other.close()


def _cores_of(tid: int, default: set[int]) -> set[int]:
    try:
        return os.sched_getaffinity(tid)
    except OSError:  # a thread that ended meanwhile
        return default


def test_a_browser_that_cannot_open_its_pages_is_killed_and_launched_again(browser):
    # a stage that never hears the broadcast stands for a browser that cannot open a tab (its
    # zygote stuck): each launch is given up and killed, and the run is told, not left waiting
    tag = f"open-{os.getpid()}"
    pw = SimpleNamespace(chromium=browser.browser_type)
    with pytest.raises(RuntimeError, match="no browser opened 2 pages in 2 launches"):
        open_pages(pw, tag, "about:blank", 2)
    assert kill_browser(f"{tag}-1") == 0 and kill_browser(f"{tag}-2") == 0  # none left running
