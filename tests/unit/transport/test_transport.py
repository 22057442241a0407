"""Broadcast, WebRTC and socket.io with test-double models (tones): what a viewer receives."""

from __future__ import annotations

import asyncio

import aiohttp
import numpy as np

from server.bench.inprocess import request, say, until_final, utterance
from server.bench.viewer import PythonViewer
from tests.alignment import measure
from tests.harness import wait_for


def test_viewer_hears_tones_exactly_where_the_visemes_say(tone_server):
    async def run():
        v = PythonViewer(tone_server.url)
        await v.connect()
        await asyncio.sleep(0.3)
        status, _ = await say(tone_server, "one two three four")
        assert status == 202
        await wait_for(lambda: v.named("visemes"), timeout=10.0)
        utt = v.named("utterance")[0]
        await wait_for(
            lambda: v.frames and v.frames[-1].sample > utt["end_sample"] + 9600, timeout=10.0
        )
        frames = v.named("visemes")[0]["frames"]
        origin = utt["start_sample"] - 9600
        heard = v.audio(origin, utt["end_sample"] + 9600)
        await v.close()
        return measure(heard, origin, frames), frames

    fig, frames = asyncio.run(run())
    assert [f["viseme"] for f in frames].count("aa") == 4
    assert fig.voiced_blocks > 60  # 4 × 200 ms of tone heard
    assert fig.voiced_inside > 0.95
    assert fig.silent_outside > 0.95
    assert abs(fig.lag_ms) <= 10


def test_two_viewers_joined_at_different_times_hear_the_same_samples(tone_server):
    async def run():
        a = PythonViewer(tone_server.url)
        await a.connect()
        await say(tone_server, "alpha beta gamma delta epsilon zeta eta theta")
        await asyncio.sleep(0.6)  # b joins mid-phrase
        b = PythonViewer(tone_server.url)
        await b.connect()
        await wait_for(lambda: a.named("utterance"), timeout=10.0)
        end = a.named("utterance")[0]["end_sample"]
        await wait_for(lambda: b.frames and b.frames[-1].sample > end, timeout=10.0)
        # a decoder that joins mid-stream needs some packets to converge: skip b's first 200 ms
        lo = b.frames[0].sample + 9600
        by_sample = {f.sample: f.pcm for f in a.frames}
        pairs = [(by_sample.get(f.sample), f.pcm) for f in b.frames if lo <= f.sample < end]
        assert a.rtp_base != b.rtp_base  # different RTP origins, same broadcast samples
        await a.close()
        await b.close()
        return pairs

    pairs = asyncio.run(run())
    assert len(pairs) > 50
    assert max(int(np.abs(pb).max()) for _, pb in pairs) > 3000, "b joined during speech"
    # at every broadcast position b heard, a heard the same audio (same packets, same decoder)
    same = [
        pa is not None and int(np.abs(pa.astype(int) - pb.astype(int)).max()) < 50
        for pa, pb in pairs
    ]
    assert np.mean(same) > 0.98


def test_interrupt_stops_audio_at_its_sample_and_next_line_is_clean(tone_server):
    async def run():
        v = PythonViewer(tone_server.url)
        await v.connect()
        _, first = await say(tone_server, " ".join(["word"] * 20))  # 6 s of tones
        await asyncio.sleep(1.0)
        status, answer = await request(tone_server, "POST", "/api/v1/interrupt", {})
        assert status == 200
        at = answer["at_sample"]
        await wait_for(lambda: v.named("interrupt"), timeout=10.0)
        assert v.named("interrupt")[0]["at_sample"] == at
        # it names what it stopped, so a page can drop that line's events still on their way
        assert first["utterance_id"] in v.named("interrupt")[0]["utterances"]
        await asyncio.sleep(0.5)
        status, body = await say(tone_server, "fresh start")
        new_id = body["utterance_id"]
        await wait_for(lambda: any(u["id"] == new_id for u in v.named("utterance")), timeout=10.0)
        nxt = next(u for u in v.named("utterance") if u["id"] == new_id)
        await wait_for(lambda: v.frames[-1].sample > nxt["end_sample"] + 4800, timeout=10.0)
        after = v.audio(at + 960, nxt["start_sample"])  # between interrupt and next line
        tail = v.audio(nxt["end_sample"] + 960, nxt["end_sample"] + 4800)
        async with aiohttp.ClientSession() as http:
            r = await http.get(f"{tone_server.url}/api/v1/utterances", headers=tone_server.headers)
            states = {u["text"][:5]: u["state"] for u in (await r.json())["recent"]}
        await v.close()
        return after, tail, states

    after, tail, states = asyncio.run(run())
    assert np.abs(after.astype(np.int32)).max() < 300, "audio leaked past the interrupt"
    assert np.abs(tail.astype(np.int32)).max() < 300, "stale tail after the next line"
    assert states["word "] == "interrupted"
    assert states["fresh"] == "done"


def test_events_and_tokens_are_stamped_on_the_fused_clock(tone_server):
    async def now_ms() -> float:
        return (await request(tone_server, "GET", "/api/v1/time", token=None))[1]["now_ms"]

    async def run():
        v = PythonViewer(tone_server.url)
        await v.connect()
        before = await now_ms()
        _, health = await request(tone_server, "GET", "/healthz", token=None)
        _, body = await say(tone_server, "count the tokens", mode="chat")
        utt_id = body["utterance_id"]
        await wait_for(lambda: v.named("visemes"), timeout=10.0)
        record = await utterance(tone_server, utt_id)
        after = await now_ms()
        await until_final(tone_server, utt_id, timeout=30.0)
        await v.close()
        return v, before, health["current_sample"], record, after

    v, before, head, record, after = asyncio.run(run())
    # the answer's epoch: broadcast sample s is due at fused time epoch_ms + s / 48
    assert v.epoch_ms is not None
    assert abs(v.epoch_ms + head / 48 - before) < 500
    phrase = v.named("utterance")[0]
    assert abs(phrase["start_ms"] - (v.epoch_ms + phrase["start_sample"] / 48)) < 1
    visemes = v.named("visemes")[0]
    first = visemes["frames"][0]["sample"]
    assert abs(visemes["start_ms"] - (v.epoch_ms + first / 48)) < 1
    # the LLM's tokens, stamped on the same clock as they were decoded
    assert before <= record["first_token_ms"] <= record["last_token_ms"] <= after
    # every token after the first was checked against 3 audio frames; the fake takes 10 ms
    assert record["token_alignment"]["checked"] >= 1
    assert record["token_alignment"]["violations"] == 0
