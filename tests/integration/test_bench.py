"""The benchmarks run and print their tables (how fast is for the benchmarks, not the tests)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from server.bench.table import rows_of

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
    out = allnighter("latency", "--lines", "1", "--peer-lines", "2")
    assert "ratio p50 (paired)" in out
    tables = [t for t in out.split("\n\n") if t.count("|") > 10]
    floors = next(t for t in tables if "floor p50" in t)
    rows = [ln for ln in floors.splitlines() if ln.startswith("|") and "---" not in ln][1:]
    assert [r.split("|")[1].strip() for r in rows] == ["verbatim", "chat", "long first sentence"]
    for r in rows:
        cells = [c.strip() for c in r.split("|")[1:-1]]
        assert float(cells[2]) > 0 and float(cells[5]) > 0  # pipeline and floor p50 measured
    # the same lines opened and whole, at the server and at a WebRTC viewer, beside the peer
    # where it is installed, and where the time went
    peer = next(t for t in tables if "measured at" in t)
    rows = [r for r in peer.splitlines() if r.startswith("|") and "---" not in r]
    cells = [[c.strip() for c in r.split("|")[1:-1]] for r in rows]
    got = {(c[0], c[1]): c for c in cells if len(c) == 5}
    for path in ("Allnighter, opening (as shipped)", "Allnighter, whole first sentence"):
        for where in ("server", "viewer"):
            assert got[path, where][2] == "2" and float(got[path, where][3]) > 0, got
    assert "opening (as shipped) / whole first sentence, at the server" in out
    assert "where first audio's time goes" in out and "word error rate" in out


def test_bench_viewers_prints_loss_and_cpu_per_viewer():
    out = allnighter("viewers", "--viewers", "2", "--seconds", "4")
    assert "lost %" in out and "largest N that holds" in out
    row = next(
        ln for ln in out.splitlines() if ln.startswith("|") and ln.split("|")[1].strip() == "2"
    )
    assert row.split("|")[2].strip() == "2"  # both viewers heard the broadcast


def test_bench_lipsync_prints_offsets_sweep_drift_and_frame_rates(tmp_path):
    saved = tmp_path / "figures.json"
    out = allnighter(
        "lipsync",
        *("--utterances", "2", "--pages", "1", "--seconds", "3"),
        *("--leads", "0", "--holds", "120", "--sweep-utterances", "1"),
        *("--continuous-minutes", "0.4", "--save", str(saved)),
    )
    rows = [ln for ln in out.splitlines() if ln.startswith("|") and "---" not in ln]
    cells = [[c.strip() for c in r.split("|")] for r in rows]
    table = {(c[1], c[2]): c for c in cells}
    header = next(r for r in rows if r.startswith("| page "))
    goals = ["in ATSC %", "in R37 %", "|p95| ≤ 10", "p1, p99 in ATSC", "all in R37"]
    assert all(f" {name} " in header for name in goals), header
    pages = ("calibrated (as shipped)", "calibrated, latencyHint 0.25 s", "uncalibrated (baseline)")
    for page in pages:
        assert table[page, "probe"][-2] in ("holds", "misses")  # every goal has its verdict
        assert int(table[page, "probe"][3]) >= 1  # the probe matched a mouth opening to an onset
        # beside it, the same onsets against the sound as rendered
        assert table[page, "probe, at render"][3] == table[page, "probe"][3]
        # the page's own figures, as it reported them: each line's first voiced viseme
        assert int(table[page, "page, each line"][3]) >= 1
        assert int(table[page, "page, every onset"][3]) >= int(table[page, "page, each line"][3])
    # the lead tried, with its hold, has its own rows; the continuous run its minute
    assert int(table["lead 0 ms, hold 120 ms", "page, each line"][3]) >= 1
    minute = next(c for c in cells if c[1] == "0–1")
    assert int(minute[2]) >= 1  # onsets the page drew while the show spoke without a break
    frames = next(c for c in cells if c[1] == "1")
    assert frames[2] == "1/1" and float(frames[3]) > 0  # the page came up and drew frames
    # the figures behind the tables, saved: as many onsets as the table counted
    figures = json.loads(saved.read_text())
    every = figures["offsets"]["calibrated (as shipped)"]["page, every onset"]
    assert len(every) == int(table["calibrated (as shipped)", "page, every onset"][3])
    assert figures["continuous"]["0"]["page, every onset"] and figures["frames"]["1"]["fps"]


def test_bench_abuse_prints_each_attack_beside_none():
    from server.bench.attacks import ATTACKS

    out = allnighter("abuse", "--seconds", "3", "--after-seconds", "1")
    rows = rows_of(out, "bench abuse")
    assert list(rows) == list(ATTACKS), out
    for row in rows.values():
        assert row["≤ none"] in ("holds", "fails") and float(row["RSS peak MB"]) > 0, out
        assert row["aiortc viewer heard"] == "1", out  # it heard the show through each attack
        # the stage page drew viseme onsets through each, and its lip-sync was judged
        assert int(row["viseme onsets (page)"]) > 0, out
        assert row["page goals"] in ("holds", "misses"), out
        assert row["page as unattacked"] in ("holds", "fails"), out
    assert "500 offers never connecting: {'statuses'" in out  # what the attacker was told


def test_bench_nights_prints_simulated_nights_and_what_each_level_saves():
    out = allnighter("nights", "--nights", "1", "--lines", "2", "--live-minutes", "0")
    nights = rows_of(out, "bench nights: 1 simulated nights")
    assert nights["incidents a night (all kinds)"][""] in ("holds", "fails"), out
    assert float(nights["viewers at the restart"]["median"]) > 0, out
    # the autopilot spoke into the quiet: a night's longest silence is measured, and counted
    assert float(nights["longest silence s, the restart's aside"]["worst"]) > 0, out
    assert float(nights["pages back in the busiest second after it"]["median"]) > 0, out
    shipped = "syntheses, 02:00 hour ÷ worst other (cache as shipped)"
    assert nights[shipped][""] in ("holds", "fails"), out
    levels = rows_of(out, "bench nights: what each")
    for voice in ("Piper", "espeak-ng"):  # each voice's CPU was measured
        assert float(levels[f"{voice}, CPU ms per s of speech"]["median"]) > 0, out
    assert levels["espeak-ng, CPU ms per s of speech"]["goal"] in ("holds", "fails"), out
    assert 0 < float(levels["chat message, share of words kept"]["median"]) <= 1, out
    assert float(levels["reply tokens, condensed"]["median"]) > 0, out


def test_bench_roles_prints_fifo_beside_the_scheduler_and_the_batch_timings():
    from server.bench.roles import WORKERS

    out = allnighter("roles", "--requests", "8")
    modes = rows_of(out, "## bench roles")
    assert set(modes) == {"FIFO", "role scheduler", f"role scheduler, {WORKERS} workers"}
    for row in modes.values():
        assert row["requests"] == "8" and row["failed"] == "0" and row["refused"] == "0"
        assert float(row["first audio mean"]) > 0 and float(row["speech s/s"]) > 0
    waits = rows_of(out, "## each role's wait")
    verdicts = [r["max ≤ bound"] for r in waits.values()]
    assert len(waits) == 8 and "holds" in verdicts and set(verdicts) <= {"holds", "no lines"}
    assert set(rows_of(out, "## Piper, one voice")) == {"1", "2", "4", "8"}
    personas = rows_of(out, "## the LLM's first token")
    assert set(personas) == {"computed whole", "reused"}, out
    assert all(float(row["median"]) > 0 for row in personas.values()), out
    together = rows_of(out, "## the LLM's replies to waiting prompts")
    assert set(together) == {"1", "2", "4"}, out
    assert all(float(row["together"]) > 0 for row in together.values()), out
