"""Drills: a host arms a fault, the next model call fails that way, and the show goes on; with
drills off (the default) nobody can."""

from __future__ import annotations

import asyncio

import pytest

from server.bench.inprocess import LiveServer, request, say, until_final
from server.config import load_config
from server.loading import Models
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM

DEADLINE_S = 1.0


def _server(drills: bool) -> LiveServer:
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.drills = drills
    cfg.models.tts_deadline_s = DEADLINE_S
    return LiveServer(cfg, Models(WordsLLM(), ToneTTS(), None)).start()


@pytest.fixture(scope="module")
def drilled():
    srv = _server(drills=True)
    yield srv
    srv.stop()


def test_drills_are_off_unless_the_setting_is_on():
    srv = _server(drills=False)
    try:
        status, body = asyncio.run(request(srv, "POST", "/api/v1/drill", {"fault": "tts_raises"}))
        anonymous = asyncio.run(
            request(srv, "POST", "/api/v1/drill", {"fault": "tts_raises"}, token=None)
        )
    finally:
        srv.stop()
    assert status == 404 and "drills are off" in body["error"], body
    assert anonymous[0] == 401


def test_an_unknown_fault_is_refused_with_the_ones_there_are(drilled):
    status, body = asyncio.run(request(drilled, "POST", "/api/v1/drill", {"fault": "fire"}))
    assert status == 400 and "tts_raises" in body["error"], body


@pytest.mark.parametrize(
    ("fault", "mode", "error"),
    [
        ("tts_raises", "verbatim", "drill: the synthesis raised"),
        ("tts_hangs", "verbatim", f"did not answer within {DEADLINE_S:g} s"),
        ("llm_raises", "chat", "drill: the LLM raised"),
    ],
)
def test_each_fault_fails_one_utterance_and_the_next_is_spoken(drilled, fault, mode, error):
    async def run():
        status, armed = await request(drilled, "POST", "/api/v1/drill", {"fault": fault})
        _, struck = await say(drilled, "this one meets the fault", mode=mode)
        _, after = await say(drilled, "and this one is spoken", mode=mode)
        failed = await until_final(drilled, struck["utterance_id"], timeout=DEADLINE_S + 15)
        spoken = await until_final(drilled, after["utterance_id"], timeout=20)
        return status, armed, failed, spoken

    status, armed, failed, spoken = asyncio.run(run())
    assert status == 202 and armed["fault"] == fault and armed["armed"][fault] >= 1, armed
    assert failed["state"] == "failed" and error in failed["error"], failed
    assert spoken["state"] == "done", spoken
