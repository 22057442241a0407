"""PTP through pmc from a real ptp4l pair, and a clean 'absent' where there is none."""

from __future__ import annotations

import pytest

from tests.timesync.ptp_fixture import PTPPair, missing
from timesync.ptp import PTPSource


def test_no_ptp4l_means_absent_not_an_error(tmp_path):
    m = PTPSource(socket=str(tmp_path / "no-such.sock")).measure()
    assert not m.ok and m.reason.startswith("absent")
    m = PTPSource(pmc="no-such-pmc").measure()
    assert not m.ok and "not installed" in m.reason


@pytest.mark.skipif(missing() is not None, reason=str(missing()))
def test_reads_offset_and_path_delay_from_a_ptp4l_slave():
    with PTPPair() as pair:
        source = PTPSource(socket=pair.socket)
        first = pair.wait_tracking(source)
        readings = [source.measure() for _ in range(5)]
    assert all(m.ok for m in readings)
    # one system clock on both sides: the true offset is 0; software stamping keeps it to µs
    assert all(abs(m.offset) < 100e-6 for m in [first, *readings])
    assert all(0 < m.delay < 1e-3 for m in readings)
