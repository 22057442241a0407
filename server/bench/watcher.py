"""The legitimate viewer who looks, in `bench abuse`: a stage page in Chromium with the probe in
it, and the reports the page sends the server."""

from __future__ import annotations

import json
import time
from typing import Any

from .browser import now_ms, open_stage, probe, records
from .lipsync_figures import Frames, matched, onsets, silent_while_loud

STATS_PERIOD_S = 5.0  # how often the stage page reports (main.js)


class Watcher:
    """A stage page in Chromium, the probe in it, and the reports the page sends the server
    (`client_stats`, read off its socket as it sends them)."""

    def __init__(self, browser: Any, url: str) -> None:
        self.reports: list[tuple[float, dict]] = []
        self.crashed_at: float | None = None  # monotonic s: its renderer went away
        self.page = open_stage(browser, url, before=self._listen)
        probe(self.page)

    def _listen(self, page: Any) -> None:
        page.on("websocket", lambda ws: ws.on("framesent", self._sent))
        page.on("crash", self._crashed)

    def _crashed(self, _page: Any) -> None:
        """The tab died (its renderer crashed or was killed): a viewer would see the browser's
        error page. Its figures are lost; the other tabs' are not."""
        self.crashed_at = time.monotonic()

    def _sent(self, payload: str | bytes) -> None:
        if isinstance(payload, str) and payload.startswith('42["client_stats",'):
            self.reports.append((time.monotonic(), json.loads(payload[2:])[1]))

    def mark(self) -> tuple[float, float]:
        return now_ms(self.page), time.monotonic()

    def forget(self, mark: tuple[float, float] | None) -> float | None:
        """The probe drops its records from before `mark` (all but the last minute's, with
        none); the page's JS heap in use after, MB."""
        before = None if mark is None else mark[0]
        heap = self.page.evaluate("(t) => window.__probe.forget(t ?? undefined)", before)
        return None if heap is None else float(heap)

    def wait(self, seconds: float) -> None:
        """Sleep, while Playwright takes the page's events."""
        self.page.wait_for_timeout(seconds * 1000)

    def figures(self, mark: tuple[float, float], wait: bool = True) -> dict[str, list[float]]:
        """Picture − sound (ms) since `mark`: the probe's at each line start it heard, but
        those the browser showed late (its frames are the viewer's machine's, not the
        server's: lipsync_figures.Frames.late_at), which are counted; the page's at every viseme
        onset it drew, but those on frames the page held back (its machine stalled: FrameStats
        .held in framestats.js), also counted; and the probe's less the page's own at the same
        line starts (where the two meters part, one of them moved). Beside the kept probe's
        and page's, the page's frame rate at each (samerates.py compares windows at the same
        rates)."""
        since_ms, since = mark
        if wait:  # for the page's last report (`wait=False`: the caller waited, for many pages)
            self.wait(STATS_PERIOD_S + 0.5)
        recs = records(self.page, since_ms)
        found = onsets(recs)
        frames = Frames(recs)
        probed = [(m - t, frames.late_at(m), frames.rate_at(m)) for t, m in found]
        reports = [r for t, r in self.reports if t >= since]
        lines = [u for r in reports for u in r.get("utterance_onsets", [])]
        drawn = [(*d, float(r.get("fps") or 0)) for r in reports for d in drawn_onsets(r)]
        return {
            "probe": [ms for ms, late, _ in probed if not late],
            "probe rates": [fps for _, late, fps in probed if not late],  # frames a second then
            "probe seen late": [ms for ms, late, _ in probed if late],
            "page": [ms for ms, held, _ in drawn if not held],
            "page rates": [fps for _, held, fps in drawn if not held],  # its report's (0: none)
            "page held": [ms for ms, held, _ in drawn if held],
            "probe − page": [p - q for p, q, _ in matched(lines, found)],
            "fps": [r["fps"] for r in reports if "fps" in r],  # the page's, as it reported it
            # each frame drawn while the speakers were loud: 1 where the page drew silence
            "silent while loud": [float(x) for x in silent_while_loud(recs)],
        }


def drawn_onsets(report: dict) -> list[tuple[float, bool]]:
    """A page's report's lip-sync offsets, each with whether its frame came held back."""
    onsets = report["lipsync_onsets_ms"]
    held = report.get("lipsync_onsets_held") or [False] * len(onsets)
    return list(zip(onsets, held, strict=True))
