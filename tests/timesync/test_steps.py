"""The only time source moves for good: the fused clock follows it within a bounded number of
readings, slewing, never backwards, and its error bound covers the truth meanwhile. Where
another source still agrees with the estimate, the one that moved is outvoted instead."""

from __future__ import annotations

import asyncio
import math
import time

import numpy as np
import pytest

from server.bench.ntpserver import NTPResponder
from timesync.fused import FusedClock
from timesync.instant import monotonic_and_system
from timesync.measurement import Measurement
from timesync.ntp import NTPSource
from timesync.poller import SourcePoller
from timesync.simulate import Reference, SimNTP, SimPTP, run

STEP_AT = 600.0  # s into the run: the reference moves
FOLLOWED_WITHIN = 420.0  # s: within 1 ms of the new truth after 7 min of polling


@pytest.mark.parametrize("size", [0.020, 0.050, 1.0, -0.050, -1.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_step_of_the_only_ntp_source_is_followed_in_simulation(size, seed):
    ref = Reference(steps=[(STEP_AT, size)])
    trace = run([SimNTP()], STEP_AT + 900, reference=ref, seed=seed)
    clock = trace.clock
    assert clock.sources["ntp"].followed == 1
    assert trace.backwards() == 0
    assert trace.worst_slew_ppm() <= clock.follow_slew_ppm * (1 + 1e-6)
    # nothing can know of the step before a reading says so; from then on, and before it,
    # the bound covers the real error at every read
    uncovered = trace.uncovered(STEP_AT)
    assert not uncovered.any(), f"{uncovered.sum()} reads with the error outside its bound"
    late = trace.window(STEP_AT + FOLLOWED_WITHIN)
    assert np.abs(trace.error[late]).max() < 1e-3
    # caught up, the clock slews at its everyday rate again
    assert not clock.status()["catching_up"]


def test_a_step_taken_at_a_small_weight_after_a_calm_night_stays_inside_the_bound():
    """After hours of one calm NTP server the estimate is tight; the first reading after a
    step, with a long delay, has a gate wide enough to be taken, at a small weight: the
    estimate stays near the old time while the reading, inside its own error bound, says
    the new one. The bound reaches the reading until the next (seed 2 of `bench nights`)."""
    step_at = 7.5 * 3600
    trace = run([SimNTP()], step_at + 120, reference=Reference(steps=[(step_at, 0.05)]), seed=2)
    uncovered = trace.uncovered(step_at)
    assert not uncovered.any(), f"{uncovered.sum()} reads with the error outside its bound"


def test_a_source_that_moves_while_another_agrees_is_outvoted_not_followed():
    # the NTP server's time jumps (the server is wrong); PTP still reports the truth
    ntp = SimNTP(step_at=STEP_AT, step_size=0.050)
    trace = run([SimPTP(), ntp], STEP_AT + 300, seed=4)
    assert trace.clock.sources["ntp"].followed == 0
    assert trace.clock.sources["ntp"].rejected >= 10
    assert np.abs(trace.error[trace.window(STEP_AT)]).max() < 50e-6
    # the bound did not swell for readings the other source outvotes
    assert trace.bound[trace.window(STEP_AT + 60)].max() < 1e-3


def test_a_single_outlier_is_not_followed_and_widens_the_bound_only_until_the_next_reading():
    trace = run([SimNTP(spike_chance=0.0)], 900, seed=6)
    clock = trace.clock
    before = clock.error_bound()
    # one reading 30 ms off, then the source is back with the truth
    at = clock.monotonic()
    offset = clock.filter.offset + 0.030
    assert not clock.ingest(Measurement("ntp", offset, 0.005, 0.003, at))
    assert clock.error_bound() > 0.030, "the bound must reach a reading that may be the truth"
    assert clock.ingest(Measurement("ntp", clock.filter.offset, 0.005, 0.003, at + 16))
    assert clock.sources["ntp"].followed == 0
    assert clock.error_bound() < before + 0.005


@pytest.mark.parametrize("size", [0.020, 0.050, 1.0])
def test_a_loopback_ntp_server_that_steps_is_followed_live(size):
    """A real NTP exchange over loopback, polled as the server polls it (every 0.2 s here):
    the server's time moves by `size` after the clock synced to it."""
    clock = FusedClock()

    async def scenario(server: NTPResponder) -> list[tuple[float, float, float]]:
        poller = SourcePoller(clock, [NTPSource("127.0.0.1", port=server.port)])
        reads = []  # (s since the step, fused − truth, bound) after each poll
        for _ in range(10):
            await poller.poll_once()
            await asyncio.sleep(0.2)
        stepped = asyncio.get_running_loop().time()
        server.offset += size
        caught_up = None
        while True:
            await poller.poll_once()
            mono, system = monotonic_and_system()
            since = asyncio.get_running_loop().time() - stepped
            reads.append((since, clock.at(mono) - (system + server.offset), clock.error_bound()))
            if caught_up is None and abs(reads[-1][1]) < 1e-3:
                caught_up = since
            if caught_up is not None and since > caught_up + 2 or since > FOLLOWED_WITHIN:
                return reads
            await asyncio.sleep(0.2)

    with NTPResponder(offset=0.200) as server:
        reads = asyncio.run(scenario(server))
    source = next(iter(clock.sources.values()))
    assert source.followed == 1
    # the error is a difference of seconds since 1970, each rounded to its float's last place
    # (0.24 µs today): the bound is held to what that arithmetic can tell apart
    resolved = 2 * math.ulp(time.time())
    uncovered = [(t, e, b) for t, e, b in reads if abs(e) > b + resolved]
    assert not uncovered, f"the bound missed the error at {len(uncovered)} reads: {uncovered[:3]}"
    since, error, _ = reads[-1]
    assert since < FOLLOWED_WITHIN and abs(error) < 1e-3
