"""Collectors of the show's own making, beside prometheus_client's: a histogram fed a batch at
once, and the fused clock's status read at each scrape."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.utils import floatToGoString


class BatchHistogram:
    """A histogram fed a report's values at once, for the figures viewers' pages send in
    batches (up to 200 onsets a report). prometheus_client's observe() costs microseconds a
    value: fifty sockets reporting together held the loop that paces audio for 150 ms, and the
    broadcast sent frames late. Here a batch is one numpy count. Exported as before: buckets
    and a count, and no sum (the buckets go below zero)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        buckets: Sequence[float],
        labelnames: Sequence[str] = (),
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.name, self.documentation = name, documentation
        self.bounds = np.asarray(buckets, dtype=float)
        self.labelnames = tuple(labelnames)
        self._counts: dict[tuple[str, ...], np.ndarray] = {}  # per bucket, the last one +Inf
        self._lock = threading.Lock()  # /metrics may be scraped from another thread
        if registry is not None:
            registry.register(self)

    def observe_many(self, values: Sequence[float], labels: Sequence[str] = ()) -> None:
        if not values:
            return
        # bucket i holds values ≤ bounds[i] (Prometheus's "le"); past the last, +Inf
        where = np.searchsorted(self.bounds, np.asarray(values, dtype=float), side="left")
        added = np.bincount(where, minlength=len(self.bounds) + 1)
        key = tuple(labels)
        with self._lock:
            if key in self._counts:
                self._counts[key] += added
            else:
                self._counts[key] = added

    def remove(self, *labels: str) -> None:
        with self._lock:
            self._counts.pop(tuple(labels), None)

    def collect(self) -> Iterator[Metric]:
        family = Metric(self.name, self.documentation, "histogram")
        with self._lock:
            counted = [(k, np.cumsum(c)) for k, c in self._counts.items()]
        edges = [floatToGoString(b) for b in self.bounds] + ["+Inf"]
        for key, cumulative in counted:
            labels = dict(zip(self.labelnames, key, strict=True))
            for le, n in zip(edges, cumulative, strict=True):
                family.add_sample(f"{self.name}_bucket", {**labels, "le": le}, float(n))
            family.add_sample(f"{self.name}_count", labels, float(cumulative[-1]))
        yield family


class ClockCollector:
    """The fused clock's status at scrape time: offset, error bound, drift, sync, per source.

    Offsets are the reference's (or the fused time's) lead over the local oscillator, as in
    /api/v1/time. The error bound is +Inf until a source has been heard from.
    """

    def __init__(self, clock: Any) -> None:
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        st = self.clock.status()
        bound = st["error_bound_s"]
        for name, doc, value in (
            ("offset_seconds", "Fused time minus the local oscillator", st["offset_s"]),
            (
                "error_bound_seconds",
                "Bound (~3 sigma) on the fused time's error; +Inf until synced",
                float("inf") if bound is None else bound,
            ),
            ("drift_ppm", "Estimated drift of the oscillator against the sources", st["drift_ppm"]),
            ("synced", "1 once a time source has been heard from, else 0", float(st["synced"])),
        ):
            yield GaugeMetricFamily(f"allnighter_time_{name}", doc, value=value)
        offset = GaugeMetricFamily(
            "allnighter_time_source_offset_seconds",
            "A source's last reading: the reference minus the local oscillator",
            labels=["source"],
        )
        weight = GaugeMetricFamily(
            "allnighter_time_source_weight",
            "A source's share of the clock's last update (0 when rejected)",
            labels=["source"],
        )
        readings = CounterMetricFamily(
            "allnighter_time_source_readings",
            "A source's readings by outcome (accepted, rejected as an outlier or outvoted, failed)",
            labels=["source", "outcome"],
        )
        for src in st["sources"]:
            name = src["name"]
            if src["last_offset"] is not None:
                offset.add_metric([name], src["last_offset"])
            weight.add_metric([name], src["weight"])
            for outcome in ("accepted", "rejected", "failed"):
                readings.add_metric([name, outcome], src[outcome])
        yield from (offset, weight, readings)
