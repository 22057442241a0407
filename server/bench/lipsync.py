"""`allnighter bench lipsync`: mouth against sound in real Chromium, and frame rates.

A real server (real models, ASR checker off) and Debian's Chromium. Two stage pages listen to
the same lines, one after the other (one page open at a time, as on a viewer's machine): the
page as shipped, and the same page with its onset calibration off (`?calibration=off`: the bare
RTP-to-sample mapping, the baseline of this run). An independent
probe in each page (its own WebAudio analyser, server/bench/probe.js) records every animation
frame; the offset is the drawn mouth's opening minus the heard audio's onset (positive: the mouth
is late). Then N pages are opened together while the show speaks, and each page's own frame
figures (fps, dropped frames) are read.

The lines begin with an open, voiced sound, and so does each phrase after a pause in them: a
phrase that starts with m, b or p sounds while the lips are still closed; an initial k, t or p is
silent, and an initial h or th nearly so, while the lips already form the next sound. The "mouth
opens / sound starts" moment is only well defined for open voiced starts, so the lines are chosen
that way (no line is measured and then dropped).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .browser import behind_the_browser, launch, now_ms, open_stage, probe, records
from .inprocess import LiveServer, say, until_final
from .lipsync_figures import Frames, line_offset, matched, onsets, rendered_offsets
from .lipsync_tables import (
    CONTINUOUS_FIGURES,
    continuous_table,
    frames_table,
    offsets_table,
)

OPENINGS = [
    "All right,",
    "Oh,",
    "And now,",
    "Every night",
    "I think",
    "Only the owls know",
    "Out here",
    "Any time now,",
    "Yes,",
    "Always remember,",
]
# What follows an opening, after its comma, or a sentence, after its full stop: the probe times
# every onset after a pause, so these begin with an open voiced sound too. ("the radio" after
# a comma's pause opened on a quiet th, the mouth half open while the sound was not yet loud:
# the probe timed it 21 ms early or late by how the rise went.)
ENDINGS = [
    "a whole city sleeps while we keep talking.",
    "it is the best hour of the night.",
    "a listener has a question for us.",
    "all the stars look brighter after midnight.",
    "a warm cup of tea beats everything.",
    "our radio hums along with the rain.",
]
WARM_UP = 3  # lines before measuring: Chromium's jitter buffer settles, the page calibrates


def lines(n: int) -> list[str]:
    """`n` lines of varied length: an opening alone, with one sentence, or with two."""
    out = []
    for i in range(n):
        first = ENDINGS[(i * 7 + i // len(OPENINGS)) % len(ENDINGS)]
        words = {0: "", 1: first, 2: f"{first} {ENDINGS[(i + 3) % len(ENDINGS)].capitalize()}"}
        rest = words[(i * 5) % 7 % 3]
        opening = OPENINGS[i % len(OPENINGS)]
        out.append(f"{opening} {rest}" if rest else opening.rstrip(",") + ".")
    return out


def _submit(srv: LiveServer, text: str) -> str:
    """Say a line; its utterance id."""
    status, body = srv.call(say(srv, text))
    if status != 202:
        raise RuntimeError(f"say refused: {body}")
    return body["utterance_id"]


def _speak(srv: LiveServer, text: str) -> str:
    """Say a line and wait until it has been spoken; its utterance id."""
    uid = _submit(srv, text)
    srv.call(until_final(srv, uid), timeout=90)
    time.sleep(0.8)  # the line's audio plays out, then a pause before the next
    return uid


# The page as shipped on an ordinary output device, on a slow one (a context asked for a quarter
# second of latency: 746 ms in headless Chromium, as a Bluetooth headset or a busy sound server
# gives), and with its onset anchoring off: the baseline.
VARIANTS = {
    "calibrated (as shipped)": "/",
    "calibrated, latencyHint 0.25 s": "/?latency=0.25",
    "uncalibrated (baseline)": "/?calibration=off",
}


def sweep_variants(leads: str, holds: str) -> dict[str, str]:
    """The page with each lead and hold to try (`?lead=`, `?hold=`), to tune them by."""
    out = {}
    for lead in _numbers(leads):
        tried: list[float | None] = [*_numbers(holds)] or [None]
        for hold in tried:
            name, path = f"lead {lead:g} ms", f"/?lead={lead:g}"
            if hold is not None:
                name, path = f"{name}, hold {hold:g} ms", f"{path}&hold={hold:g}"
            out[name] = path
    return out


def _numbers(listed: str) -> list[float]:
    return [float(x) for x in listed.split(",") if x.strip()]


@contextmanager
def listening_page(browser, srv: LiveServer, url: str) -> Iterator[tuple]:
    """One stage page alone (as on one viewer's machine), the probe in it and the server
    collecting its reports, after WARM_UP lines: (page, reports as collecting_reports gives
    them). The page closes and the collecting stops on the way out."""
    page = open_stage(browser, url)
    try:
        probe(page)
        with srv.collecting_reports() as reported:
            for text in lines(WARM_UP):
                _speak(srv, text)
            yield page, reported
    finally:
        page.close()


# the probe times sound as it leaves the speakers; "at render" as the context rendered it, the
# device's latency earlier (what the page and the probe measured before)


def measure_page(browser, srv: LiveServer, url: str, n: int, label: str = "") -> dict:
    """`n` lines measured on a listening page: the probe's offsets, the page's own figures as
    it reports them (`client_stats`) at each line's first voiced viseme and at every viseme
    onset it drew, and for each line the probe's offset less the page's; the page's fps as it
    reported them while the lines were spoken."""
    with listening_page(browser, srv, url) as (page, reported):
        since, reported_since = now_ms(page), time.monotonic()
        ids = set()
        for i, text in enumerate(lines(n)):
            ids.add(_speak(srv, text))
            print(f"  {label}: line {i + 1}/{n}", flush=True)
        time.sleep(5.5)  # the page's last report
        recs = records(page, since)
        probed = onsets(recs)
        errors = list(page.errors)
        stats = page.evaluate("() => window.allnighter.stats()")
        context = page.evaluate(
            "() => { const c = window.allnighter.heard().context;"
            " return (c.baseLatency + (c.outputLatency || 0)) * 1000; }"
        )
    reports = [r for t, _, r in reported if t >= reported_since]
    each_line = [u for r in reports for u in r.get("utterance_onsets", []) if u["id"] in ids]
    pairs = matched(each_line, probed)
    frames = Frames(recs)
    return {
        "probe": [m - t for t, m in probed],
        "probe, at render": rendered_offsets(recs),
        "page, each line": [line_offset(u) for u in each_line],
        "page, every onset": [ms for r in reports for ms in r.get("lipsync_onsets_ms", [])],
        "probe − page": [p - q for p, q, _ in pairs],
        # the probe's own figure at each line's start the page reported (an onset after a
        # shorter pause, which the page does not report, may pair with a later opening)
        "probe, each line": [p for p, _, _ in pairs],
        "probe pairs": pairs,  # (the probe's offset, the page's, when the probe saw the mouth)
        # whether the probe saw each of those line starts in a frame the browser showed late, or
        # just after one (lipsync_figures.Frames.late_at)
        "probe, each line, a frame late": [frames.late_at(m) for _, _, m in pairs],
        "probe seen late": [frames.late_at(m) for _, m in probed],  # as "probe", in order
        "records": recs,  # every frame the probe saw, for a closer look at a line
        "errors": errors,
        "fps": stats.get("fps"),
        "held ms": stats.get("lookahead_ms"),  # how long the page held the stream at the end
        "fps reported": [r["fps"] for r in reports if "fps" in r],
        "seen": stats.get("visemes_seen_share"),
        # the output latency the page drew by, how it knew it, and what its context says now
        "latency": {
            "ms": stats.get("output_latency_ms"),
            "source": stats.get("output_latency_source"),
            "context": context,
        },
    }


def measure_offsets(
    browser, srv: LiveServer, n: int, variants: dict[str, str] = VARIANTS
) -> dict[str, dict[str, list[float]]]:
    """Each variant alone, one after the other."""
    return {
        name: measure_page(browser, srv, srv.url + path, n, name) for name, path in variants.items()
    }


def measure_continuous(browser, srv: LiveServer, minutes: float) -> dict[int, dict]:
    """One page while the show speaks without a break for `minutes`, two lines always queued:
    the page's own figures (every onset, each line) and the probe's, minute by minute."""
    with listening_page(browser, srv, srv.url + "/") as (page, reported):
        since, start = now_ms(page), time.monotonic()
        talk, queued, i = lines(60), list[str](), 0
        while time.monotonic() - start < minutes * 60:
            while len(queued) < 2:
                queued.append(_submit(srv, talk[i % len(talk)]))
                i += 1
            srv.call(until_final(srv, queued.pop(0)), timeout=90)
            print(f"  continuous: {(time.monotonic() - start) / 60:.1f} min", flush=True)
        for uid in queued:
            srv.call(until_final(srv, uid), timeout=90)
        time.sleep(5.5)  # the page's last report
        probed = onsets(records(page, since))
    by_minute: dict[int, dict] = {}

    def bucket(minute: float) -> dict:
        m = min(int(minute), max(0, int(minutes) - 1))  # the last lines' reports join the last
        return by_minute.setdefault(m, {f: [] for f in CONTINUOUS_FIGURES})

    for t, _, r in reported:
        if t >= start:
            b = bucket((t - start) / 60)
            b["page, every onset"] += r.get("lipsync_onsets_ms", [])
            b["page, each line"] += map(line_offset, r.get("utterance_onsets", []))
    for t, m in probed:
        bucket((t - since) / 60_000)["probe"].append(m - t)
    return dict(sorted(by_minute.items()))


def measure_frames(browser, srv: LiveServer, count: int, seconds: float) -> dict:
    """`count` pages open at once while the show speaks: each page's own frame figures. Pages
    that do not come up in time (many pages on few cores) are counted, not waited for."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    pages, failed = [], 0
    for _ in range(count):
        try:
            pages.append(open_stage(browser, srv.url + "/", timeout_ms=90_000))
        except PlaywrightTimeout:
            failed += 1
    read = "() => ({...window.allnighter.stats(), t: performance.now()})"
    start = [p.evaluate(read) for p in pages]
    deadline = time.monotonic() + seconds
    talk = lines(12)
    i = 0
    while time.monotonic() < deadline:
        srv.call(say(srv, talk[i % len(talk)]))
        i += 1
        time.sleep(min(3.0, max(0.0, deadline - time.monotonic())))
    fps, dropped, jitter = [], [], []
    for page, s0 in zip(pages, start, strict=True):
        s1 = page.evaluate(read)
        fps.append(s1["fps"])
        jitter.append(s1.get("frame_jitter_ms", float("nan")))  # the page's p99, lately
        minutes = (s1["t"] - s0["t"]) / 60_000
        dropped.append((s1["dropped_frames"] - s0["dropped_frames"]) / minutes)
        page.close()
    return {"fps": fps, "dropped": dropped, "jitter": jitter, "failed": failed}


def main(args: argparse.Namespace) -> int:
    from playwright.sync_api import sync_playwright

    from server.config import load_config

    cfg = load_config(args.config)
    cfg.load_asr = False
    cfg.stage.queue_size = max(cfg.stage.queue_size, 64)
    with sync_playwright() as p:
        browser = launch(p)
        print("loading models and starting the server…", flush=True)
        restore = behind_the_browser()
        srv = LiveServer(cfg).start(ready_timeout=900)
        try:
            print(f"lip-sync over {args.utterances} lines, each page in turn…", flush=True)
            offsets = measure_offsets(browser, srv, args.utterances)
            print("\n" + offsets_table(offsets) + "\n", flush=True)
            sweep = sweep_variants(args.leads, args.holds)
            tried, by_minute = {}, {}  # what --save writes of a sweep or run not asked for
            if sweep:
                print(f"lead and hold sweep, {args.sweep_utterances} lines each…", flush=True)
                tried = measure_offsets(browser, srv, args.sweep_utterances, sweep)
                print("\n" + offsets_table(tried) + "\n", flush=True)
            if args.continuous_minutes > 0:
                print(f"{args.continuous_minutes:g} minutes of continuous speech…", flush=True)
                by_minute = measure_continuous(browser, srv, args.continuous_minutes)
                print("\n" + continuous_table(by_minute, args.continuous_minutes) + "\n")
            frames = {}
            for count in (int(c) for c in args.pages.split(",")):
                print(f"frames with {count} page(s) for {args.seconds:.0f} s…", flush=True)
                frames[count] = measure_frames(browser, srv, count, args.seconds)
            browser.close()
        finally:
            srv.stop()
            restore()
    print("\n" + frames_table(frames, args.seconds))
    if args.save:
        measured = {"offsets": offsets, "sweep": tried, "continuous": by_minute, "frames": frames}
        with open(args.save, "w") as f:
            json.dump(measured, f)  # every figure, for a closer look than the tables give
    return 0
