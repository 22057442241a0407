"""Autopilot: the show never falls silent longer than its gap, greets viewers who join, answers
chat by its policy after moderation, and a host always comes first. On a simulated clock with a
stand-in stage (unit), then on a live server with test-double models."""

from __future__ import annotations

import asyncio
import random

import pytest

from server.bench.inprocess import LiveServer, request, say, until_final
from server.config import AutopilotConfig, RoleConfig, load_config
from server.host.autopilot import SOURCE, Autopilot, moderate
from server.loading import Models
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM


class SimTime:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Line:
    def __init__(self, text, mode, cache, source, started) -> None:
        self.id = f"u{started:.1f}-{text[:8]}"
        self.text, self.mode, self.cache, self.source = text, mode, cache, source
        self.started = started


class StandInStage:
    """What the autopilot asks of the stage: whether it is quiet, submit, withdraw. Each line
    takes `speaks_s` to be spoken."""

    def __init__(self, sim: SimTime, speaks_s: float = 4.0) -> None:
        self.sim, self.speaks_s = sim, speaks_s
        self.lines: list[Line] = []
        self.waiting: list[Line] = []
        self.withdrawn: list[str] = []

    @property
    def quiet(self) -> bool:
        return not self.waiting and all(
            self.sim.t >= ln.started + self.speaks_s for ln in self.lines
        )

    def submit(self, text, character, mode, cache=False, source="host"):
        line = Line(text, mode, cache, source, self.sim.t)
        self.lines.append(line)
        return line

    def withdraw(self, source, why):
        gone = [ln.id for ln in self.waiting if ln.source == source]
        self.withdrawn += gone
        self.waiting = [ln for ln in self.waiting if ln.source != source]
        return gone


def pilot(cfg: AutopilotConfig | None = None, chat=None, viewers=lambda: 0):
    sim = SimTime()
    stage = StandInStage(sim)
    answered: dict[str, str] = {}
    messages = chat if chat is not None else []
    ap = Autopilot(
        cfg or AutopilotConfig(enabled=True),
        stage=lambda: stage,
        chat=lambda: messages,
        answered=answered.__setitem__,
        is_answered=answered.__contains__,
        viewers=viewers,
        role=RoleConfig(),
        clock=sim,
        rng=random.Random(3),
    )
    return ap, stage, sim, answered, messages


def run(ap: Autopilot, sim: SimTime, seconds: float, every: float = 0.5) -> None:
    for _ in range(int(seconds / every)):
        sim.t += every
        ap.tick()


def test_the_show_never_falls_silent_longer_than_its_gap():
    ap, stage, sim, _, _ = pilot(AutopilotConfig(enabled=True, max_silence_s=20))
    run(ap, sim, 600)
    starts = [ln.started for ln in stage.lines]
    assert len(starts) >= 20
    gaps = [b - (a + stage.speaks_s) for a, b in zip(starts, starts[1:], strict=False)]
    assert max(gaps) <= 20 + 0.5, gaps  # the gap, and one look of the autopilot
    assert all(ln.mode == "chat" and ln.source == SOURCE for ln in stage.lines)


def test_off_it_does_nothing_and_switched_on_it_speaks():
    ap, stage, sim, _, _ = pilot(AutopilotConfig(enabled=False, max_silence_s=5))
    run(ap, sim, 60)
    assert stage.lines == []
    ap.switch(True)
    run(ap, sim, 6)
    assert len(stage.lines) == 1


def test_viewers_who_join_are_greeted_with_a_stock_line_from_the_cache():
    count = {"n": 0}
    cfg = AutopilotConfig(enabled=True, max_silence_s=1000)
    ap, stage, sim, _, _ = pilot(cfg, viewers=lambda: count["n"])
    run(ap, sim, 10)
    assert stage.lines == []  # nobody came, and the gap is long
    count["n"] = 3
    run(ap, sim, 10)
    (greeting,) = stage.lines
    assert greeting.text in cfg.greetings and greeting.mode == "verbatim" and greeting.cache
    count["n"] = 2  # one left: no greeting for that
    run(ap, sim, 10)
    count["n"] = 3  # one came back
    run(ap, sim, 10)
    assert len(stage.lines) == 2


def msgs(*texts: str) -> list[dict]:
    return [{"id": f"c{n}", "from": f"viewer-{n}", "text": t} for n, t in enumerate(texts)]


def test_chat_is_answered_by_the_policy_after_moderation():
    cfg = AutopilotConfig(enabled=True, max_silence_s=1000, blocked_words=["Spoiler"])
    chat = msgs("what a night", "SPOILER: it ends well", "x" * 250, "hello nova?")
    ap, stage, sim, answered, _ = pilot(cfg, chat=chat)
    run(ap, sim, 30)
    # when idle: the oldest it may answer first, then the next; the rest refused, shown
    assert list(answered) == ["c0", "c3"]
    assert "viewer-0 writes in the chat: what a night" == stage.lines[0].text
    refused = {r.chat_id: r.why for r in ap.refused}
    assert refused == {"c1": "blocked word: spoiler", "c2": "longer than 200 characters"}

    chat = msgs("hi", "nice music", "Nova, what is your favourite star?", "ok")
    ap, stage, sim, answered, _ = pilot(
        AutopilotConfig(enabled=True, max_silence_s=1000, answer_chat="by_score"), chat=chat
    )
    run(ap, sim, 1)
    assert list(answered) == ["c2"]  # the question that names the character

    ap, stage, sim, answered, messages = pilot(
        AutopilotConfig(enabled=True, max_silence_s=1000, answer_chat="every_n", answer_every=3),
        chat=[],
    )
    messages += msgs("one", "two")
    run(ap, sim, 10)
    assert answered == {}  # two messages: not yet
    messages.append({"id": "c9", "from": "viewer-9", "text": "three"})
    run(ap, sim, 10)
    assert list(answered) == ["c9"]  # the third: the latest is answered


def test_moderation_reads_words_not_letters():
    cfg = AutopilotConfig(blocked_words=["ass"])
    assert moderate("a classic night", cfg) is None
    assert moderate("what an ASS", cfg) == "blocked word: ass"


def test_a_host_always_comes_first():
    ap, stage, sim, _, _ = pilot(AutopilotConfig(enabled=True, max_silence_s=5, host_grace_s=30))
    stage.waiting = [Line("queued by the autopilot", "chat", False, SOURCE, 0.0)]
    stage.waiting.append(Line("the host's own", "verbatim", False, "host", 0.0))
    ap.host_acted()
    assert len(stage.withdrawn) == 1 and [ln.source for ln in stage.waiting] == ["host"]
    stage.waiting = []
    run(ap, sim, 29)
    assert stage.lines == []  # quiet for the host's grace, however long the silence
    run(ap, sim, 2)
    assert len(stage.lines) == 1


@pytest.fixture(scope="module")
def show():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.autopilot.max_silence_s = 0.5
    cfg.autopilot.host_grace_s = 1.0
    cfg.autopilot.blocked_words = ["boring"]
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(word_s=0.05, gap_s=0.02), None)).start()
    yield srv
    srv.stop()


def test_on_a_live_server_the_host_switches_it_and_it_fills_the_silence(show):
    async def scenario() -> tuple[dict, dict, list[dict]]:
        refused = await request(show, "POST", "/api/v1/autopilot", {"enabled": "yes"})
        assert refused[0] == 400 and "true or false" in refused[1]["error"]
        unauthorised = await request(show, "POST", "/api/v1/autopilot", {"enabled": True}, None)
        assert unauthorised[0] == 401
        status, state = await request(show, "POST", "/api/v1/autopilot", {"enabled": True})
        assert status == 200 and state["enabled"] is True

        async def spoken_by_autopilot() -> list[dict]:
            snap = (await request(show, "GET", "/api/v1/utterances"))[1]
            return [u for u in snap["recent"] if u["source"] == SOURCE]

        found: list[dict] = []

        async def poll() -> None:
            for _ in range(200):
                found[:] = await spoken_by_autopilot()
                if any(u["state"] == "done" for u in found):
                    return
                await asyncio.sleep(0.05)

        await poll()
        # the host speaks: the autopilot's waiting lines step aside, the host's is spoken
        status, body = await say(show, "The host has the floor.")
        host_line = await until_final(show, body["utterance_id"])
        await request(show, "POST", "/api/v1/autopilot", {"enabled": False})
        return host_line, (await request(show, "GET", "/api/v1/show"))[1], found

    host_line, desk, found = show.call(scenario(), 60)
    assert any(u["state"] == "done" and u["mode"] == "chat" for u in found), found
    assert host_line["state"] == "done" and host_line["source"] == "host"
    assert desk["autopilot"]["enabled"] is False and desk["autopilot"]["last"] == "topic"


def test_on_a_live_server_it_answers_chat_and_refuses_what_moderation_stops(show):
    import socketio

    async def scenario() -> dict:
        viewer = socketio.AsyncClient()
        await viewer.connect(show.url, transports=["websocket"])
        for text in ("this is boring", "what are you listening to?"):
            assert (await viewer.call("chat", {"text": text}))["ok"]
        await viewer.disconnect()
        await request(show, "POST", "/api/v1/autopilot", {"enabled": True})
        desk: dict = {}

        async def answered() -> bool:
            desk.update((await request(show, "GET", "/api/v1/show"))[1])
            return any(m["answered"] for m in desk["chat"])

        for _ in range(200):
            if await answered():
                break
            await asyncio.sleep(0.05)
        await request(show, "POST", "/api/v1/autopilot", {"enabled": False})
        return desk

    desk = show.call(scenario(), 60)
    by_text = {m["text"]: m for m in desk["chat"]}
    assert by_text["what are you listening to?"]["answered"]
    assert not by_text["this is boring"]["answered"]
    (refusal,) = desk["autopilot"]["refused"]
    assert refusal["text"] == "this is boring" and refusal["why"] == "blocked word: boring"
