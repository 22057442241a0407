"""The poller votes among several NTP servers: a falseticker never reaches the clock."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest

from server.bench.ntpserver import NTPResponder
from server.config import load_config
from timesync.fused import FusedClock
from timesync.measurement import Measurement
from timesync.ntp import NTPSource, consensus
from timesync.poller import SourcePoller, sources_from


@contextlib.contextmanager
def three_servers(offset: float):
    with NTPResponder(offset) as a, NTPResponder(offset) as b, NTPResponder(offset) as c:
        yield a, b, c


def spied_poller(servers) -> tuple[SourcePoller, list[str]]:
    """A poller over `servers` whose clock records which sources' readings reached it."""
    clock = FusedClock()
    fed: list[str] = []
    ingest = clock.ingest

    def spy(m: Measurement, *args: float) -> bool:
        fed.append(m.source)
        return ingest(m, *args)

    clock.ingest = spy  # type: ignore[method-assign]
    sources = sources_from([f"127.0.0.1:{s.port}" for s in servers], [])
    return SourcePoller(clock, sources), fed


def rounds(poller: SourcePoller, n: int) -> list[int]:
    async def run() -> list[int]:
        return [await poller.poll_once() for _ in range(n)]

    return asyncio.run(run())


def test_a_server_that_steps_by_a_second_is_outvoted_and_the_clock_is_not_dragged(caplog):
    with three_servers(0.300) as (a, b, c):
        poller, fed = spied_poller([a, b, c])
        clock = poller.clock
        assert rounds(poller, 3) == [3, 3, 3]
        c.offset += 1.0  # c steps at 2 a.m.
        fed.clear()
        with caplog.at_level(logging.WARNING, logger="timesync.poller"):
            assert rounds(poller, 4) == [2, 2, 2, 2]
    stepped, good = f"ntp:127.0.0.1:{c.port}", f"ntp:127.0.0.1:{a.port}"
    assert stepped not in fed, "the falseticker's readings must never reach the filter"
    st = clock.sources[stepped]
    assert (st.accepted, st.rejected, st.failed) == (3, 4, 0)
    assert st.last_offset == pytest.approx(1.300, abs=0.01) and st.weight == 0.0
    assert clock.sources[good].accepted == 7 and clock.sources[good].rejected == 0
    outvoted = [r for r in caplog.records if "disagrees" in r.getMessage()]
    assert len(outvoted) == 1 and stepped in outvoted[0].getMessage()  # logged once
    assert clock.filter.offset == pytest.approx(0.300, abs=0.005)
    assert clock.now() - clock.oscillator() == pytest.approx(0.300, abs=0.005)


def test_a_falseticker_from_the_start_does_not_step_the_clock():
    # read first: alone it would step the fresh clock to +1.3 s (0.3 s is a start-up step too)
    with three_servers(0.300) as servers, NTPResponder(1.300) as wrong:
        poller, fed = spied_poller([wrong, *servers])
        assert rounds(poller, 2) == [3, 3]
    assert f"ntp:127.0.0.1:{wrong.port}" not in fed
    assert poller.clock.now() - poller.clock.oscillator() == pytest.approx(0.300, abs=0.005)


def test_two_servers_cannot_outvote_each_other():
    with NTPResponder(0.300) as a, NTPResponder(1.300) as b:
        poller, fed = spied_poller([a, b])
        rounds(poller, 1)
    assert sorted(fed) == sorted(f"ntp:127.0.0.1:{s.port}" for s in (a, b))


def test_a_reading_whose_error_reaches_the_consensus_is_kept():
    def reading(name: str, offset: float, error: float) -> Measurement:
        return Measurement(name, offset, 2 * error, error, 0.0)

    tight = [reading("a", 0.010, 1e-5), reading("b", 0.010, 1e-5)]
    kept = consensus([*tight, reading("c", 0.013, 0.005)])
    assert [m.source for m in kept] == ["a", "b", "c"]  # 3 ms off, but ±5 ms
    kept = consensus([*tight, reading("c", 0.013, 0.001)])
    assert [m.source for m in kept] == ["a", "b"]  # 3 ms off and ±1 ms: a falseticker


def test_two_servers_answered_late_do_not_outvote_the_one_answered_at_once():
    # on a busy machine two replies sat 1 ms in their servers' queues: both read ~0.5 ms off,
    # within their own ±0.5 ms; the prompt one's tight interval lies inside theirs
    late = [Measurement(n, 0.3005, 0.001, 0.0005, 0.0) for n in ("a", "b")]
    kept = consensus([*late, Measurement("c", 0.300004, 4e-5, 2e-5, 0.0)])
    assert [m.source for m in kept] == ["a", "b", "c"]


def test_the_ntp_version_is_configurable():
    cfg = load_config(None, env={"ALLNIGHTER_NTP_VERSION": "3", "ALLNIGHTER_NTP_SERVERS": "h:1"})
    assert cfg.time.ntp_version == 3
    (source,) = sources_from(cfg.time.ntp_servers, [], ntp_version=cfg.time.ntp_version)
    assert isinstance(source, NTPSource) and source.version == 3 and source.port == 1
    with pytest.raises(ValueError, match="ntp_version"):
        load_config(None, env={"ALLNIGHTER_NTP_VERSION": "five"})
    with NTPResponder(0.020) as server:  # the responder answers in the version it was asked
        m = NTPSource("127.0.0.1", port=server.port, version=3).measure()
    assert m.ok and m.offset == pytest.approx(0.020, abs=0.005)


def test_ptp_is_read_at_its_own_short_interval_while_ntp_backs_off():
    with NTPResponder(0.0) as ntp:
        sources = sources_from([f"127.0.0.1:{ntp.port}"], ["/nonexistent/ptp4l"])
        poller = SourcePoller(FusedClock(), sources, min_interval=30, ptp_interval=0.1)

        async def run_for(seconds: float) -> None:
            task = asyncio.get_running_loop().create_task(poller.run())
            await asyncio.sleep(seconds)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        asyncio.run(run_for(1.0))
    states = poller.clock.sources
    assert states[f"ntp:127.0.0.1:{ntp.port}"].accepted == 1
    assert states["ptp:/nonexistent/ptp4l"].failed >= 5  # absent, and asked again each time


def test_the_start_up_step_is_taken_from_the_rounds_tightest_reading():
    class Reading:  # a source that read what it is given
        def __init__(self, name: str, offset: float, error: float):
            self.name, self.m = name, Measurement(name, offset, 2 * error, error, 0.0)

        def measure(self) -> Measurement:
            return self.m

    late, prompt = Reading("late", 0.306, 0.006), Reading("prompt", 0.300, 2e-5)
    poller = SourcePoller(FusedClock(), [late, prompt])
    rounds(poller, 1)
    assert poller.clock.now() - poller.clock.oscillator() == pytest.approx(0.300, abs=0.001)
