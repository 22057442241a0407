"""The cross-modal offset per utterance (text vs audio vs picture): the stage knows when a line
was text and when its sound is due; viewers' pages report when they heard and saw its first
voiced viseme. All on the fused clock (ms)."""

from __future__ import annotations

import asyncio
import time

import pytest
import socketio
from prometheus_client.parser import text_string_to_metric_families

from server.bench.inprocess import request, say, until_final, utterance
from server.keys import SIGNALS
from server.show.utterances import CROSS_MODAL_VIEWERS, CrossModal, ViewerOnset
from server.transport.viewerinput import UTTERANCE_ONSETS_PER_REPORT
from tests.harness import page_text, wait_for

INF = float("inf")
# per viewer: (heard − audio, picture − heard) in ms
VIEWERS = [(80.0, 10.0), (120.0, -20.0), (95.0, 30.0)]


def test_cross_modal_record_takes_medians_over_viewers():
    cm = CrossModal(text_ms=1000.0, audio_ms=1400.0)
    for n, (heard, late) in enumerate(VIEWERS):
        assert cm.add_viewer(f"v{n}", ViewerOnset(1400.0, 1400.0 + heard, 1400.0 + heard + late))
    assert not cm.add_viewer("v0", ViewerOnset(1400.0, 0.0, 0.0)), "a viewer counts once"
    assert cm.to_json() == {
        "text_ms": 1000.0,
        "audio_ms": 1400.0,
        "heard_ms": 1495.0,  # of 1480, 1520, 1495
        "picture_ms": 1500.0,  # of 1490, 1500, 1525
        "audio_minus_text_ms": 400.0,
        "heard_minus_audio_ms": 95.0,
        "picture_minus_heard_ms": 10.0,  # the median of the differences, not of the times
        "viewers": 3,
    }


def test_cross_modal_record_is_null_until_known_and_bounded():
    cm = CrossModal()
    assert cm.to_json() == dict.fromkeys(
        [
            "text_ms",
            "audio_ms",
            "heard_ms",
            "picture_ms",
            "audio_minus_text_ms",
            "heard_minus_audio_ms",
            "picture_minus_heard_ms",
        ]
    ) | {"viewers": 0}
    kept = [cm.add_viewer(f"v{n}", ViewerOnset(0.0, 1.0, 2.0)) for n in range(100)]
    assert sum(kept) == CROSS_MODAL_VIEWERS == 64 and all(kept[:64])
    assert cm.to_json()["viewers"] == 64


@pytest.fixture(scope="module")
def spoken(tone_server):
    """A verbatim line the viewers saw: its id, first voiced viseme sample and visemes event."""

    async def run():
        c = socketio.AsyncClient()
        events: list[dict] = []
        c.on("visemes", events.append)
        await c.connect(tone_server.url)
        _, body = await say(tone_server, "one two")
        utt_id = body["utterance_id"]
        await wait_for(lambda: any(e["utterance_id"] == utt_id for e in events), timeout=10)
        await c.disconnect()
        return utt_id, next(e for e in events if e["utterance_id"] == utt_id)

    utt_id, visemes = asyncio.run(run())
    sample = next(f["sample"] for f in visemes["frames"] if f["viseme"] != "sil")
    return utt_id, sample, visemes


async def viewer_reports(srv, *reports: dict) -> tuple[list[dict], bool]:
    """One viewer's page sends `reports` as client_stats: the acks, and whether the server
    took its stats."""
    c = socketio.AsyncClient()
    await c.connect(srv.url)
    acks = [await c.call("client_stats", r) for r in reports]
    took = c.get_sid() in srv.app[SIGNALS].client_stats
    await c.disconnect()
    return acks, took


async def cross_modal(srv, utt_id: str) -> dict:
    return (await utterance(srv, utt_id))["cross_modal"]


async def histogram(srv) -> dict[tuple[str, float], float]:
    """allnighter_cross_modal_offset_ms as {(pair, le): observations up to le}. (With buckets
    below zero the client exports no _sum: the buckets must tell where values fell.)"""
    text = await page_text(srv, "/metrics")
    return {
        (s.labels["pair"], float(s.labels["le"])): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "allnighter_cross_modal_offset_ms_bucket"
    }


def added(before: dict, after: dict, pair: str) -> dict[float, float]:
    """How many observations of `pair` came up to each bucket edge between two scrapes."""
    return {le: n - before.get((p, le), 0.0) for (p, le), n in after.items() if p == pair}


def onset(utt_id: str, sample: int, heard_ms: float, drawn_ms: float) -> dict:
    return {"id": utt_id, "sample": sample, "heard_ms": heard_ms, "drawn_ms": drawn_ms}


NOW_MS = time.time() * 1000  # the server's fused clock, with no source, reads this one
GOOD = onset("x", 0, NOW_MS, NOW_MS + 10)


@pytest.mark.parametrize(
    "value, why",
    [
        ("first", "not a list"),
        ([GOOD] * (UTTERANCE_ONSETS_PER_REPORT + 1), "too many"),
        ([GOOD, "x"], "not an object"),
        ([GOOD, {**GOOD, "id": 7}], "id not a string"),
        ([GOOD, {**GOOD, "id": "x" * 65}], "id too long"),
        ([GOOD, {**GOOD, "sample": -1}], "negative sample"),
        ([GOOD, {**GOOD, "sample": 1.5}], "sample not an int"),
        ([GOOD, {**GOOD, "sample": True}], "a bool is no sample"),
        ([GOOD, {**GOOD, "heard_ms": "1"}], "heard_ms not a number"),
        ([GOOD, {k: v for k, v in GOOD.items() if k != "drawn_ms"}], "drawn_ms missing"),
        ([GOOD, {**GOOD, "sample": 10**30}], "a sample no clock reaches"),
        ([GOOD, {**GOOD, "heard_ms": 1e308, "drawn_ms": 1e308}], "times far from now"),
        ([GOOD, {**GOOD, "heard_ms": NOW_MS - 20_000}], "heard 20 s before it was seen"),
    ],
)
def test_bad_utterance_onsets_are_refused_and_change_nothing(tone_server, spoken, value, why):
    utt_id, sample, _ = spoken
    # the first record is good and names a real utterance: it must not count either
    if isinstance(value, list) and value:
        value = [onset(utt_id, sample, NOW_MS, NOW_MS + 10), *value[1:]]

    async def run():
        before = await cross_modal(tone_server, utt_id), await histogram(tone_server)
        report = {"fps": 50.0, "lipsync_onsets_ms": [5.0], "utterance_onsets": value}
        (ack,), took = await viewer_reports(tone_server, report)
        after = await cross_modal(tone_server, utt_id), await histogram(tone_server)
        return ack, took, before, after

    ack, took, before, after = asyncio.run(run())
    assert ack["ok"] is False and "utterance_onsets must be a list of at most 50" in ack["error"]
    assert not took, f"{why}: the viewer's stats were kept"
    assert after == before, f"{why}: the utterance or histogram changed"


def test_viewers_reports_give_the_utterance_its_medians_and_the_histogram(tone_server, spoken):
    utt_id, sample, _ = spoken

    async def run():
        audio = (await cross_modal(tone_server, utt_id))["audio_ms"]
        before = await histogram(tone_server)
        acks = []
        for heard, late in VIEWERS:
            first = onset(utt_id, sample, audio + heard, audio + heard + late)
            again = onset(utt_id, sample, audio + 1000, audio)  # the same viewer: not counted
            unknown = onset("no-such-utterance", sample, audio, audio)
            more, _ = await viewer_reports(
                tone_server, {"utterance_onsets": [first, unknown]}, {"utterance_onsets": [again]}
            )
            acks += more
        after = await histogram(tone_server)
        return audio, acks, before, after, await cross_modal(tone_server, utt_id)

    audio, acks, before, after, cm = asyncio.run(run())
    assert acks == [{"ok": True}] * 6
    assert cm["viewers"] == 3
    assert cm["heard_minus_audio_ms"] == 95.0
    assert cm["picture_minus_heard_ms"] == 10.0
    assert cm["heard_ms"] == pytest.approx(audio + 95.0, abs=0.01)
    assert cm["picture_ms"] == pytest.approx(audio + 100.0, abs=0.01)

    # heard − audio 80, 95, 120; picture − heard −20, 10, 30 (cumulative counts per edge)
    heard = added(before, after, "heard_minus_audio")
    assert (heard[45], heard[100], heard[200], heard[INF]) == (0, 2, 3, 3)
    picture = added(before, after, "picture_minus_heard")
    assert (picture[-45], picture[-15], picture[0], picture[15], picture[45]) == (0, 1, 1, 2, 3)
    assert not any(added(before, after, "audio_minus_text").values()), "counted when placed"


def test_a_verbatim_line_is_text_when_accepted_and_audio_at_its_first_voiced_viseme(
    tone_server, spoken
):
    utt_id, sample, visemes = spoken
    cm = asyncio.run(cross_modal(tone_server, utt_id))
    # the event's start_ms is the due time of its first frame; 48 samples a ms
    due = visemes["start_ms"] + (sample - visemes["frames"][0]["sample"]) / 48
    assert cm["audio_ms"] == pytest.approx(due, abs=0.01)
    assert 0 < cm["audio_minus_text_ms"] < 5000
    assert cm["audio_minus_text_ms"] == round(cm["audio_ms"] - cm["text_ms"], 1)


def test_a_chat_reply_is_text_at_its_first_token_and_counted_once(tone_server):
    async def now_ms() -> float:
        return (await request(tone_server, "GET", "/api/v1/time", token=None))[1]["now_ms"]

    async def run():
        before = await histogram(tone_server)
        asked = await now_ms()
        _, body = await say(tone_server, "say something", mode="chat")
        record = await until_final(tone_server, body["utterance_id"], timeout=30)
        return asked, before, await histogram(tone_server), record

    asked, before, after, record = asyncio.run(run())
    cm = record["cross_modal"]
    assert record["state"] == "done"
    assert cm["text_ms"] == record["first_token_ms"] > asked
    assert cm["audio_ms"] > cm["text_ms"]
    assert cm["viewers"] == 0 and cm["heard_ms"] is None and cm["picture_minus_heard_ms"] is None
    latency = added(before, after, "audio_minus_text")
    assert latency[INF] == 1, "one observation for the utterance"
    below = max(le for le, n in latency.items() if n == 0)  # the edge under its bucket
    above = min(le for le, n in latency.items() if n == 1)
    assert below < cm["audio_minus_text_ms"] <= above
