"""Drift: the broadcast clock runs 200 ppm fast or slow against the viewer's for 3 minutes of
continuous speech, and the lip-sync the page measures stays where it was.

A viewer's audio device and the server's 48 kHz clock never agree exactly; over hours WebRTC's
jitter buffer stretches or squeezes the sound to follow. The page maps what it hears to
broadcast samples from the RTP timestamps being played, so the mouth follows the stretched
sound; a page that counted samples on its own clock would drift 36 ms in these 3 minutes.
"""

from __future__ import annotations

import statistics
import time

import pytest
from conftest import Host, e2e_config
from playwright.sync_api import Browser

from server.bench.browser import open_stage
from server.bench.inprocess import LiveServer
from server.keys import LIVE

SECONDS = 180
SETTLE = 20  # s: the page's onset calibration settles first
WINDOW = 40  # s of reports at the start and at the end
LINES = (
    "Good evening, night owls, and welcome to the long show.",
    "Outside the window the city lights are slowly fading.",
    "Our first caller wants to know about the moon tonight.",
    "All of us here are awake and ready for your questions.",
    "Every song we play tonight was chosen by the chat.",
    "Early birds will hear the news at six in the morning.",
    "Ask me anything about the stars, and I will try to answer.",
    "Open your ears, because the next story is a long one.",
)


def onsets_between(reports, start: float, end: float) -> list[float]:
    return [ms for t, r in reports if start <= t < end for ms in r.get("lipsync_onsets_ms", [])]


@pytest.mark.parametrize("ppm", [200, -200])
def test_the_mouth_keeps_to_the_sound_while_the_clocks_drift_apart(
    browser: Browser, show: LiveServer, ppm: float
):
    cfg = e2e_config(queue_size=80, clock_skew_ppm=ppm)
    srv = LiveServer(cfg, show.app[LIVE].models).start()  # the models are loaded once
    page = None
    try:
        with srv.collecting_reports() as reported:
            page = open_stage(browser, srv.url)
            host = Host(srv)
            for i in range(70):  # ~3.5 minutes of speech, back to back
                host.say(LINES[i % len(LINES)])
            t0 = time.monotonic()
            time.sleep(SECONDS)
            host.interrupt()
            time.sleep(5.5)  # the last report
        reports = [(t, r) for t, _, r in reported]
        errors = page.errors
    finally:
        if page is not None:
            page.close()
        srv.stop()
    assert errors == []
    start = onsets_between(reports, t0 + SETTLE, t0 + SETTLE + WINDOW)
    end = onsets_between(reports, t0 + SECONDS - WINDOW, t0 + SECONDS + 5)
    assert len(start) > 100 and len(end) > 100, (len(start), len(end))
    moved = statistics.median(end) - statistics.median(start)
    summary = (
        f"{ppm:+} ppm: lip-sync moved {moved:+.1f} ms over {SECONDS - WINDOW} s "
        f"(start median {statistics.median(start):.1f}, end {statistics.median(end):.1f})"
    )
    print(summary)
    assert abs(moved) <= 5, summary
