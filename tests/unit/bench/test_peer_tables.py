"""bench latency's comparison with the peer: its rows and ratios, at the server and the viewer."""

from __future__ import annotations

from server.bench.peer import PIPECAT, VARIANTS, first_audio_tables

STEPS = {"to_synthesis": 1.0, "synthesis": 70.0, "to_send": 1.5}


def ours(server: float, viewer: float | None) -> list[dict]:
    got = {"server": server, "viewer": viewer, "steps": STEPS, "split": True, "wer": 0.0}
    return [got, dict(got)]


def rows(out: str) -> dict[tuple[str, str], list[str]]:
    cells = [[c.strip() for c in r.split("|")[1:-1]] for r in out.splitlines() if "|" in r]
    return {(c[0], c[1]): c for c in cells if len(c) == 5 and "---" not in c[0]}


def test_the_peer_is_compared_at_the_server_and_at_its_own_webrtc_viewer():
    shipped, whole = VARIANTS
    measured = {shipped: ours(80.0, 170.0), whole: ours(160.0, 250.0)}
    peer = [{"first_voiced_ms": 160.0, "lead_in_ms": 40.0, "viewer_ms": 340.0}] * 2
    out = first_audio_tables(measured, peer)
    got = rows(out)
    assert got[PIPECAT, "server"][2:4] == ["2", "160.0"]
    assert got[PIPECAT, "viewer"][2:4] == ["2", "340.0"]
    assert "opening (as shipped) / pipecat, at the server: p50 0.50, p95 0.50" in out
    assert "opening (as shipped) / pipecat, at the viewer: p50 0.50, p95 0.50" in out
    assert "opening (as shipped) / whole first sentence, at the viewer: p50 0.68" in out


def test_a_peer_without_a_viewer_is_compared_at_the_server_only():
    shipped, whole = VARIANTS
    measured = {shipped: ours(80.0, None), whole: ours(160.0, None)}
    peer = [{"first_voiced_ms": 100.0, "lead_in_ms": 40.0, "viewer_ms": None}]
    out = first_audio_tables(measured, peer)
    assert (PIPECAT, "viewer") not in rows(out)
    assert "at the viewer" not in out
    assert "opening (as shipped) / pipecat, at the server: p50 0.80" in out
    # and one not installed says so
    assert "not installed" in first_audio_tables(measured, "not installed (see README)")
