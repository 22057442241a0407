"""`allnighter bench nights --live-minutes N` (60): a real hour of the show running itself.

The server as its own process, as shipped but for its bind address and a few settings: the
autopilot on (a line after GAP_S of silence), drills on, the ASR checker off (the show and the
night are measured, not the checker), the night's triggers off (the same show at any hour),
and as its only time source a loopback NTP server of the bench's own. Nobody drives it: the
autopilot speaks, topics through the real LLM and greetings from the speech cache. Five stage
pages in Chromium watch it, each with the probe (server/bench/probe.js), and twenty aiortc
viewers in processes of their own listen. On a schedule, as shares of the run:

- 20 %: a synthesis raises (drill `tts_raises`);
- 35 %: a synthesis hangs three times its deadline (`tts_hangs`);
- 50 %: the NTP server steps STEP_S;
- 65 %: a reply's LLM raises after its first token (`llm_raises`);
- 80 %: the twenty viewers drop at once (their processes killed) and twenty others join.

Figures (nightlive_table.py): RSS after the warm-up and at the end, frames the server sent
late, lip-sync in the first and last WINDOW_S, utterances accepted against their outcomes once
the show is drained, each failure's reason, the silences, the clock against the NTP server,
and the viewers who came back. Placement as in `bench abuse`: the server on cores of its own,
the browser and the viewers (standing for other machines) on the rest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from . import scrape
from .browser import SERVER_NICE
from .cores import confine_browser, cores_apart
from .cputime import CpuReader
from .deadline import answered_within, processes
from .nightlive_table import RSS_SPAN_S, Run, Silences, report, rss_between
from .nightlive_trend import PageReport
from .ntpserver import NTPResponder
from .pages import Marks, Pages, open_pages
from .talking import idle, playing, talking_server
from .viewers import collect, server_frames, start_clients
from .watcher import Watcher, drawn_onsets

TOKEN = "bench-nights-token-0"
SETTLE_S = 20.0  # pages and viewers join, the first lines play, before anything is counted
PAGES, VIEWERS = 5, 20
CLIENT_NICE = 19  # the viewers stand for other machines: they take what the server leaves
GAP_S = 5.0  # the autopilot's max_silence_s
STEP_S = 0.050
WINDOW_S = 600.0  # the first and the last ten minutes (a third of a shorter run)
POLL_S = 1.0  # the host's list (its last 20 lines), for the silences and the failures
CPU_S = 10.0  # where the CPU went (cputime.py)
FORGET_S = 60.0  # the probes drop the records no window needs, and the pages' heaps are read
SCHEDULE = (
    (0.20, "tts_raises"),
    (0.35, "tts_hangs"),
    (0.50, "ntp_step"),
    (0.65, "llm_raises"),
    (0.80, "viewers_drop"),
)
DRAIN_S = 180.0  # at the end, the autopilot off: what is queued is spoken within this


def settings(ntp_port: int) -> str:
    clients = PAGES + VIEWERS
    return (
        "load_asr = false\ndrills = true\n"
        f"[autopilot]\nenabled = true\nmax_silence_s = {GAP_S}\n"
        f'[time]\nntp_servers = ["127.0.0.1:{ntp_port}"]\nmax_poll_s = 8.0\n'
        # every client comes from this one address, the dropped viewers' peers still held
        f"[webrtc]\nmax_viewers_per_address = {2 * clients}\n"
        f"offers_per_minute = {10 * clients}\noffer_burst = {2 * clients}\n"
    )


class LiveNight:
    """The run's state as it goes: the server, its watchers and viewers, what was seen."""

    def __init__(
        self, pid: int, url: str, ntp: NTPResponder, watchers: list[Watcher], tag: str
    ) -> None:
        self.pid, self.url, self.ntp = pid, url, ntp
        self.pages = Pages(watchers, tag)
        self.run = Run()
        self.silences = Silences()
        self.failures: dict[str, str] = {}  # utterance id → its reason
        self.viewers = start_clients(url, VIEWERS, 24 * 3600, CLIENT_NICE)  # killed at the drop
        self.cpu = CpuReader(pid, tag, (proc.pid for proc, _ in self.viewers))
        self.started = time.monotonic()
        self._lookout: threading.Thread | None = None
        self._stop = threading.Event()
        self._looked_at = 0.0  # s into the run: the last look

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def start_looking(self) -> None:
        """Look, and read the server's RSS, every POLL_S on a thread of its own. Looked for
        between the main thread's Playwright calls, they stopped while a window's figures were
        read (20-30 s): the first hour with a table showed a 24 s silence there, the one not
        due to a fault, and no RSS readings."""
        self._stop.clear()
        self._lookout = threading.Thread(target=self._looking, name="lookout", daemon=True)
        self._lookout.start()

    def stop_looking(self) -> None:
        """The last look's silence, if one was going on, ends there."""
        self._stop.set()
        if self._lookout is not None:
            self._lookout.join()
        self.silences.saw(self._looked_at, True)

    def _looking(self) -> None:
        self.cpu.read(time.monotonic())
        cpu_at = CPU_S
        while True:
            t = self.elapsed()
            try:
                self.look()
                self.run.rss.append((t, scrape.rss_mb(self.pid)))
            except Exception as exc:  # the server busy or restarting: the next look will tell
                print(f"{t:7.1f} s: no look ({exc!r})", flush=True)
            if t >= cpu_at:
                tree = processes()  # one reading of /proc for both
                self.run.threads_moved += confine_browser(self.pages.tag, tree)
                if (busy := self.cpu.read(time.monotonic(), tree)) is not None:
                    self.run.cpu.append((t, busy))
                cpu_at += CPU_S
            if self._stop.wait(max(0.0, t + POLL_S - self.elapsed())):
                return

    def look(self) -> dict:
        """The host's list: a silence begun or ended, the failures in it so far."""
        snap = scrape.get_json(self.url, "/api/v1/utterances", TOKEN)
        on_air = snap["current"] is not None or playing(snap)
        self._looked_at = self.elapsed()
        self.silences.saw(self._looked_at, on_air)
        for u in snap["recent"]:
            if u["state"] == "failed":
                self.failures[u["id"]] = u.get("error") or "?"
        return snap

    def fault(self, name: str) -> None:
        at = self.elapsed()
        if name == "ntp_step":
            self.run.clock_before = scrape.get_json(self.url, "/api/v1/time")["offset_s"]
            self.ntp.offset += STEP_S
        elif name == "viewers_drop":
            for proc, out in self.viewers:
                proc.send_signal(signal.SIGKILL)  # gone without a goodbye, as a network drops
                proc.wait()
                out.unlink(missing_ok=True)
            began = time.monotonic()
            remaining = max(60.0, self.run.total_s - at)
            self.viewers = start_clients(self.url, VIEWERS, remaining, CLIENT_NICE)
            self.cpu.viewers = {proc.pid for proc, _ in self.viewers}
            self.run.rejoin_s = time.monotonic() - began
        else:
            scrape.post_json(self.url, "/api/v1/drill", {"fault": name}, TOKEN)
        self.run.faults.append((at, name))
        print(f"{at:7.1f} s: {name}", flush=True)

    def counts(self) -> dict[str, float]:
        values = scrape.metrics(self.url)
        outcome = 'allnighter_utterances_total{outcome="%s"}'
        return {
            "accepted": values.get("allnighter_utterances_accepted_total", 0.0),
            **{k: values.get(outcome % k, 0.0) for k in ("done", "interrupted", "failed")},
        }

    def drained(self) -> bool:
        """The autopilot off, until nothing waits, is made or plays."""
        scrape.post_json(self.url, "/api/v1/autopilot", {"enabled": False}, TOKEN)
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline:
            snap = self.look()
            if idle(snap):
                return True
            self.pages.wait(1.0)
        return False


def live_hour(minutes: float, save: str | None = None) -> str:
    """The real run's table; with `save`, every figure behind it written there as JSON."""
    from playwright.sync_api import sync_playwright

    total = minutes * 60
    window = min(WINDOW_S, total / 3)
    # the run is long and drives a browser: where it stops moving, its threads' stacks are
    # printed and it ends, rather than hold the machine (SIGUSR1 prints them at any time)
    faulthandler.dump_traceback_later(SETTLE_S + total + DRAIN_S + 900, exit=True, file=2)
    try:
        with (
            NTPResponder() as ntp,
            cores_apart() as (cpus, placed),
            talking_server(TOKEN, settings(ntp.port), SERVER_NICE, None, cpus, ()) as (
                server,
                url,
            ),
            sync_playwright() as pw,
        ):
            browser, watchers, tag = open_pages(pw, f"night-{os.getpid()}", url, PAGES)
            night = LiveNight(server.pid, url, ntp, watchers, tag)
            run = night.run
            run.total_s, run.placed, run.pages, run.viewers = total, placed, PAGES, VIEWERS
            watchers[0].wait(SETTLE_S)
            _measure(night, total, window)
            if save:
                Path(save).write_text(json.dumps(dataclasses.asdict(night.run)))
            table = report(night.run)
            print(table, flush=True)  # first: a run once hung at its end and printed nothing
            _step("closing the browser")
            # one killed above is closed already; one that does not close is killed
            with contextlib.suppress(Exception), answered_within(tag, 60.0):
                browser.close()
            _step("stopping the server")
        return table
    finally:
        faulthandler.cancel_dump_traceback_later()


def _step(what: str) -> None:
    """The run's ending, step by step in the output: where one hangs, the last says which."""
    print(f"{time.strftime('%H:%M:%S')} {what}…", flush=True)


def _measure(night: LiveNight, total: float, window: float) -> None:
    run = night.run
    run.rss_settled = scrape.rss_mb(night.pid)
    frames0 = server_frames(night.url)
    night.started = time.monotonic()
    first: Marks | None = night.pages.marks()
    last: Marks | None = None
    schedule = list(SCHEDULE)
    forget_at = FORGET_S
    night.start_looking()
    try:
        while (t := night.elapsed()) < total:
            if t >= forget_at:
                run.heap.append((t, night.pages.forget(first or last)))
                forget_at += FORGET_S
            if schedule and t >= schedule[0][0] * total:
                night.fault(schedule.pop(0)[1])
            if first is not None and t >= window:
                run.first = night.pages.figures(first)
                first = None
            if last is None and t >= total - window:
                last = night.pages.marks()
            night.pages.wait(0.25)
    finally:
        night.stop_looking()
    _step("the last window's figures")
    run.last = night.pages.figures(last or night.pages.marks())
    # the show has warmed up after the first window: replies, greetings from the cache,
    # every thread started
    run.rss_start = rss_between(run, window, window + RSS_SPAN_S)
    run.rss_end = rss_between(run, total - RSS_SPAN_S, total)
    frames1 = server_frames(night.url)
    run.frames = (frames1[0] - frames0[0], frames1[1] - frames0[1])
    run.clock = scrape.get_json(night.url, "/api/v1/time")
    run.clock_truth = STEP_S
    run.silences = list(night.silences.stretches)  # the drain's quiet is by design
    _step("the viewers' reports")
    run.heard = collect(night.viewers, 60)
    _step("draining the show")
    run.drained = night.drained()
    run.counts = night.counts()
    run.failures = sorted(night.failures.values())
    run.pages_crashed = [t - night.started for t in night.pages.crashes()]
    run.page_reports = [
        _page_report(t - night.started, r)
        for w in night.pages.watchers
        for t, r in w.reports
        if t >= night.started
    ]
    if night.pages.killed_at is not None:
        run.browser_killed_at = night.pages.killed_at - night.started


def _page_report(at: float, report: dict) -> PageReport:
    """A page's report as the run keeps it (`at`: s into the run)."""
    drawn = drawn_onsets(report)
    return PageReport(
        at,
        report.get("fps"),
        [ms for ms, held in drawn if not held],
        sum(held for _, held in drawn),
        report.get("lookahead_ms"),  # web/static/stage/lookahead.js
    )


def main_live(args: Any) -> None:
    print(f"a real run of {args.live_minutes:g} minutes…", flush=True)
    live_hour(args.live_minutes, args.save)  # it prints its table as soon as it has it
