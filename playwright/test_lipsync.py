"""Lip-sync in real Chromium, line by line: the page's own figures, and a probe that does not
trust them; on an ordinary output device and on slow ones.

20 lines after a warm-up. For each line the page reports when it saw the line's first voiced
viseme against the sound it was hearing then; the probe (server/bench/probe.js) finds the same
moment from outside, with its own WebAudio analyser on the node the page connects to its
speakers (the sound turning loud, timed where the context's output timestamp says it leaves
them) against `state().mouth_open` sampled every animation frame (the mouth passing half the
opening of its first viseme, in a frame seen at the first vsync after its scripts ran). ATSC
IS-191 allows the picture 45 ms early and 15 ms late.

The probe's figures must be inside ATSC's window (a line the browser showed a vsync late may
fall outside: see the test), their p95 and that of the page's
figures at the same line starts within ±15 ms, and the probe's median
within 10 ms of the page's. (The probe, timing the mouth where it passes half the opening of
its first viseme, and the page, timing the first frame at the viseme, take neighbouring frames
for a line now and then, at the edges of a frame.) Where frames are too far apart for 15 ms the
p95 is held to what the frames account for instead: a viseme shows in the frame nearest its
start, so each figure spreads over a frame's length, and where half a frame is more than 12 ms
the page draws the lips ahead by the rest (ATSC's late side is the narrow one). At 30 fps that
is 17 + 5 = 22 ms. Headless Chromium in software GL, on two cores that also run the show, draws
45-60 frames a second in the small window the tests give it (server/bench/browser.py), where
15 ms holds.

A page whose audio context is asked for more latency (`?latency=`: 0.05 s gives 212 ms in
headless Chromium, 0.25 s gives 746 ms, as slow as a Bluetooth headset) hears each sample that
much after it renders it: the mouth must wait for the speakers, not for the renderer.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from server.bench.inprocess import LiveServer
from server.bench.lipsync import measure_page
from server.bench.lipsync_figures import seen_at
from server.bench.slowlink import SlowLink
from server.bench.table import pct
from server.keys import CONFIG
from server.media.syncwindows import ATSC

LINES = 20
P95_MS = 15  # the bound on the p95, where the frame rate allows it


KEPT = Path(__file__).resolve().parent.parent / ".artifacts" / "lipsync"


def in_atsc(ms: float) -> bool:
    return ATSC[0] <= ms <= ATSC[1]


def _keep_frames(got: dict, query: str, mouths: list[float]) -> None:
    """The probe's frames within 100 ms of each mouth onset given, printed and kept as JSON
    under .artifacts/lipsync/."""
    recs = got["records"]
    near = [[r for r in recs if abs(r["t"] - m) <= 100] for m in mouths]
    KEPT.mkdir(parents=True, exist_ok=True)
    name = KEPT / f"outside{query.replace('?', '-').replace('=', '-')}.json"
    name.write_text(json.dumps({"mouth onsets": mouths, "frames": near}))
    for m, frames in zip(mouths, near, strict=True):
        print(f"frames near the mouth onset at {m:.1f} (t, frame, seen − onset, mouth, viseme):")
        for r in frames:
            seen = seen_at(r, recs) - m
            print(f"  {r['t']:.1f} {r['frame']:.1f} {seen:+.1f} {r['mouth']:.3f} {r['viseme']}")


@pytest.mark.parametrize("query", ["", "?latency=0.05", "?latency=0.25"])
def test_each_line_starts_with_mouth_and_sound_together(
    browser: Browser, show: LiveServer, query: str
):
    lines = LINES
    got = measure_page(browser, show, show.url + "/" + query, lines, f"lip-sync test {query}")
    page, probe, gaps = got["page, each line"], got["probe, each line"], got["probe − page"]
    print(f"page, each line: {[round(ms, 1) for ms in page]}")
    print(f"probe, each line at the speakers: {[round(ms, 1) for ms in probe]}")
    print(f"probe, each onset as rendered: {[round(ms, 1) for ms in got['probe, at render']]}")
    print(f"probe − page, same line: {[round(ms, 1) for ms in gaps]}")
    print(f"the page drew {got['fps reported']} fps; its output latency {got['latency']}")
    assert not got["errors"], got["errors"]
    assert len(page) == lines, f"the page reported {len(page)} of {lines} lines"
    assert got["fps reported"], "the page reported no frame rate"
    fps = statistics.median(got["fps reported"])
    # each line's start at the speakers, by the probe, inside ATSC's window. A line whose
    # first frame the browser showed late (a vsync went by without a frame, or the frame's
    # scripts ran past its vsync), or whose probe onset is the frame after such a one (the
    # page's frame at a viseme's start shows the mouth about half open, and the probe's onset
    # is now and then the next), is seen that much late whatever the page drew (here the
    # show's synthesis shares the two cores with the browser, and such frames gather at line
    # starts): it may fall outside, one line in ten
    late = got["probe, each line, a frame late"]
    outside = [(ms, lost) for ms, lost in zip(probe, late, strict=True) if not in_atsc(ms)]
    print(f"outside ATSC (ms, around a frame shown late): {outside}; such lines: {sum(late)}")
    if outside:  # the frames around each such line start, to see why
        _keep_frames(got, query, [m for ms, _, m in got["probe pairs"] if not in_atsc(ms)])
    assert all(lost for _, lost in outside), (outside, probe)
    assert len(outside) <= math.ceil(len(probe) / 10), (outside, probe)
    half = 1000 / fps / 2
    guard = max(0.0, half - 12)  # web/static/stage/lateguard.js: lateGuardMs
    bound = max(P95_MS, half + guard + show.app[CONFIG].stage.viseme_lead_ms)
    p95 = pct([abs(ms) for ms in page], 95)
    print(f"|p95| {p95:.1f} ms; bound {bound:.1f} ms at the page's median {fps:g} fps")
    assert p95 <= bound, page
    # the probe found the same line starts at the speakers, inside ATSC's window, and agrees
    # with the page about them
    assert len(gaps) >= lines * 0.8, (gaps, probe)
    assert abs(statistics.median(gaps)) <= 10, gaps
    assert pct([abs(ms) for ms in probe], 95) <= bound, probe
    # the page reported the latency its context has (read here from the context itself)
    assert got["latency"]["source"] == "reported", got["latency"]
    assert abs(got["latency"]["ms"] - got["latency"]["context"]) <= 5, got["latency"]


LOOKAHEAD_MS = 100  # how long a page holds the stream while its events come in time
LATE_S = 0.4  # the socket's events reach the page this late; its audio is not delayed
LATE_LINES = 12


def test_a_page_whose_events_come_late_holds_the_sound_for_them(browser: Browser, show: LiveServer):
    """The line's visemes come by the page's socket, sent as the line starts to play; here they
    reach the page 400 ms late (a slow link: web/static/stage/lookahead.js says why that
    happens to a viewer), while its audio comes straight over WebRTC and is heard some 200 ms
    after it was sent. Holding the stream a tenth of a second, as before, each line's mouth
    opened some 200 ms after its sound. The page holds the stream as long as its events need,
    and the mouth opens with the sound at every line start (ATSC's window, as in the test
    above: a line shown a frame late may fall outside, one in ten)."""
    with SlowLink(show.cfg.port, LATE_S) as link:
        got = measure_page(browser, show, link.url + "/", LATE_LINES, "late events")
    probe, late = got["probe"], got["probe seen late"]
    print(f"held {got['held ms']} ms; probe, each line start: {[round(ms, 1) for ms in probe]}")
    assert not got["errors"], got["errors"]
    # held longer than a page whose events come in time; by how much is not the test's: the
    # events need 400 ms less the audio's own path (jitter buffer, output), 150-250 ms by run
    assert got["held ms"] > LOOKAHEAD_MS, got["held ms"]
    assert len(probe) >= LATE_LINES * 0.8, probe
    outside = [(ms, lost) for ms, lost in zip(probe, late, strict=True) if not in_atsc(ms)]
    assert all(lost for _, lost in outside), (outside, probe)
    assert len(outside) <= math.ceil(len(probe) / 10), (outside, probe)
