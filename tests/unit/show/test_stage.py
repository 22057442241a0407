"""The show's pipeline driven alone, with test doubles and no sockets: what goes in (lines,
prompts, an interrupt) against what would reach the pages (events) and the broadcast (sound)."""

from __future__ import annotations

import asyncio

import numpy as np

from server.config import load_config
from server.media.broadcast import Broadcast, EmittedFrame
from server.media.mediaclock import MediaClock
from server.media.timeline import SpeechTimeline
from server.metrics import Metrics
from server.show.assembly import assemble
from server.show.stage import Stage
from server.show.utterances import FINAL_STATES, Utterance
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM


class Show:
    """A stage over a real broadcast clock; every event it emits and every frame it sends."""

    def __init__(self, reply: str = "Hello night owls, welcome back to the show.") -> None:
        self.cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
        self.clock, self.timeline = MediaClock(), SpeechTimeline()
        self.broadcast = Broadcast(self.clock, self.timeline)
        self.events: list[tuple[str, dict]] = []
        self.frames: list[EmittedFrame] = []
        self.stage: Stage | None = None
        self.llm, self.tts = WordsLLM(reply), ToneTTS(word_s=0.06, gap_s=0.02)

    async def emit(self, event: str, data: dict) -> None:
        self.events.append((event, data))

    async def __aenter__(self) -> Stage:
        self.broadcast.observe(self.frames.append)
        self.stage = assemble(
            self.cfg, self.clock, self.timeline, self.broadcast, Metrics(), self.emit,
            self.llm, self.tts,
        )  # fmt: skip
        self.broadcast.start()
        self.stage.start()
        return self.stage

    async def __aexit__(self, *exc: object) -> None:
        assert self.stage is not None
        await self.stage.stop()
        await self.broadcast.stop()

    def of(self, kind: str, utt: Utterance) -> list[dict]:
        key = "id" if kind == "utterance" else "utterance_id"
        return [d for e, d in self.events if e == kind and d[key] == utt.id]

    def voiced(self, start: int, end: int) -> bool:
        """Sound was sent somewhere in [start, end)."""
        return any(
            f.start < end and f.start + f.samples > start and np.abs(f.pcm).max() > 1000
            for f in self.frames
        )


async def until_final(*utts: Utterance, timeout: float = 20.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if all(u.state in FINAL_STATES for u in utts):
            return
        await asyncio.sleep(0.02)
    raise AssertionError([u.state for u in utts])


def test_a_line_is_phrased_spoken_placed_and_announced_in_order():
    show = Show()

    async def run() -> Utterance:
        async with show as stage:
            utt = stage.submit(
                "Good evening. Tonight we talk about stars.", show.cfg.roles[0], "verbatim"
            )
            await until_final(utt)
            return utt

    utt = asyncio.run(run())
    assert utt.state == "done" and utt.first_audio_at is not None
    phrases = show.of("utterance", utt)
    # the opening ("Good evening.") on its own first, then the rest: the line, whole, in order
    assert " ".join(p["text"] for p in phrases) == "Good evening. Tonight we talk about stars."
    spans = [(p["start_sample"], p["end_sample"]) for p in phrases]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), spans
    assert utt.end_sample == spans[-1][1]
    # each phrase's visemes lie on its own span, and the mouth opens where sound was sent
    for p, v in zip(phrases, show.of("visemes", utt), strict=True):
        frames = v["frames"]
        assert p["start_sample"] <= frames[0]["sample"] < p["end_sample"]
        open_at = [f["sample"] for f in frames if f["viseme"] != "sil"]
        assert open_at and show.voiced(open_at[0], open_at[0] + 960)
        assert all(p["start_sample"] <= o < p["end_sample"] for o in v["onsets"])
    # the line's sound starts after silence: an onset the pages time the mouth by
    assert show.of("visemes", utt)[0]["onsets"]
    # every event carries its fused time; nothing was kept once it had played
    assert all("start_ms" in d for _, d in show.events if _ in ("utterance", "visemes"))
    assert len(show.stage.pipeline.announcer) == 0


def test_a_prompt_is_spoken_as_the_models_reply():
    show = Show(reply="Stars are far away.")

    async def run() -> Utterance:
        async with show as stage:
            utt = stage.submit("Tell me about stars", show.cfg.roles[0], "chat")
            await until_final(utt)
            return utt

    utt = asyncio.run(run())
    assert utt.state == "done" and utt.tokens == 4
    assert " ".join(p["text"] for p in show.of("utterance", utt)) == "Stars are far away."
    assert utt.cross_modal.audio_ms is not None and utt.cross_modal.text_ms is not None


def test_an_interrupt_cuts_the_speech_the_events_and_the_queue():
    show = Show()
    long_line = " ".join(f"Word{i}." for i in range(30))

    async def run() -> tuple[Utterance, Utterance, int]:
        async with show as stage:
            first = stage.submit(long_line, show.cfg.roles[0], "verbatim")
            queued = stage.submit("Never said.", show.cfg.roles[0], "verbatim")
            while first.first_audio_at is None:
                await asyncio.sleep(0.01)
            at = await stage.interrupt(None)
            await until_final(first, queued)
            upcoming = stage.upcoming()
            assert upcoming == [], upcoming  # a viewer joining now is replayed nothing
            return first, queued, at

    first, queued, at = asyncio.run(run())
    assert first.state == "interrupted" and queued.state == "interrupted"
    assert not show.of("utterance", queued)
    interrupt = next(d for e, d in show.events if e == "interrupt")
    assert interrupt["at_sample"] == at and set(interrupt["utterances"]) >= {first.id, queued.id}
    assert not show.voiced(at + 960, at + 48_000)  # nothing sounded after the cut
