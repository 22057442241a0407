"""`allnighter bench clock` runs and prints its tables (its figures are the scenario tests')."""

from __future__ import annotations

from server.bench.chrony import chronyd_path
from server.bench.ptp4l import missing
from server.bench.table import rows_of
from server.cli import main

ROWS = [
    "PTP healthy",
    "NTP only",
    "PTP lost, NTP carries",
    "60 s holdover after PTP",
    "60 s holdover after NTP only",
    "NTP only, the reference steps 1 s",
]


def test_bench_clock_prints_every_simulated_scenario(capsys):
    assert main(["bench", "clock", "--minutes", "1", "--live-seconds", "0"]) == 0
    out = capsys.readouterr().out
    rows = rows_of(out, "fused error against injected truth")
    assert list(rows) == ROWS
    for name, row in rows.items():
        assert 0 <= float(row["fused p50"]) <= float(row["fused p99"]), row
        assert row["backwards"] == "0", f"{name}: the fused time went backwards"
        # within the default limit; catching up with a followed step, within its own
        limit = 20000 if "steps" in name else 500
        assert float(row["worst slew ppm"]) <= limit, row
    assert "skipped: live fixtures off" in out


def test_bench_clock_reads_the_live_fixtures_or_says_why_not(capsys):
    assert main(["bench", "clock", "--minutes", "1", "--live-seconds", "2"]) == 0
    out = capsys.readouterr().out
    rows = rows_of(out, "live fixtures")
    for fixture, present in (
        ("chronyd on loopback", chronyd_path() is not None),
        ("ptp4l pair in namespaces", missing() is None),
    ):
        if present:
            assert fixture in rows
            assert int(rows[fixture]["readings"]) > 0, rows[fixture]
        else:
            assert fixture not in rows
    both = chronyd_path() is not None and missing() is None
    assert ("both, fused together" in rows) == both
    if chronyd_path() is None:
        assert "skipped: chrony" in out
    if missing() is not None:
        assert "skipped: ptp4l pair" in out
