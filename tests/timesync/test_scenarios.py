"""The FusedClock against injected truth: simulated PTP and NTP, and a real loopback NTP server.

Simulated minutes run in milliseconds (timesync/simulate.py). PTP reads the truth to ±1 µs
every second; NTP to ±1 ms every 16 s with occasional 20 ms delay spikes. Every run also checks
that the fused time never went backwards and never slewed faster than its limit.
"""

from __future__ import annotations

import time

import numpy as np

from server.bench.ntpserver import NTPResponder
from timesync.fused import FusedClock
from timesync.ntp import NTPSource
from timesync.simulate import SimNTP, SimPTP, Trace, lost_from, percentiles, run


def assert_monotonic_and_slewed(trace: Trace) -> None:
    assert trace.backwards() == 0, "the fused time went backwards"
    limit = trace.clock.max_slew_ppm
    assert trace.worst_slew_ppm() <= limit * (1 + 1e-6), trace.worst_slew_ppm()


def test_fusion_converges_to_the_truth_and_beats_ptp_alone():
    trace = run([SimPTP(), SimNTP()], 300, seed=1)
    assert_monotonic_and_slewed(trace)
    fused_p50, fused_p99 = percentiles(trace.error[trace.window(60)])
    _, ptp_p99 = percentiles(trace.source_errors("ptp", 60))
    assert fused_p99 < 10e-6, fused_p99
    assert fused_p99 < ptp_p99, (fused_p99, ptp_p99)  # better than its best single source
    assert abs(trace.clock.filter.drift - 20e-6) < 0.2e-6  # it learned the crystal's 20 ppm
    # PTP dominates: its last update moved the estimate a share a thousand times NTP's
    assert trace.clock.sources["ptp"].weight > 1000 * trace.clock.sources["ntp"].weight


def test_ntp_alone_converges_within_half_a_millisecond_and_beats_its_readings():
    trace = run([SimNTP()], 1800, seed=2, sample_every=0.5)
    assert_monotonic_and_slewed(trace)
    settled = trace.window(1200)  # twenty minutes of 16 s polls to learn the drift
    _, fused_p99 = percentiles(trace.error[settled])
    _, ntp_p99 = percentiles(trace.source_errors("ntp", 1200))
    assert fused_p99 < 500e-6, fused_p99
    assert fused_p99 < ntp_p99 / 3, (fused_p99, ntp_p99)
    assert (np.abs(trace.error[settled]) <= trace.bound[settled]).all()
    # the NTP bound (half the round trip) overstates its jitter; the clock learned by how much
    ntp = trace.clock.sources["ntp"]
    assert 0.5e-3 < ntp.jitter < 2.5e-3, ntp.jitter


def test_an_ntp_step_is_rejected_while_ptp_is_healthy():
    trace = run([SimPTP(), SimNTP(step_at=120)], 400, seed=3)
    assert_monotonic_and_slewed(trace)
    readings_after_step = len(trace.source_errors("ntp", 120))
    assert trace.clock.sources["ntp"].rejected == readings_after_step > 10
    assert trace.clock.sources["ptp"].rejected == 0
    assert np.abs(trace.error[trace.window(60)]).max() < 10e-6  # the second never leaked in


def test_losing_ptp_falls_back_to_ntp_without_a_jump():
    trace = run([SimPTP(down=lost_from(300)), SimNTP()], 900, seed=4)
    assert_monotonic_and_slewed(trace)
    before = trace.error[trace.window(240, 300)]
    just_after = trace.error[trace.window(300, 360)]
    after = trace.error[trace.window(300)]
    # the learned state carries on: no step toward NTP's millisecond noise at the hand-over
    assert np.abs(just_after).max() < np.abs(before).max() + 5e-6
    assert np.abs(after).max() < 200e-6, np.abs(after).max()  # NTP alone now steers
    assert trace.clock.sources["ntp"].accepted > len(trace.source_errors("ntp", 0, 300))
    assert (np.abs(after) <= trace.bound[trace.window(300)]).all()


def test_losing_both_holds_over_on_the_learned_drift_with_an_honest_bound():
    for sources, lost_at in (
        ([SimPTP(down=lost_from(600)), SimNTP(down=lost_from(600))], 600),
        ([SimNTP(down=lost_from(1200))], 1200),
    ):
        trace = run(sources, lost_at + 60, seed=5, sample_every=0.5)
        assert_monotonic_and_slewed(trace)
        holdover = trace.window(lost_at)
        err, bound = np.abs(trace.error[holdover]), trace.bound[holdover]
        assert err.max() < 1e-3, err.max()
        assert (err <= bound).all(), "the error bound must cover the true error"
        assert bound[-1] > bound[0]  # and grow while nothing is heard
        # with no drift learned the clock would have moved 20 ppm × 60 s = 1.2 ms off
        drifted = abs(trace.error[holdover][-1] - trace.error[holdover][0])
        assert drifted < 0.25 * 20e-6 * 60, drifted


def test_a_late_large_offset_is_slewed_at_the_limit_not_stepped():
    # PTP appears after the clock has handed out time: 0.3 s away, it may only be slewed
    trace = run([SimPTP(down=[(0, 10)])], 40, seed=6)
    assert_monotonic_and_slewed(trace)
    assert trace.worst_slew_ppm() > 0.99 * trace.clock.max_slew_ppm  # it slewed flat out
    # the filter took every reading: the first one's offset set, its drift was learned from
    # the next (a prior covariance kept beside the first variance had gated them all out)
    assert trace.clock.sources["ptp"].rejected == 0


def test_a_real_ntp_server_with_jitter_and_a_step():
    """Through the real NTP path on loopback: the clock learns the injected jitter, follows
    the offset, and does not jump at the server's +1 s step."""
    clock = FusedClock()
    with NTPResponder(offset=0.300, jitter=1e-3, seed=7) as server:
        source = NTPSource("127.0.0.1", port=server.port)

        ingested = [0.0]  # monotonic time of the last ingest

        def poll(n: int) -> list[bool]:
            out = []
            for _ in range(n):
                out.append(clock.ingest(source.measure(), time.time() - clock.oscillator()))
                ingested[0] = time.monotonic()
                time.sleep(0.01)
            return out

        poll(30)  # the server's bound says 50 µs; its first readings show what it really is
        assert all(poll(30))
        ntp = clock.sources[source.name]
        assert 0.4e-3 < ntp.jitter < 3e-3, ntp.jitter  # learned from the readings alone
        settled = clock.now() - clock.oscillator()
        assert abs(settled - 0.300) < 1.5e-3
        rejected = ntp.rejected
        server.offset += 1.0
        # the only source: its first readings after the step are refused and the clock holds;
        # once they keep agreeing, it follows them (tests/timesync/test_steps.py)
        assert poll(clock.follow_after) == [False] * (clock.follow_after - 1) + [True]
        assert ntp.rejected == rejected + clock.follow_after - 1 and ntp.followed == 1
        # from the reading it followed, the clock slews toward the new offset, at most
        # follow_slew_ppm (1 ms per 50 ms): by the time this reads it, the sleep in poll and
        # a busy machine have let it move that far, and no further: no jump
        moved = clock.now() - clock.oscillator() - settled
        since_follow = time.monotonic() - ingested[0]
        assert 0 <= moved < 0.2e-3 + clock.follow_slew_ppm * 1e-6 * since_follow, (
            moved,
            since_follow,
        )
