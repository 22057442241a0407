"""PTP hardware clock and RTC readers: absent cleanly, fail cleanly, and do the right sums.

This machine has no /dev/ptp* and no /dev/rtc*, so the readings are checked with injected
device reads on a real open file; the real ioctl and clock_gettime are checked to fail cleanly.
"""

from __future__ import annotations

import calendar
import time

from timesync.devices import PHCSource, RTCSource, phc_clock_id, rtc_epoch


def test_missing_devices_are_absent_not_errors(tmp_path):
    for source in (PHCSource(str(tmp_path / "ptp9")), RTCSource(str(tmp_path / "rtc9"))):
        m = source.measure()
        assert not m.ok and m.reason.startswith("absent"), m


def test_a_file_that_is_no_clock_is_a_failed_reading(tmp_path):
    path = tmp_path / "not-a-clock"
    path.write_bytes(b"")
    phc = PHCSource(str(path)).measure()
    rtc = RTCSource(str(path)).measure()
    assert not phc.ok and "not a PTP clock" in phc.reason
    assert not rtc.ok and "not an RTC" in rtc.reason


def test_phc_offset_is_taken_from_the_narrowest_bracket(tmp_path):
    path = tmp_path / "ptp0"
    path.write_bytes(b"")
    truth = 0.000250  # the PHC runs 250 µs ahead of the system clock (on TAI)
    m = PHCSource(str(path), read=lambda fd: time.clock_gettime(time.CLOCK_REALTIME) + 37 + truth)
    reading = m.measure()
    assert reading.ok
    assert abs(reading.offset - truth) < 50e-6
    assert reading.error < 1e-3


def test_phc_clock_id_is_the_kernels_formula():
    assert phc_clock_id(3) == -29  # ((~3) << 3) | 3
    assert phc_clock_id(0) == -5


def test_rtc_time_struct_to_epoch():
    # struct rtc_time for 2026-11-30 12:34:56 UTC (months from 0, years from 1900)
    fields = (56, 34, 12, 30, 10, 126, 0, 0, 0)
    assert rtc_epoch(fields) == calendar.timegm((2026, 11, 30, 12, 34, 56, 0, 0, 0))


def test_rtc_is_read_at_its_seconds_edge(tmp_path):
    path = tmp_path / "rtc0"
    path.write_bytes(b"")
    late = 0.3  # this RTC is 300 ms behind the system clock

    def read(fd: int) -> int:
        return int(time.time() - late)

    m = RTCSource(str(path), read=read).measure()
    assert m.ok
    assert abs(m.offset - (-late)) < 0.01, m


def test_devices_are_sources_from_settings_and_env():
    from server.config import load_config
    from timesync.poller import sources_from

    cfg = load_config(
        None, env={"ALLNIGHTER_PHC_DEVICES": "/dev/ptp0", "ALLNIGHTER_RTC_DEVICES": "/dev/rtc0"}
    )
    tc = cfg.time
    names = [
        s.name for s in sources_from(tc.ntp_servers, tc.ptp_sockets, tc.phc_devices, tc.rtc_devices)
    ]
    assert names == ["phc:/dev/ptp0", "rtc:/dev/rtc0"]
