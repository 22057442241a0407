"""The Kalman filter against a hand-worked example, and NTP readings from a loopback server."""

from __future__ import annotations

import numpy as np
import pytest

from server.bench.ntpserver import NTPResponder
from timesync.kalman import OffsetDriftFilter
from timesync.measurement import Measurement
from timesync.ntp import NTPSource, consensus, from_ntp, to_ntp
from timesync.protocol import offset_and_delay


def test_two_steps_by_hand():
    # x0 = 0, P0 = I, no process noise, R = 1, dt = 1; measurements 1 then 2.
    # step 1: P⁻ = [[2,1],[1,1]], K = [2/3, 1/3] → x = [2/3, 1/3], P = [[2/3,1/3],[1/3,2/3]]
    # step 2: x⁻ = [1, 1/3], P⁻ = [[2,1],[1,2/3]], K = [2/3, 1/3] → x = [5/3, 2/3],
    #         P = [[2/3,1/3],[1/3,1/3]]
    kf = OffsetDriftFilter(phase_noise=0, frequency_noise=0, p=np.eye(2), gate_sigmas=100)
    kf.predict(1.0)
    assert kf.update(1.0, 1.0)
    np.testing.assert_allclose(kf.x, [2 / 3, 1 / 3])
    np.testing.assert_allclose(kf.p, [[2 / 3, 1 / 3], [1 / 3, 2 / 3]])
    kf.predict(1.0)
    assert kf.update(2.0, 1.0)
    np.testing.assert_allclose(kf.x, [5 / 3, 2 / 3])
    np.testing.assert_allclose(kf.p, [[2 / 3, 1 / 3], [1 / 3, 1 / 3]])


def test_converges_on_offset_and_drift_and_gates_a_step():
    rng = np.random.default_rng(7)
    truth_offset, truth_drift = 0.0123, 40e-6  # 12.3 ms, 40 ppm
    kf = OffsetDriftFilter()
    for k in range(1, 400):  # 400 s of NTP-like readings, 1 ms jitter
        kf.predict(1.0)
        kf.update(truth_offset + truth_drift * k + rng.normal(0, 1e-3), 1e-6)
    now = truth_offset + truth_drift * 399
    assert abs(kf.offset - now) < 5e-4
    assert abs(kf.drift - truth_drift) < 5e-6
    kf.predict(1.0)
    assert not kf.update(now + 1.0, 1e-6), "a +1 s step must be gated out"
    assert kf.rejected == 1


def test_four_timestamps():
    # client clock 10 ms behind the server, 4 ms each way, server holds it 1 ms
    offset, delay = offset_and_delay(t0=100.000, t1=100.014, t2=100.015, t3=100.009)
    assert offset == pytest.approx(0.010) and delay == pytest.approx(0.008)


def test_ntp_source_reads_an_injected_offset_on_loopback():
    with NTPResponder(offset=0.250) as server:
        m = NTPSource("127.0.0.1", port=server.port).measure()
    assert m.ok, m.reason
    assert m.offset == pytest.approx(0.250, abs=0.005)
    assert 0 <= m.delay < 0.05 and m.error < 0.05


def test_ntp_timestamps_keep_the_nanosecond():
    ns = 1_796_070_176_443_946_123
    assert abs(from_ntp(to_ntp(ns)) - ns) <= 1  # 2^-32 s steps: a float would keep 0.5 µs


def test_a_reply_that_does_not_echo_the_request_is_not_taken():
    with NTPResponder(offset=0.250) as server:
        server.bogus_origin = True
        m = NTPSource("127.0.0.1", port=server.port, timeout=0.2).measure()
    assert not m.ok and "timed out" in m.reason


def test_a_silent_or_unsynchronised_server_is_a_failed_reading_not_a_crash():
    with NTPResponder() as server:
        server.silent = True
        m = NTPSource("127.0.0.1", port=server.port, timeout=0.2).measure()
    assert not m.ok and m.reason
    with NTPResponder(stratum=0) as server:
        m = NTPSource("127.0.0.1", port=server.port).measure()
    assert not m.ok and "unsynchronised" in m.reason


def test_consensus_drops_the_server_that_stepped():
    readings = [
        Measurement(f"s{i}", off, 0.01, 0.005, 0.0)
        for i, off in enumerate([0.0101, 0.0098, 0.0102, 1.0100])
    ]
    assert [m.source for m in consensus(readings)] == ["s0", "s1", "s2"]
