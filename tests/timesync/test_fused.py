"""FusedClock on a simulated timeline: converges, slews within its limit, never goes back."""

from __future__ import annotations

import numpy as np
import pytest

from server.bench.ntpserver import NTPResponder
from timesync.fused import FusedClock
from timesync.measurement import Measurement
from timesync.ntp import NTPSource


class SimTime:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def run(clock: FusedClock, sim: SimTime, seconds: int, reading, every: float = 1.0):
    """Advance simulated time in 10 ms ticks; feed a reading every `every` s (None: none)."""
    out, next_at = [], sim.t
    for _ in range(int(seconds * 100)):
        sim.t += 0.01
        if reading is not None and sim.t >= next_at:
            m = reading(sim.t)
            if m is not None:
                clock.ingest(m)
            next_at += every
        # fused − oscillator (the simulated clocks start at 0: float64 keeps sub-ns there)
        out.append((sim.t, clock.now() - clock.oscillator()))
    return out


def assert_monotonic_and_slewed(samples, clock: FusedClock, ppm: float | None = None):
    monos = np.array([m for m, _ in samples])
    offsets = np.array([o for _, o in samples])
    assert (np.diff(monos) + np.diff(offsets) > 0).all(), "the fused time went backwards"
    slew = np.abs(np.diff(offsets)) / np.diff(monos)
    assert slew.max() <= (ppm or clock.max_slew_ppm) * 1e-6 * (1 + 1e-6)


def test_converges_on_ntp_truth_with_jitter_and_holds_over():
    sim, rng = SimTime(), np.random.default_rng(3)
    truth = lambda t: 0.040 + 20e-6 * (t - 1000)  # noqa: E731 - 40 ms off, 20 ppm drift
    clock = FusedClock(monotonic=sim, wall_at_start=0.0)

    def ntp(t):
        return Measurement("ntp", truth(t) + rng.normal(0, 1e-3), 0.01, 1e-3, t)

    clock.ingest(ntp(sim.t))  # before any time is handed out: a logged start-up step
    samples = run(clock, sim, 300, ntp)
    assert_monotonic_and_slewed(samples, clock)
    err = clock.now() - (clock.oscillator() + truth(sim.t))
    assert abs(err) < 1e-3
    bound_synced = clock.error_bound()
    samples = run(clock, sim, 60, None)  # both sources lost: holdover on the learned drift
    assert_monotonic_and_slewed(samples, clock)
    err = clock.now() - (clock.oscillator() + truth(sim.t))
    assert abs(err) < 2e-3
    assert clock.error_bound() > bound_synced  # the bound grows honestly in holdover


def stepping(after_s: float):
    """A simulated clock, a FusedClock on it synced to an NTP source 10 ms off, and the source,
    which steps 1 s `after_s` from now."""
    sim = SimTime()
    clock = FusedClock(monotonic=sim, wall_at_start=0.0)
    step_at = sim.t + after_s

    def ntp(t):
        return Measurement("ntp", 0.010 + (1.0 if t > step_at else 0.0), 0.01, 5e-4, t)

    clock.ingest(ntp(sim.t))
    return sim, clock, ntp


def test_an_ntp_step_at_2am_is_slewed_not_jumped_and_followed_only_when_it_lasts():
    sim, clock, ntp = stepping(120)
    samples = run(clock, sim, 120 + clock.follow_after - 1, ntp)
    # the first readings after the step are outliers: the clock holds
    assert clock.sources["ntp"].rejected == clock.follow_after - 1
    assert abs(clock.status()["offset_s"] - 0.010) < 1e-3
    # the step lasts: the only source moved, and the clock follows it at its catching-up rate
    samples += run(clock, sim, 120, ntp)
    assert_monotonic_and_slewed(samples, clock, clock.follow_slew_ppm)
    assert clock.sources["ntp"].followed == 1
    assert abs(clock.status()["offset_s"] - 1.010) < 1e-3


def test_a_followed_step_is_caught_up_from_the_reading_that_followed_it_not_before():
    """Time read rarely: the catching-up rate starts at the reading that follows the step. The
    seconds before it, while the clock held, slew no faster than the everyday limit."""
    sim, clock, ntp = stepping(10)
    run(clock, sim, 10, ntp)
    held = clock.now() - clock.oscillator()
    # nobody reads the time while the step's readings come in and the last one is followed
    for _ in range(clock.follow_after):
        sim.t += 1.0
        clock.ingest(ntp(sim.t))
    assert clock.sources["ntp"].followed == 1
    sim.t += 0.010
    moved = clock.now() - clock.oscillator() - held
    before = clock.max_slew_ppm * 1e-6 * clock.follow_after  # the seconds it held
    assert 0 < moved <= before + clock.follow_slew_ppm * 1e-6 * 0.010 + 1e-9


def test_a_late_offset_is_slewed_not_stepped():
    sim = SimTime()
    clock = FusedClock(monotonic=sim, wall_at_start=0.0)
    clock.now()  # time was handed out: no step allowed any more
    clock.ingest(Measurement("ntp", 0.050, 0.01, 1e-4, sim.t))
    samples = run(clock, sim, 10, None)
    assert_monotonic_and_slewed(samples, clock)
    # 500 ppm for 10 s slews at most 5 ms of the 50 ms
    assert clock.status()["offset_s"] == pytest.approx(0.005, abs=2e-4)


def test_real_readings_from_a_loopback_ntp_server_steer_the_clock():
    clock = FusedClock()
    with NTPResponder(offset=0.300) as server:
        source = NTPSource("127.0.0.1", port=server.port)
        for _ in range(3):
            import time

            m = source.measure()
            assert clock.ingest(m, time.time() - clock.oscillator())
    assert clock.now() - clock.oscillator() == pytest.approx(0.300, abs=0.01)
    status = clock.status()
    assert status["synced"] and status["sources"][0]["accepted"] == 3


def test_the_server_follows_a_configured_ntp_server_and_warns_about_a_dead_one():
    import asyncio as aio

    import aiohttp

    from server.bench.inprocess import LiveServer, free_port
    from server.config import load_config
    from server.loading import Models
    from tests.fakes import ToneTTS, WordsLLM

    with NTPResponder(offset=0.200) as ntp:
        dead = free_port()  # nothing answers there
        cfg = load_config(
            None,
            env={
                "ALLNIGHTER_HOST_TOKEN": "timesync-test-token",
                "ALLNIGHTER_NTP_SERVERS": f"127.0.0.1:{ntp.port},127.0.0.1:{dead}",
            },
        )
        cfg.time.min_poll_s = 0.2
        srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(), None)).start()

        async def status():
            async with aiohttp.ClientSession() as http:
                for _ in range(50):
                    body = await (await http.get(srv.url + "/api/v1/time")).json()
                    if body["synced"]:
                        return body
                    await aio.sleep(0.1)
                return body

        try:
            body = aio.run(status())
        finally:
            srv.stop()
    assert body["running_on"] == "fused sources"
    by_name = {s["name"]: s for s in body["sources"]}
    assert by_name[f"ntp:127.0.0.1:{ntp.port}"]["last_offset"] == pytest.approx(0.2, abs=0.02)
    assert by_name[f"ntp:127.0.0.1:{dead}"]["failed"] >= 1


def test_a_steady_but_biased_source_yields_to_the_tighter_one_while_it_reports():
    # loopback NTP is as steady as PTP but only good to half its round trip (here ±20 µs,
    # 10 µs off); PTP is good to ±1 µs. Fused, the clock must follow PTP, and NTP alone once
    # PTP goes quiet — at its own full weight, not held down by a source that left.
    sim, rng = SimTime(), np.random.default_rng(5)
    clock = FusedClock(monotonic=sim, wall_at_start=0.0)
    ptp_on, turn = True, iter(range(10**6))

    def both(t):  # one second PTP, the next NTP
        if next(turn) % 2 and ptp_on:
            return Measurement("ptp", rng.normal(0, 2e-7), 2e-6, 1e-6, t)
        return Measurement("ntp", 10e-6 + rng.normal(0, 2e-7), 40e-6, 20e-6, t)

    run(clock, sim, 1500, both)  # long enough to learn that NTP is as steady as PTP
    assert abs(clock.filter.offset) < 3e-6, "the fused clock followed NTP's bias"
    assert clock.sources["ptp"].weight > 10 * clock.sources["ntp"].weight
    # biased within its own bound is no outlier: not one NTP reading was refused (or logged)
    assert clock.sources["ntp"].rejected == 0
    ptp_on = False
    run(clock, sim, 60, both)
    assert clock.filter.offset == pytest.approx(10e-6, abs=2e-6)
    assert clock.sources["ntp"].weight > 0.01


@pytest.mark.parametrize("seed", [0, 3])
def test_readings_that_all_wait_on_the_way_back_stay_inside_the_bound(seed):
    """Queueing on one side only (a busy uplink, a server slow to send its stamped reply):
    every reading errs the same way, by half its wait. The mean of many errs by their mean
    wait, which no 3 σ of their spread covers: the bound must count it as bias."""
    sim, rng = SimTime(), np.random.default_rng(seed)
    clock = FusedClock(monotonic=sim, wall_at_start=0.0)

    def slow_reply(t):
        back = rng.exponential(100e-6)  # waited after the server stamped its reply
        delay = 8e-6 + back
        return Measurement("ntp", 0.010 - back / 2, delay, delay / 2, t)

    clock.ingest(slow_reply(sim.t))
    misses = []
    for _ in range(300):  # a minute, read every 0.2 s
        run(clock, sim, 0.2, slow_reply, every=0.2)
        error = clock.now() - clock.oscillator() - 0.010
        if abs(error) > clock.error_bound():
            misses.append((round(sim.t - 1000, 1), error, clock.error_bound()))
    assert not misses, f"{len(misses)} reads with the error outside its bound: {misses[:3]}"


def test_a_followed_step_is_caught_up_at_the_catching_up_rate_to_the_end():
    """Time read every half second: the last milliseconds of a 1 s step are not left to the
    everyday 500 ppm (20 s more for 10 ms)."""
    sim, clock, ntp = stepping(10)
    run(clock, sim, 10 + clock.follow_after, ntp)
    assert clock.sources["ntp"].followed == 1
    for _ in range(int(2 / (clock.follow_slew_ppm * 1e-6)) + 2):  # 1 s at 20,000 ppm: 50 s
        sim.t += 0.5
        clock.ingest(ntp(sim.t))
        clock.now()
    assert not clock.status()["catching_up"]
    assert clock.status()["offset_s"] == pytest.approx(1.010, abs=1e-6)
