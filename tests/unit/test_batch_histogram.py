"""The histogram fed in batches exports what prometheus_client's own would have."""

from __future__ import annotations

import random

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from server.collectors import BatchHistogram
from server.metrics import LIPSYNC_BUCKETS


def _lines(registry: CollectorRegistry, suffixes: tuple[str, ...]) -> list[str]:
    text = generate_latest(registry).decode()
    return sorted(ln for ln in text.splitlines() if ln.split("{")[0].endswith(suffixes))


def test_batches_count_as_one_value_at_a_time_would():
    ours_registry, theirs_registry = CollectorRegistry(), CollectorRegistry()
    ours = BatchHistogram("x_ms", "doc", LIPSYNC_BUCKETS, ["viewer"], registry=ours_registry)
    theirs = Histogram("x_ms", "doc", ["viewer"], buckets=LIPSYNC_BUCKETS, registry=theirs_registry)
    rng = random.Random(7)
    for viewer in ("a", "b"):
        for _ in range(20):
            batch = [rng.uniform(-150, 150) for _ in range(rng.randrange(0, 60))]
            batch += [rng.choice(LIPSYNC_BUCKETS) for _ in range(5)]  # on an edge: counted ≤ it
            ours.observe_many(batch, (viewer,))
            for v in batch:
                theirs.labels(viewer).observe(v)
    assert _lines(ours_registry, ("_bucket", "_count")) == _lines(
        theirs_registry, ("_bucket", "_count")
    )
    ours.remove("a")
    theirs.remove("a")
    assert _lines(ours_registry, ("_bucket", "_count")) == _lines(
        theirs_registry, ("_bucket", "_count")
    )
    assert 'viewer="a"' not in generate_latest(ours_registry).decode()
