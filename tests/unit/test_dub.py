"""Dubbing with test doubles: lines stream back in order, each with audio and visemes on one
sample clock; keys, limits and bad requests get their refusals; the show's speech goes first."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from server.bench.dubclient import audio_of, dub
from server.bench.inprocess import LiveServer
from server.config import RoleConfig, load_config
from server.loading import Models
from server.show.inference import BACKGROUND, LIVE, ModelThread
from tests.alignment import BLOCK, VOICED_RMS, block_rms, measure
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM

KEY = "a-dubbing-client-key"


@pytest.fixture(scope="module")
def dub_server():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.roles.append(RoleConfig(name="lyra", pitch=1.25))
    cfg.dub.api_keys = [KEY]
    cfg.dub.burst = 30
    cfg.dub.lines_per_minute = 1  # the burst, then about none: the rate test spends it
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(word_s=0.1, gap_s=0.05), None)).start()
    yield srv
    srv.stop()


def ten_lines() -> list[dict]:
    roles = ["nova", "orion", "lyra"]
    return [{"role": roles[n % 3], "text": f"line {n} " + "word " * (n % 4 + 1)} for n in range(10)]


def quiet_at_rest(pcm: np.ndarray, frames: list[dict]) -> float:
    """The share of 10 ms blocks wholly inside a rest ("sil") that are silent."""
    loud = block_rms(pcm) > VOICED_RMS
    rests = [
        k
        for f in frames
        if f["viseme"] == "sil"
        for k in range(-(-f["sample"] // BLOCK), (f["sample"] + f["duration"]) // BLOCK)
        if k < len(loud)
    ]
    return float(np.mean([not loud[k] for k in rests])) if rests else 0.0


@pytest.mark.parametrize("fmt", ["wav", "opus"])
def test_ten_lines_of_three_roles_stream_in_order_with_their_visemes_on_the_audio(dub_server, fmt):
    body = {"lines": ten_lines(), "format": fmt}
    answer = asyncio.run(dub(dub_server.url, KEY, body))
    assert answer.status == 200, answer.objects
    lines, end = answer.lines, answer.objects[-1]
    assert [line["index"] for line in lines] == list(range(10))
    assert [line["role"] for line in lines] == [x["role"] for x in body["lines"]]
    assert end == {"done": True, "lines": 10, "seconds": pytest.approx(end["seconds"])}
    assert answer.arrived_s == sorted(answer.arrived_s)
    for line in lines:
        pcm = audio_of(line)
        assert line["sample_rate"] == 48_000 and line["format"] == fmt
        assert abs(len(pcm) - line["samples"]) <= (0 if fmt == "wav" else 960)
        words = len(line["text"].split())
        fig = measure(pcm, 0, line["visemes"])
        # each tone is heard where the mouth is open, and the mouth rests in the gaps
        assert fig.voiced_blocks >= words * 8, (fig, line["text"])
        assert fig.voiced_inside >= 0.95 and abs(fig.lag_ms) <= 10, fig
        assert quiet_at_rest(pcm, line["visemes"]) >= 0.9
        assert len(line["onsets"]) == words
        assert all(0 <= o < line["samples"] for o in line["onsets"])
    assert end["seconds"] == pytest.approx(sum(x["samples"] for x in lines) / 48_000)


def test_the_host_token_works_as_a_key_and_others_do_not(dub_server):
    one = {"lines": [{"role": "nova", "text": "hello"}]}
    assert asyncio.run(dub(dub_server.url, TOKEN, one)).status == 200
    for key in (None, "not-a-key-of-this-show"):
        refused = asyncio.run(dub(dub_server.url, key, one))
        assert refused.status == 401 and "key" in refused.objects[0]["error"]


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({}, 400, "lines"),
        ({"lines": []}, 400, "not empty"),
        ({"lines": [{"role": "nova", "text": "x"}], "format": "mp3"}, 400, "format"),
        ({"lines": [{"role": "nova", "text": "x"}], "speed": 2}, 400, "speed"),
        ({"lines": [{"role": "nobody", "text": "x"}]}, 404, "nobody"),
        ({"lines": [{"role": "nova", "text": ""}]}, 400, "text"),
        ({"lines": [{"role": "nova", "text": "x", "voice": "y"}]}, 400, "line 1"),
        ({"lines": [{"role": "nova", "text": "x" * 2001}]}, 413, "2000"),
        ({"lines": [{"role": "nova", "text": "x"}] * 51}, 413, "at most 50"),
        ({"lines": "hello"}, 400, "list"),
    ],
)
def test_a_bad_request_is_refused_with_why(dub_server, body, status, says):
    refused = asyncio.run(dub(dub_server.url, KEY, body))
    assert refused.status == status and says in refused.objects[0]["error"], refused.objects


def test_a_key_past_its_rate_is_refused_and_another_still_dubs():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.dub.api_keys = [KEY, "another-client-key-of-16"]
    cfg.dub.burst, cfg.dub.lines_per_minute = 4, 1
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(word_s=0.05, gap_s=0.05), None)).start()
    three = {"lines": [{"role": "nova", "text": "one"}] * 3}
    try:
        first = asyncio.run(dub(srv.url, KEY, three))
        second = asyncio.run(dub(srv.url, KEY, three))  # 3 more lines: 1 left in the bucket
        other = asyncio.run(dub(srv.url, "another-client-key-of-16", three))
    finally:
        srv.stop()
    assert first.status == 200 and other.status == 200
    assert second.status == 429 and "lines a minute" in second.objects[0]["error"]


def test_the_shows_calls_go_before_dubbings_waiting_on_the_model_thread():
    thread = ModelThread("test")
    order: list[str] = []
    gate = threading.Event()

    async def run() -> None:
        first = asyncio.ensure_future(thread.call(gate.wait))  # holds the thread
        await asyncio.sleep(0.05)
        calls = [thread.call(order.append, f"dub {n}", rank=BACKGROUND) for n in range(3)]
        calls.append(thread.call(order.append, "show", rank=LIVE))
        waiting = [asyncio.ensure_future(c) for c in calls]
        await asyncio.sleep(0.05)
        gate.set()
        await asyncio.gather(first, *waiting)

    asyncio.run(run())
    thread.shutdown()
    assert order == ["show", "dub 0", "dub 1", "dub 2"]


def test_a_second_worker_speaks_lines_while_the_shows_tts_thread_is_held():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.dub.api_keys, cfg.dub.workers = [KEY], 2
    shows, own = ToneTTS(word_s=0.05, gap_s=0.05), ToneTTS(word_s=0.05, gap_s=0.05)
    srv = LiveServer(cfg, Models(WordsLLM(), shows, None, dubbing=[own])).start()

    async def run() -> tuple[list[int], list[int]]:
        shows.running.clear()  # the first line taken up waits on the show's TTS thread
        one = {"lines": [{"role": "nova", "text": "one line"}]}
        calls = [asyncio.ensure_future(dub(srv.url, KEY, one)) for _ in range(4)]
        for _ in range(200):  # the other three, spoken by the second worker meanwhile
            if sum(c.done() for c in calls) >= 3:
                break
            await asyncio.sleep(0.05)
        while_held = [c.result().status for c in calls if c.done()]
        shows.running.set()
        return while_held, [(await c).status for c in calls]

    try:
        while_held, after = asyncio.run(run())
    finally:
        shows.running.set()
        srv.stop()
    assert while_held == [200, 200, 200] and after == [200] * 4


def test_a_client_that_hangs_up_has_its_waiting_lines_taken_out():
    from server.dub.api import DESK

    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.dub.api_keys = [KEY]
    tts = ToneTTS()
    srv = LiveServer(cfg, Models(WordsLLM(), tts, None)).start()
    many = {"lines": [{"role": "nova", "text": "a line"}] * 20}
    desk = srv.app[DESK]

    async def run() -> tuple[int, int]:
        import aiohttp

        tts.running.clear()  # the first line is taken up and held; the others wait
        async with aiohttp.ClientSession() as http:
            headers = {"Authorization": f"Bearer {KEY}"}
            async with http.post(srv.url + "/api/v1/dub", json=many, headers=headers) as r:
                assert r.status == 200
                for _ in range(100):
                    if len(desk.queue) == 19:
                        break
                    await asyncio.sleep(0.02)
                waiting = len(desk.queue)
        for _ in range(100):  # hung up: the server finds out, and takes them out
            if not len(desk.queue):
                break
            await asyncio.sleep(0.05)
        tts.running.set()
        return waiting, len(desk.queue)

    try:
        waiting, left = asyncio.run(run())
    finally:
        tts.running.set()
        srv.stop()
    assert (waiting, left) == (19, 0)


def test_audio_is_not_silence_and_time_runs_with_it(dub_server):
    started = time.perf_counter()
    answer = asyncio.run(dub(dub_server.url, KEY, {"lines": [{"role": "orion", "text": "hi"}]}))
    pcm = audio_of(answer.lines[0])
    assert np.sqrt(np.mean(pcm.astype(float) ** 2)) > 1000
    assert answer.arrived_s[0] <= time.perf_counter() - started


def test_under_load_every_request_hears_its_first_line_before_any_its_second():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.dub.api_keys = [KEY]
    tts = ToneTTS(word_s=0.05, gap_s=0.05)
    srv = LiveServer(cfg, Models(WordsLLM(), tts, None)).start()
    two = {"lines": [{"role": "nova", "text": "first line"}, {"role": "nova", "text": "second"}]}

    async def run() -> list:
        tts.running.clear()  # one request's first line is taken up and held; the rest wait
        calls = [asyncio.ensure_future(dub(srv.url, KEY, two)) for _ in range(4)]
        await asyncio.sleep(0.5)
        tts.running.set()
        return [(await c).lines for c in calls]

    try:
        answers = asyncio.run(run())
    finally:
        tts.running.set()
        srv.stop()
    firsts, seconds = zip(*answers, strict=True)
    # the TTS took every request's first line before any second line (all came at once)
    assert max(x["waited_ms"] for x in firsts) < min(x["waited_ms"] for x in seconds)
    for first, second in answers:  # each second line was due once its first had played
        played_ms = first["waited_ms"] + first["made_ms"] + 1000 * first["samples"] / 48_000
        assert second["due_ms"] == pytest.approx(played_ms, abs=1.0)
        assert "due_ms" not in first
