"""The night on a live server (test-double models): the host pins a fallback level, the pages hear
it in the `state` event, the panel reports it, and a chat line at level 1 is condensed and
answered on a tighter token budget; the next utterance, not the one speaking, takes a level."""

from __future__ import annotations

import asyncio

import pytest
import socketio

from server.bench.inprocess import LiveServer, request, say, until_final
from server.config import load_config
from server.loading import Models
from server.show.condensing import condense
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM
from tests.harness import page_text

LONG_PROMPT = (
    "I have been watching since midnight and the music has been lovely all along. "
    "My cat is asleep on the keyboard and the tea went cold an hour ago. "
    "Outside it is raining and the street lights flicker now and then. "
    "What is the brightest star you can see from a city at night?"
)


def test_condensing_keeps_the_question_and_whole_sentences_within_the_words():
    short, kept = condense(LONG_PROMPT, 30)
    assert "What is the brightest star" in short and len(short.split()) <= 30
    assert short.startswith("I have been watching")  # the opening, in its place
    assert kept == pytest.approx(len(short.split()) / len(LONG_PROMPT.split()))
    assert condense("Hello there.", 30) == ("Hello there.", 1.0)
    one = "word " * 50
    assert condense(one, 10) == (" ".join(["word"] * 10), 0.2)


class RecordingLLM(WordsLLM):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int]] = []

    def stream(self, messages, max_new_tokens=64, **kw):
        self.calls.append((messages[-1]["content"], max_new_tokens))
        return super().stream(messages, max_new_tokens, **kw)


class RecordingTTS(ToneTTS):
    """A voice that notes what it spoke."""

    def __init__(self) -> None:
        super().__init__(word_s=0.05, gap_s=0.02)
        self.spoken: list[str] = []

    def speak(self, text, style=None, urgent=False):
        self.spoken.append(text)
        return super().speak(text, style, urgent)


@pytest.fixture(scope="module")
def night_show():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.night.window = ["12:00", "12:01"]  # never now, in practice: the host drives the level
    llm = RecordingLLM()
    voices = RecordingTTS(), RecordingTTS()  # in Piper's place, and the light one
    srv = LiveServer(cfg, Models(llm, voices[0], None, light=voices[1])).start()
    yield srv, llm, voices
    srv.stop()


def test_the_host_pins_a_level_the_pages_hear_it_and_level_one_compresses(night_show):
    srv, llm, _ = night_show

    async def scenario() -> tuple[list[dict], dict, dict, list]:
        heard: list[dict] = []
        viewer = socketio.AsyncClient()
        viewer.on("state", lambda data: heard.append(data))
        await viewer.connect(srv.url, transports=["websocket"])
        assert (await request(srv, "POST", "/api/v1/fallback", {"level": 5}))[0] == 400
        assert (await request(srv, "POST", "/api/v1/fallback", {"level": True}))[0] == 400
        assert (await request(srv, "POST", "/api/v1/fallback", {"level": 1}, None))[0] == 401
        status, ladder = await request(srv, "POST", "/api/v1/fallback", {"level": 1})
        assert status == 200 and ladder["level"] == 1 and ladder["pinned"]
        for _ in range(100):
            if any(s["fallback_level"] == 1 for s in heard):
                break
            await asyncio.sleep(0.02)
        _, body = await say(srv, LONG_PROMPT, mode="chat")
        answered = await until_final(srv, body["utterance_id"])
        health = (await request(srv, "GET", "/api/v1/show"))[1]["health"]
        await request(srv, "POST", "/api/v1/fallback", {"level": None})
        await viewer.disconnect()
        metrics = await page_text(srv, "/metrics")
        return heard, answered, health, [metrics]

    heard, answered, health, (metrics,) = srv.call(scenario(), 60)
    assert heard[0] == {"fallback_level": 0, "night": False}  # on connect
    assert {"fallback_level": 1, "night": False} in heard
    assert health["fallback"]["level"] == 1 and health["fallback"]["pinned"]
    assert health["fallback"]["reason"] == "pinned by the host"
    assert answered["state"] == "done" and answered["level"] == 1
    prompt, budget = llm.calls[-1]
    assert "brightest star" in prompt and len(prompt.split()) <= 30 < len(LONG_PROMPT.split())
    assert budget == 24
    assert "allnighter_compression_ratio_count 1.0" in metrics
    assert 'allnighter_fallback_switches_total{level="1"} 1.0' in metrics


def test_a_level_changes_between_utterances_never_inside_one(night_show):
    srv, _, (normal, light) = night_show

    async def scenario() -> tuple[dict, dict]:
        _, first = await say(srv, "one two three four five six seven eight nine ten")
        for _ in range(200):  # it is being spoken
            snap = (await request(srv, "GET", "/api/v1/utterances"))[1]
            if snap["current"] and snap["current"]["id"] == first["utterance_id"]:
                break
            await asyncio.sleep(0.01)
        await request(srv, "POST", "/api/v1/fallback", {"level": 2})
        _, second = await say(srv, "and the next line")
        done = [await until_final(srv, u["utterance_id"]) for u in (first, second)]
        await request(srv, "POST", "/api/v1/fallback", {"level": None})
        return done[0], done[1]

    first, second = srv.call(scenario(), 60)
    assert (first["state"], first["level"]) == ("done", 0)
    assert (second["state"], second["level"]) == ("done", 2)
    # the first line all in the show's voice, the next in the light one (level 2)
    assert any("ten" in text for text in normal.spoken)
    assert not any("ten" in text for text in light.spoken)
    assert "and the next line" in " ".join(light.spoken)
    assert "and the next line" not in " ".join(normal.spoken)
