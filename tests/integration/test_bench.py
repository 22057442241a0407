"""The benchmarks run and print their tables (how fast is for the benchmarks, not the tests)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.models


def allnighter(*args: str, timeout: float = 600) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "bench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_bench_latency_prints_pipeline_floor_and_ratio_rows():
    out = allnighter("latency", "--lines", "1")
    assert "ratio p50 (paired)" in out
    rows = [ln for ln in out.splitlines() if ln.startswith("|") and "---" not in ln][1:]
    assert [r.split("|")[1].strip() for r in rows] == ["verbatim", "chat", "long first sentence"]
    for r in rows:
        cells = [c.strip() for c in r.split("|")[1:-1]]
        assert float(cells[2]) > 0 and float(cells[5]) > 0  # pipeline and floor p50 measured


def test_bench_viewers_prints_loss_and_cpu_per_viewer():
    out = allnighter("viewers", "--viewers", "2", "--seconds", "4")
    assert "lost %" in out and "largest N that holds" in out
    row = next(
        ln for ln in out.splitlines() if ln.startswith("|") and ln.split("|")[1].strip() == "2"
    )
    assert row.split("|")[2].strip() == "2"  # both viewers heard the broadcast


def test_bench_lipsync_prints_offsets_for_both_pages_and_frame_rates():
    out = allnighter("lipsync", "--utterances", "2", "--pages", "1", "--seconds", "3")
    rows = [ln for ln in out.splitlines() if ln.startswith("|") and "---" not in ln]
    pages = {r.split("|")[1].strip(): r for r in rows}
    assert "calibrated (as shipped)" in pages and "uncalibrated (baseline)" in pages
    onsets = int(pages["calibrated (as shipped)"].split("|")[2])
    assert onsets >= 1  # the probe matched a mouth opening to a heard onset
    frames = next(r for r in rows if r.split("|")[1].strip() == "1")
    assert float(frames.split("|")[2]) > 0  # the page drew frames
