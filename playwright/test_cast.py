"""The cast in real Chromium: a scene of two characters, the second coming in over the end of
the first; each figure's mouth moves over its own character's speech only, and rests while the
other one speaks; the page's lip-sync figures come back by role."""

from __future__ import annotations

import time

from conftest import Host, screenshot, until_final

from server.bench.browser import now_ms, open_stage, probe, records
from server.bench.inprocess import LiveServer
from server.bench.lipsync_figures import OPEN
from server.keys import METRICS

EDGE = 4800  # 100 ms of samples either side of a span: the mouth eases in and out there
SCENE = {
    "lines": [
        {"role": "nova", "text": "Good evening, night owls. The moon is up, and so are we."},
        {"role": "orion", "text": "And a fine bright moon it is, too.", "overlap_ms": 500},
    ]
}


def _spans(host: Host, ids: list[str]) -> dict[str, tuple[int, int]]:
    """Each role's speech on the broadcast clock, from its utterance's record."""
    status, snap = host.call("GET", "/api/v1/utterances")
    assert status == 200, snap
    mine = {u["id"]: u for u in snap["recent"] if u["id"] in ids}
    return {u["role"]: (u["start_sample"], u["end_sample"]) for u in mine.values()}


def _role_lipsync(show: LiveServer, roles: tuple[str, ...], timeout: float = 12.0) -> dict:
    """How many viseme onsets of each role the pages have reported (client_stats, every 5 s)."""
    metrics = show.app[METRICS]
    deadline = time.monotonic() + timeout
    while True:
        counts = {
            role: metrics.registry.get_sample_value(
                "allnighter_role_lipsync_offset_ms_count", {"role": role}
            )
            or 0
            for role in roles
        }
        if all(c >= 3 for c in counts.values()) or time.monotonic() > deadline:
            return counts
        time.sleep(0.5)


def test_each_figure_mouths_its_own_characters_lines_only(browser, show: LiveServer, host: Host):
    page = open_stage(browser, show.url)
    try:
        until_final(host, host.say("Oh, hello."))  # the page settles on a first line
        page.wait_for_timeout(1000)
        probe(page)
        t0 = now_ms(page)
        status, body = host.call("POST", "/api/v1/scene", SCENE)
        assert status == 202, body
        ids = body["utterance_ids"]
        page.wait_for_function(
            "() => (window.allnighter.state().mouths.orion ?? 0) > 0.4", timeout=30_000
        )
        screenshot(page, "stage-cast")
        for uid in ids:
            until_final(host, uid)
        page.wait_for_timeout(1500)  # the scene plays out
        spans = _spans(host, ids)
        recs = [r for r in records(page, t0) if r["sample"] is not None and r["mouths"]]
        per_role = _role_lipsync(show, ("nova", "orion"))
    finally:
        page.close()

    # the page's lip-sync figures came back per role: each figure's own mouth was measured
    assert all(count >= 3 for count in per_role.values()), per_role

    assert set(spans) == {"nova", "orion"}, spans
    (nova_at, nova_end), (orion_at, orion_end) = spans["nova"], spans["orion"]
    assert orion_at < nova_end, "orion did not come in over nova's end"

    def inside(r: dict, lo: int, hi: int) -> bool:
        return lo + EDGE <= r["sample"] <= hi - EDGE

    for role, (lo, hi), other, (olo, ohi) in (
        ("nova", spans["nova"], "orion", spans["orion"]),
        ("orion", spans["orion"], "nova", spans["nova"]),
    ):
        wide = (olo - 2 * EDGE, ohi + 2 * EDGE)  # the other's speech and its edges
        alone = [r for r in recs if inside(r, lo, hi) and not inside(r, *wide)]
        assert len(alone) > 20, (role, len(alone))
        moving = sum(r["mouths"][role] > OPEN for r in alone) / len(alone)
        assert moving > 0.3, f"{role}'s mouth open in only {moving:.0%} of its own speech"
        still = max(r["mouths"][other] for r in alone)
        assert still < 0.05, f"{other}'s mouth moved ({still:.2f}) while {role} spoke alone"
    # before the scene and after it, both rest
    quiet = [r for r in recs if r["sample"] < nova_at - EDGE or r["sample"] > orion_end + EDGE]
    assert quiet and max(max(r["mouths"].values()) for r in quiet) < 0.05
