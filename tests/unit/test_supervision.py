"""The show goes on: a broadcast loop that fails is started again, a synthesis that hangs fails
its utterance and no other, and /healthz says whether the show is actually on air."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from server.bench.inprocess import LiveServer, request, say, until_final
from server.config import load_config
from server.keys import BROADCAST, LIVE
from server.loading import Models
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM

DEADLINE_S = 1.5


@pytest.fixture(scope="module")
def show():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.models.tts_deadline_s = DEADLINE_S
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(), None)).start()
    yield srv
    srv.stop()


async def health(srv) -> tuple[int, dict]:
    return await request(srv, "GET", "/healthz", token=None)


async def restarts(srv, task: str) -> float:
    import aiohttp

    async with aiohttp.ClientSession() as http, http.get(srv.url + "/metrics") as r:
        text = await r.text()
    line = f'allnighter_task_restarts_total{{task="{task}"}} '
    return next((float(x.split()[-1]) for x in text.splitlines() if x.startswith(line)), 0.0)


def test_a_failing_broadcast_loop_is_started_again_and_healthz_tells_the_truth(show):
    broadcast = show.app[BROADCAST]
    encode = broadcast._encoder.encode
    failing = {"until": 0.0}

    def faulty(pcm, pts):
        if time.monotonic() < failing["until"]:
            raise RuntimeError("the encoder broke")
        return encode(pcm, pts)

    async def run():
        before = await health(show), await restarts(show, "broadcast")
        broadcast._encoder.encode = faulty
        failing["until"] = time.monotonic() + 2.5
        await asyncio.sleep(2.0)
        during = await health(show)
        sent = broadcast.frames_sent
        for _ in range(100):  # back within the restart's back-off
            await asyncio.sleep(0.1)
            if (await health(show))[0] == 200:
                break
        after = await health(show), broadcast.frames_sent - sent, await restarts(show, "broadcast")
        _, body = await say(show, "still on air")
        spoken = await until_final(show, body["utterance_id"], timeout=20)
        return before, during, after, spoken

    try:
        before, during, after, spoken = asyncio.run(run())
    finally:
        broadcast._encoder.encode = encode
    assert before[0][0] == 200 and before[0][1]["status"] == "ok"
    assert during[0] == 503 and during[1]["status"] == "off air", during
    assert "no broadcast frame" in during[1]["problems"][0]
    (status, body), frames, restarted = after
    assert status == 200 and body["problems"] == [], body
    assert frames > 0, "the broadcast did not come back"
    assert restarted > before[1]
    assert spoken["state"] == "done"


def test_a_synthesis_that_hangs_fails_its_utterance_and_the_next_is_spoken(show):
    tts = show.app[LIVE].models.tts

    async def run():
        tts.running.clear()  # Piper hangs in the middle of the next line
        _, hung = await say(show, "this one hangs")
        await asyncio.sleep(0.5)
        _, waiting = await say(show, "this one waits")
        meanwhile = await health(show)  # the show is on air: frames go out, silence
        failed = await until_final(show, hung["utterance_id"], timeout=DEADLINE_S + 10)
        tts.running.set()
        after = await until_final(show, waiting["utterance_id"], timeout=20)
        return meanwhile, failed, after

    try:
        meanwhile, failed, after = asyncio.run(run())
    finally:
        tts.running.set()
    assert meanwhile[0] == 200, meanwhile
    assert failed["state"] == "failed"
    assert f"did not answer within {DEADLINE_S:g} s" in failed["error"], failed
    assert after["state"] == "done"


def test_a_reply_whose_llm_raises_fails_its_utterance_and_the_next_is_spoken(show):
    llm = show.app[LIVE].models.llm
    stream = llm.stream

    def raising(*args, **kwargs):
        yield from itertools.islice(stream(*args, **kwargs), 3)  # a few words, then it breaks
        raise RuntimeError("the model broke")

    async def run():
        llm.stream = raising
        _, broken = await say(show, "answer this", mode="chat")
        failed = await until_final(show, broken["utterance_id"], timeout=15)
        llm.stream = stream
        _, nxt = await say(show, "and then this", mode="chat")
        return failed, await until_final(show, nxt["utterance_id"], timeout=20)

    try:
        failed, after = asyncio.run(run())
    finally:
        llm.stream = stream
    assert failed["state"] == "failed"
    assert "the model broke" in failed["error"], failed
    assert after["state"] == "done"


def test_an_interrupt_frees_the_stage_from_a_hung_synthesis(show):
    tts = show.app[LIVE].models.tts

    async def run():
        tts.running.clear()
        _, hung = await say(show, "hangs until interrupted")
        await asyncio.sleep(0.5)
        asked = time.monotonic()
        await request(show, "POST", "/api/v1/interrupt", {})
        stopped = await until_final(show, hung["utterance_id"], timeout=DEADLINE_S + 10)
        took = time.monotonic() - asked
        tts.running.set()
        _, nxt = await say(show, "and then this")
        return stopped, took, await until_final(show, nxt["utterance_id"], timeout=20)

    try:
        stopped, took, after = asyncio.run(run())
    finally:
        tts.running.set()
    assert stopped["state"] == "interrupted"
    assert took < DEADLINE_S + 2
    assert after["state"] == "done"


def test_a_periodic_look_that_fails_is_logged_and_the_next_comes_on_time(caplog):
    from server.tasks import every

    looks: list[int] = []

    async def look() -> None:
        looks.append(len(looks))
        if len(looks) == 2:
            raise RuntimeError("a figure could not be read")

    async def watch_a_while() -> None:
        task = asyncio.create_task(every(0.02, "test: a look", look))
        await asyncio.sleep(0.15)
        task.cancel()

    asyncio.run(watch_a_while())
    assert len(looks) >= 4  # on after the failure
    assert "test: a look failed" in caplog.text and "a figure could not be read" in caplog.text
