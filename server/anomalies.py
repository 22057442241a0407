"""Anomalies seen before the crash: a latency far beyond its own recent past.

The rule (from the study behind the show): a reading is anomalous when it exceeds 1.8 × the
rolling p99 of its series over the last minutes and 200 ms. The four series watched are the
ones that go first when a night goes wrong: text-to-first-audio, the LLM's first token, the
TTS's first audio and the event loop's lag. The p99 is the series' own, not a fixed budget, so
a slow machine is not alarmed all night and a fast one is when it slows down; the 200 ms floor
keeps the loop's millisecond jitter from raising alarms.

An alert goes to the log, to a counter (`allnighter_anomalies_total{series}`), to the host
panel (`GET /api/v1/show`, `alerts`) and, when configured, to a webhook. Time comes from an
injectable clock, so the night's machinery can be run on a simulated one.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

SERIES = ("text_to_first_audio", "llm_first_token", "tts_first_audio", "loop_lag")
FACTOR = 1.8
FLOOR_S = 0.200
WINDOW_S = 300.0  # the rolling window the p99 is taken over
MIN_SAMPLES = 20  # below this a p99 is no baseline yet: no alert
KEPT = 50  # alerts the host panel can list


@dataclass(frozen=True)
class Alert:
    series: str
    value: float
    baseline: float  # the p99 it was compared with, or the line it crossed
    unit: str  # "ms" (a latency), "bytes" or "share" (memory)
    at_ms: float  # wall-clock ms

    def to_json(self) -> dict:
        return {
            "series": self.series,
            "value": round(self.value, 3),
            "baseline": round(self.baseline, 3),
            "unit": self.unit,
            "at_ms": round(self.at_ms),
        }


class RollingP99:
    """The p99 of the readings of the last `window_s` seconds: a sorted list beside the
    readings in order of arrival (inserting and expiring are a bisect and a memmove)."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._arrived: deque[tuple[float, float]] = deque()  # (at, value)
        self._sorted: list[float] = []

    def __len__(self) -> int:
        return len(self._sorted)

    def add(self, value: float, at: float) -> None:
        self.expire(at)
        self._arrived.append((at, value))
        bisect.insort(self._sorted, value)

    def expire(self, now: float) -> None:
        while self._arrived and self._arrived[0][0] < now - self.window_s:
            _, old = self._arrived.popleft()
            del self._sorted[bisect.bisect_left(self._sorted, old)]

    def p99(self) -> float:
        return self._sorted[int(0.99 * (len(self._sorted) - 1))]


class Anomalies:
    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], float] = lambda: time.time() * 1000,
        window_s: float = WINDOW_S,
    ) -> None:
        self.clock, self.wall_ms = clock, wall_ms
        self._series = {name: RollingP99(window_s) for name in SERIES}
        self.recent: deque[Alert] = deque(maxlen=KEPT)
        self.raised = 0  # alerts ever raised
        self.listeners: list[Callable[[Alert], None]] = []  # the counter, the webhook

    def observe(self, series: str, seconds: float) -> Alert | None:
        """One reading of `series`; an Alert when it is anomalous against the readings before
        it (it joins the baseline either way: a lasting slowdown becomes the new normal)."""
        baseline = self._series[series]
        now = self.clock()
        baseline.expire(now)
        alert = None
        if len(baseline) >= MIN_SAMPLES:
            p99 = baseline.p99()
            if seconds > FACTOR * p99 and seconds > FLOOR_S:
                alert = Alert(series, seconds * 1000, p99 * 1000, "ms", self.wall_ms())
        baseline.add(seconds, now)
        if alert is not None:
            log.warning(
                "anomaly: %s %.0f ms, over %.1f × its p99 of %.0f ms in the last %.0f s",
                series,
                seconds * 1000,
                FACTOR,
                alert.baseline,
                baseline.window_s,
            )
            self.raise_alert(alert)
        return alert

    def p99(self, series: str, least: int = 5) -> float | None:
        """The series' p99 over its window now (None with fewer than `least` readings)."""
        baseline = self._series[series]
        baseline.expire(self.clock())
        return baseline.p99() if len(baseline) >= least else None

    def raise_alert(self, alert: Alert) -> None:
        self.raised += 1
        self.recent.append(alert)
        for listener in self.listeners:
            listener(alert)
