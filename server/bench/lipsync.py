"""`allnighter bench lipsync`: mouth against sound in real Chromium, and frame rates.

A real server (real models, ASR checker off) and Debian's Chromium. Two stage pages listen to
the same lines, one after the other (one page open at a time, as on a viewer's machine): the
page as shipped, and the same page with its onset calibration off (`?calibration=off`: the bare
RTP-to-sample mapping, the baseline of this run). An independent
probe in each page (its own WebAudio analyser, server/bench/probe.js) records every animation
frame; the offset is the drawn mouth's opening minus the heard audio's onset (positive: the mouth
is late). Then N pages are opened together while the show speaks, and each page's own frame
figures (fps, dropped frames) are read.

The lines begin with an open, voiced sound: a line that starts with m, b or p sounds while the
lips are still closed; an initial k, t or p is silent, and an initial h nearly so, while the lips
already form the next sound. The "mouth opens / sound starts" moment is only well defined for
open voiced starts, so the lines are chosen that way (no line is measured and then dropped).
"""

from __future__ import annotations

import argparse
import time

from .browser import launch, now_ms, open_stage, probe, records
from .harness import LiveServer, say, until_final
from .lipsync_figures import onset_offsets
from .table import median, pct, render

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
ENDINGS = [
    "the city sleeps while we keep talking.",
    "this is the best hour of the night.",
    "we have a question from a listener.",
    "the stars look brighter after midnight.",
    "nothing beats a warm cup of tea.",
    "the radio hums along with the rain.",
]
WARM_UP = 3  # lines before measuring: Chromium's jitter buffer settles, the page calibrates


def lines(n: int) -> list[str]:
    return [
        f"{OPENINGS[i % len(OPENINGS)]} {ENDINGS[(i * 7 + i // len(OPENINGS)) % len(ENDINGS)]}"
        for i in range(n)
    ]


def _speak(srv: LiveServer, text: str) -> None:
    status, body = srv.call(say(srv, text))
    if status != 202:
        raise RuntimeError(f"say refused: {body}")
    srv.call(until_final(srv, body["utterance_id"]), timeout=90)
    time.sleep(0.8)  # the line's audio plays out, then a pause before the next


VARIANTS = {"calibrated (as shipped)": "/", "uncalibrated (baseline)": "/?calibration=off"}


def measure_offsets(browser, srv: LiveServer, n: int) -> dict[str, list[float]]:
    """Each variant alone (one page open, as one viewer's machine has), one after the other."""
    out = {}
    for name, path in VARIANTS.items():
        page = open_stage(browser, srv.url + path)
        probe(page)
        for text in lines(WARM_UP):
            _speak(srv, text)
        since = now_ms(page)
        for i, text in enumerate(lines(n)):
            _speak(srv, text)
            print(f"  {name}: line {i + 1}/{n}", flush=True)
        out[name] = onset_offsets(records(page, since))
        page.close()
    return out


def measure_frames(browser, srv: LiveServer, count: int, seconds: float) -> dict:
    pages = [open_stage(browser, srv.url + "/") for _ in range(count)]
    read = "() => ({...window.allnighter.stats(), t: performance.now()})"
    start = [p.evaluate(read) for p in pages]
    deadline = time.monotonic() + seconds
    talk = lines(12)
    i = 0
    while time.monotonic() < deadline:
        srv.call(say(srv, talk[i % len(talk)]))
        i += 1
        time.sleep(min(3.0, max(0.0, deadline - time.monotonic())))
    fps, dropped = [], []
    for page, s0 in zip(pages, start, strict=True):
        s1 = page.evaluate(read)
        fps.append(s1["fps"])
        minutes = (s1["t"] - s0["t"]) / 60_000
        dropped.append((s1["dropped_frames"] - s0["dropped_frames"]) / minutes)
        page.close()
    return {"fps": fps, "dropped": dropped}


def main(args: argparse.Namespace) -> int:
    from playwright.sync_api import sync_playwright

    from server.config import load_config

    cfg = load_config(args.config)
    cfg.load_asr = False
    cfg.stage.queue_size = max(cfg.stage.queue_size, 64)
    print("loading models and starting the server…", flush=True)
    srv = LiveServer(cfg).start(ready_timeout=900)
    try:
        with sync_playwright() as p:
            browser = launch(p)
            print(f"lip-sync over {args.utterances} lines, each page in turn…", flush=True)
            offsets = measure_offsets(browser, srv, args.utterances)
            frames = {}
            for count in (int(c) for c in args.pages.split(",")):
                print(f"frames with {count} page(s) for {args.seconds:.0f} s…", flush=True)
                frames[count] = measure_frames(browser, srv, count, args.seconds)
            browser.close()
    finally:
        srv.stop()
    rows = []
    for name, values in offsets.items():
        absolute = [abs(v) for v in values]
        rows.append(
            [
                name,
                len(values),
                median(values),
                pct(values, 5),
                pct(values, 95),
                pct(absolute, 95),
                pct(absolute, 99),
                "holds" if absolute and pct(absolute, 95) <= 40 else "misses",
            ]
        )
    print()
    print(
        render(
            "bench lipsync: mouth opening − audio onset (ms), real Chromium, probe per frame",
            ["page", "onsets", "p50", "p5", "p95", "|p95|", "|p99|", "|p95| ≤ 40 ms"],
            rows,
        )
    )
    print()
    print(
        render(
            f"bench lipsync: animation frames while speaking ({args.seconds:.0f} s)",
            ["pages", "fps median", "fps min", "dropped/min median", "dropped/min max"],
            [
                [n, median(f["fps"]), min(f["fps"]), median(f["dropped"]), max(f["dropped"])]
                for n, f in frames.items()
            ],
        )
    )
    return 0
