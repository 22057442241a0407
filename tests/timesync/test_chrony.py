"""A real chrony server on loopback as an NTP source: the source reads it, the clock syncs."""

from __future__ import annotations

import asyncio
import math
import statistics
import sys

import pytest

from server.bench.chrony import chrony_on_loopback, chronyd_path
from timesync.fused import FusedClock
from timesync.ntp import NTPSource
from timesync.poller import SourcePoller, sources_from

pytestmark = pytest.mark.skipif(
    chronyd_path() is None,
    reason="chronyd is not installed (scripts/test-packages.sh installs chrony)",
)


@pytest.fixture
def chrony(tmp_path):
    """chronyd on 127.0.0.1 for one test: its NTP port."""
    with chrony_on_loopback(tmp_path) as port:
        yield port


def test_the_ntp_source_reads_a_real_chronyd(chrony):
    source = NTPSource("127.0.0.1", port=chrony)
    readings = [source.measure() for _ in range(5)]
    assert all(m.ok for m in readings), [m.reason for m in readings]
    # chrony serves this machine's own clock: the true offset is 0
    assert all(abs(m.offset) < 0.005 for m in readings), [m.offset for m in readings]
    assert all(0 < m.delay < 0.05 for m in readings), [m.delay for m in readings]
    assert all(m.error < 0.05 for m in readings)


@pytest.mark.skipif(sys.platform != "linux", reason="kernel timestamps are Linux's")
def test_the_kernel_times_the_exchange_on_linux(chrony):
    # Python's own stamps around sendto/recvfrom biased loopback offsets by ~20 µs. chronyd is
    # its own process: a responder thread in the test's process is woken late under load
    source = NTPSource("127.0.0.1", port=chrony)
    readings = [source.measure() for _ in range(5)]
    assert all(m.ok for m in readings) and source.kernel_stamps
    assert statistics.median(abs(m.offset) for m in readings) < 50e-6, readings


def test_the_fused_clock_fed_by_chronyd_is_synced_with_a_finite_error_bound(chrony):
    clock = FusedClock()
    poller = SourcePoller(clock, sources_from([f"127.0.0.1:{chrony}"], []))

    async def rounds() -> list[int]:
        return [await poller.poll_once() for _ in range(3)]

    assert asyncio.run(rounds()) == [1, 1, 1]
    status = clock.status()
    assert status["synced"] and status["running_on"] == "fused sources"
    bound = status["error_bound_s"]
    assert bound is not None and math.isfinite(bound) and 0 < bound < 0.01
    assert abs(status["sources"][0]["last_offset"]) < 0.005
    assert abs(clock.now() - clock.oscillator()) < 0.005
