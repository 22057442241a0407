"""The real hour's figures and the table `bench nights` prints for them (nightlive.py runs it)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from server.media.syncwindows import ATSC, in_window

from .nightlive_trend import PageReport, trend
from .samerates import at_same_rates, p95_interval
from .table import mean, median, pct, render

RSS_GROWTH_GOAL = 2.0  # % from after the warm-up to the end
# RSS is read each second and each end of the comparison is the median of a minute's
# readings: one reading swung by ±40 MB (3 %) as replies and syntheses came and went
RSS_SPAN_S = 60.0
LIPSYNC_GOAL_MS = 2.0  # the last window's |p95| against the first's
AFTER_FAULT_S = 60.0  # a silence that begins this soon after a fault (or during it) is its
LONG_SILENCE_S = 10.0  # silences longer than this are listed, with when they began


@dataclass
class Run:
    total_s: float = 0.0
    placed: str = ""  # where the server and the clients ran
    pages: int = 0
    viewers: int = 0  # the viewers who dropped at once, and who joined after them
    rss_settled: float = 0.0  # MB, once pages and viewers joined
    rss_start: float = 0.0  # MB, after the warm-up (the first window, every path taken once)
    rss_end: float = 0.0  # MB, the last minute
    rss: list[tuple[float, float]] = field(default_factory=list)  # (s into the run, MB)
    frames: tuple[float, float] = (0.0, 0.0)  # sent, sent late
    first: dict[str, list[float]] = field(default_factory=dict)  # Watcher.figures
    last: dict[str, list[float]] = field(default_factory=dict)
    clock: dict = field(default_factory=dict)  # /api/v1/time at the end
    clock_before: float | None = None  # its offset (s) just before the NTP server stepped
    clock_truth: float = 0.0  # how far the NTP server stepped (s)
    heard: dict = field(default_factory=dict)  # the viewers who joined after the drop
    rejoin_s: float | None = None  # how long until all of them heard the broadcast
    drained: bool = False
    silences: list[tuple[float, float]] = field(default_factory=list)  # (began, s)
    counts: dict[str, float] = field(default_factory=dict)  # accepted and the outcomes
    failures: list[str] = field(default_factory=list)  # each failed utterance's reason
    faults: list[tuple[float, str]] = field(default_factory=list)  # (s into the run, which)
    browser_killed_at: float | None = None  # s into the run: its pages did not answer
    pages_crashed: list[float] = field(default_factory=list)  # s into the run, a tab each
    page_reports: list[PageReport] = field(default_factory=list)  # every page's, in the run
    cpu: list[tuple[float, dict[str, float]]] = field(default_factory=list)  # cputime.CpuReader
    heap: list[tuple[float, list[float | None]]] = field(default_factory=list)  # MB, each page
    threads_moved: int = 0  # browser threads found off the clients' cores after the start


@dataclass
class Silences:
    """Stretches with nothing on the air, seen from the host's list every second
    (nightlive.POLL_S): (when it began, s since the run's start; how long, s)."""

    since: float | None = None
    stretches: list[tuple[float, float]] = field(default_factory=list)

    def saw(self, t: float, on_air: bool) -> None:
        if on_air and self.since is not None:
            self.stretches.append((self.since, t - self.since))
            self.since = None
        elif not on_air and self.since is None:
            self.since = t


def _spread(values: list[float]) -> float:
    return pct([abs(v) for v in values], 95) if values else float("nan")


def _verdict(ok: bool) -> str:
    return "holds" if ok else "fails"


def _lipsync_rows(run: Run) -> list[list[object]]:
    rows: list[list[object]] = []
    for key, name in (("page", "page, viseme onsets"), ("probe", "probe, line starts")):
        first, last = run.first.get(key, []), run.last.get(key, [])
        a, b = _spread(first), _spread(last)
        rows.append([f"lip-sync \\|p95\\| ms, {name}", a, b, b - a, "—", "—"])
        interval = [p95_interval(first), p95_interval(last)]
        rows.append([f"  its 95 % interval, {key}", *interval, "—", "—", "—"])
        rows += _same_rates_rows(run, key, judged=key == "page")
        rows.append(
            [
                f"  its median ms (n = {len(first)}, {len(last)})",
                median(first),
                median(last),
                median(last) - median(first),
                "—",
                "—",
            ]
        )
        inside = [100 * (in_window(x, ATSC) or 0.0) for x in (first, last)]
        rows.append(["  inside ATSC's window %", *inside, inside[1] - inside[0], "—", "—"])
        if key == "page":
            rows += _held_rows(run)
    apart = [median(w.get("probe − page", [])) for w in (run.first, run.last)]
    rows.append(["probe − page at the same line starts ms", *apart, apart[1] - apart[0], "—", "—"])
    # every frame, not only line starts: one drawn silent while the speakers were loud
    loud = [w.get("silent while loud", []) for w in (run.first, run.last)]
    shut = [100 * mean(x) for x in loud]
    name = f"frames silent while the sound was loud % (of {len(loud[0])}, {len(loud[1])})"
    rows.append([name, *shut, shut[1] - shut[0], "—", "—"])
    fps = [median(w.get("fps", [])) for w in (run.first, run.last)]
    rows.append(["  the pages' frames a second, median", *fps, fps[1] - fps[0], "—", "—"])
    return rows


def _same_rates_rows(run: Run, key: str, judged: bool) -> list[list[object]]:
    """The goal's row: the last window read at the first's frame rates (samerates.py), as the
    viewer's machine drawing a frame a second fewer widens every figure by several ms. Judged
    on the page's onsets (thousands a window: its |p95| known to about ±2 ms), not on the
    probe's line starts (one or two hundred: known to about ±50 ms), which check the page's."""
    rates = f"{key} rates"
    first, last = run.first.get(key, []), run.last.get(key, [])
    same = at_same_rates(
        first,
        run.first.get(rates) or [None] * len(first),
        last,
        run.last.get(rates) or [None] * len(last),
    )
    ok = judged and first and last and same.left_out < 50
    change = same.last - same.first
    return [
        [
            f"  at the same frame rates, {key}",
            same.first,
            same.last,
            change,
            f"±{LIPSYNC_GOAL_MS:g}" if judged else "—",
            _verdict(abs(change) <= LIPSYNC_GOAL_MS) if ok else "—",
        ],
        [f"  left out, at a rate one window lacked %, {key}", "—", "—", same.left_out, "—", "—"],
    ]


def _held_rows(run: Run) -> list[list[object]]:
    """The page's onsets left out above: drawn on frames its machine held back (another
    program took the CPU: on a bench machine, the server's own work on its other core). Each
    such frame shows what began in its gap that much late, however well the page timed it:
    the viewer's machine's figure, as the probe's line starts seen late are."""
    pairs = [(w.get("page held", []), w.get("page", [])) for w in (run.first, run.last)]
    share = [100 * len(held) / max(1, len(held) + len(kept)) for held, kept in pairs]
    every = [_spread(held + kept) for held, kept in pairs]
    return [
        ["  onsets on frames held back, left out %", *share, share[1] - share[0], "—", "—"],
        ["  \\|p95\\| ms with them", *every, every[1] - every[0], "—", "—"],
    ]


def the_faults(began: float, lasted: float, faults: list[float]) -> bool:
    """Whether a silence is a fault's: one struck while it lasted, or at most AFTER_FAULT_S
    before it began. The show is often already quiet when a fault strikes (the autopilot's
    gap): the line it then starts is the one that fails, and the quiet goes on."""
    return any(-lasted <= began - f <= AFTER_FAULT_S for f in faults)


def _silence_rows(run: Run) -> list[list[object]]:
    faults = [at for at, _ in run.faults]
    own = [s for began, s in run.silences if not the_faults(began, s, faults)]
    longest = max((s for _, s in run.silences), default=0.0)
    return [
        ["longest silence s (all)", "—", longest, "—", "—", "—"],
        [
            f"  not during a fault or {AFTER_FAULT_S:.0f} s after",
            "—",
            max(own, default=0.0),
            "—",
            "—",
            "—",
        ],
    ]


def report(run: Run) -> str:
    growth = 100 * (run.rss_end - run.rss_start) / run.rss_start if run.rss_start else 0.0
    sent, late = run.frames
    counts = run.counts
    outcomes = sum(counts.get(k, 0.0) for k in ("done", "interrupted", "failed"))
    lost = counts.get("accepted", 0.0) - outcomes
    moved = None
    if run.clock_before is not None and run.clock.get("offset_s") is not None:
        moved = (run.clock["offset_s"] - run.clock_before) * 1000
    bound = run.clock.get("error_bound_s")
    clock_error = abs(moved - run.clock_truth * 1000) if moved is not None else None
    heard = run.heard.get("viewers_heard", 0)
    lost_frames = 100 * run.heard.get("lost", 0) / max(1, run.heard.get("expected", 0))
    rows: list[list[object]] = [
        ["RSS MB, once joined", "—", run.rss_settled, "—", "—", "—"],
        [
            "RSS MB, after the first window",
            run.rss_start,
            run.rss_end,
            growth,
            f"≤ {RSS_GROWTH_GOAL:g} %",
            _verdict(growth <= RSS_GROWTH_GOAL),
        ],
        ["frames the server sent late %", "—", 100 * late / max(1.0, sent), "—", "—", "—"],
        *(
            [["  pages killed, not answering, at s", "—", run.browser_killed_at, "—", "—", "—"]]
            if run.browser_killed_at is not None
            else []
        ),
        [
            "stage pages crashed (at min)",
            "—",
            f"{len(run.pages_crashed)} of {run.pages}"
            + "".join(f", {t / 60:.1f}" for t in run.pages_crashed),
            "—",
            "0",
            _verdict(not run.pages_crashed),
        ],
        *_lipsync_rows(run),
        ["utterances accepted", "—", counts.get("accepted", 0.0), "—", "—", "—"],
        *(
            [f"  {k}", "—", counts.get(k, 0.0), "—", "—", "—"]
            for k in ("done", "interrupted", "failed")
        ),
        [
            "  lost (accepted, no outcome, drained)",
            "—",
            lost,
            "—",
            "0",
            _verdict(lost == 0 and run.drained),
        ],
        *_silence_rows(run),
        [
            "clock: moved after the NTP step ms",
            "—",
            moved if moved is not None else "—",
            "—",
            f"{run.clock_truth * 1000:g}",
            "—",
        ],
        [
            "  its error ms, against its bound",
            "—",
            clock_error if clock_error is not None else "—",
            "—",
            f"≤ {bound * 1000:.2f}" if bound is not None else "—",
            _verdict(clock_error is not None and bound is not None and clock_error <= bound * 1000),
        ],
        [
            "viewers back after the drop",
            "—",
            f"{heard} of {run.viewers}",
            "—",
            "all",
            _verdict(heard == run.viewers),
        ],
        [
            "  all hearing it after s",
            "—",
            run.rejoin_s if run.rejoin_s is not None else "—",
            "—",
            "—",
            "—",
        ],
        ["  their frames lost %", "—", lost_frames, "—", "—", "—"],
    ]
    minutes = run.total_s / 60
    table = render(
        f"bench nights: a real run of {minutes:g} minutes, the show on autopilot, {run.pages} "
        f"stage pages and {run.viewers} aiortc viewers, faults on a schedule; {run.placed}",
        ["figure", "first / at start", "last / at end", "change", "goal", "verdict"],
        rows,
    )
    faults = ", ".join(f"{name} at {at / 60:.1f} min" for at, name in run.faults)
    reasons = Counter(run.failures)
    failed = "; ".join(f"{n} × {why}" for why, n in reasons.most_common()) or "none"
    long = ", ".join(
        f"{s:.1f} s at {began / 60:.1f} min" for began, s in run.silences if s > LONG_SILENCE_S
    )
    spans = trend(run.total_s, run.page_reports, run.cpu, run.heap, run.rss)
    return (
        f"{table}\n\nfaults: {faults}\nfailed utterances: {failed}\n"
        f"silences over {LONG_SILENCE_S:g} s: {long or 'none'}\n"
        f"browser threads found off the clients' cores after the start: {run.threads_moved}"
        f"\n\n{spans}"
    )


def rss_between(run: Run, start: float, end: float) -> float:
    """The median RSS (MB) read from `start` to `end` s into the run (0 for no reading)."""
    readings = [mb for t, mb in run.rss if start <= t <= end]
    return median(readings) if readings else 0.0
