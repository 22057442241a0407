"""Scenes: lines of several roles in the script's order, one after another unless a line
asks to overlap (then mixed), each role's mouth on its own speech; conversations whose turns
answer the turn before; a role interrupted while the others go on."""

from __future__ import annotations

import asyncio

import pytest

from server.config import RoleConfig
from server.show.resuming import resume
from server.show.scenes import TURNS_HEARD, Limits, SceneError, scene_lines
from server.show.utterances import Utterance
from tests.fakes import WordsLLM
from tests.unit.show.test_stage import Show, until_final

BACKWARDS = {"role": "nova", "text": "b", "overlap_ms": -1}
CAST = [RoleConfig(name="nova"), RoleConfig(name="orion"), RoleConfig(name="lyra", weight=9.0)]


def cast_show(reply: str = "Hello night owls, welcome back to the show.") -> Show:
    show = Show(reply)
    show.cfg.roles = list(CAST)
    return show


def limits(show: Show) -> Limits:
    return Limits(show.cfg.stage.max_text_chars, show.cfg.role)


def spans_of(show: Show, utt: Utterance) -> tuple[int, int]:
    phrases = show.of("utterance", utt)
    return phrases[0]["start_sample"], phrases[-1]["end_sample"]


def voiced_visemes(show: Show, utt: Utterance) -> list[dict]:
    return [f for v in show.of("visemes", utt) for f in v["frames"] if f["viseme"] != "sil"]


def test_a_scripts_lines_follow_each_other_in_order_and_one_overlaps_where_asked():
    show = cast_show()
    script = {
        "lines": [
            {"role": "nova", "text": "Good evening. Tonight the moon is full."},
            {"role": "orion", "text": "And bright, too.", "overlap_ms": 400},
            {"role": "lyra", "text": "Look at it shine."},  # the heaviest role comes last
            {"role": "nova", "text": "Back to you."},
        ]
    }

    async def run() -> list[Utterance]:
        async with show as stage:
            lines = scene_lines(script, limits(show))
            stage.submit_all(lines)
            await until_final(*lines)
            return lines

    lines = asyncio.run(run())
    assert [u.state for u in lines] == ["done"] * 4
    spans = [spans_of(show, u) for u in lines]
    assert [a for a, _ in spans] == sorted(a for a, _ in spans), "said out of the script's order"
    # the overlap: orion comes in 400 ms before nova's end; the others wait for the one before
    assert spans[1][0] == spans[0][1] - show.clock.samples(0.4), spans
    assert spans[2][0] >= spans[1][1] and spans[3][0] >= spans[2][1], spans
    # each mouth moves only over its own speech, and sound was sent where it opens
    for utt, (start, end) in zip(lines, spans, strict=True):
        frames = voiced_visemes(show, utt)
        assert frames and all(start <= f["sample"] < end for f in frames), utt.role
        assert show.voiced(frames[0]["sample"], frames[0]["sample"] + 960)


def test_interrupting_one_role_leaves_the_others_speaking():
    show = cast_show()
    long_line = " ".join(f"Word{i}." for i in range(40))

    async def run() -> tuple[Utterance, Utterance, Utterance]:
        async with show as stage:
            nova, orion, after = scene_lines(
                {
                    "lines": [
                        {"role": "nova", "text": long_line},
                        {"role": "orion", "text": long_line, "overlap_ms": 3000},
                        {"role": "nova", "text": "Never said."},
                    ]
                },
                limits(show),
            )
            stage.submit_all([nova, orion, after])
            while orion.first_audio_at is None:
                await asyncio.sleep(0.01)
            await stage.interrupt("nova")
            await until_final(nova, orion, after, timeout=40)
            return nova, orion, after

    nova, orion, after = asyncio.run(run())
    assert (nova.state, after.state) == ("interrupted", "interrupted")
    assert orion.state == "done", orion.error
    start, end = spans_of(show, orion)
    assert show.voiced(end - 4800, end), "orion's end was not heard"


class Listening(WordsLLM):
    """Says its words, and keeps every prompt it was asked."""

    def __init__(self) -> None:
        super().__init__("Stars are far away.")
        self.asked: list[str] = []

    def chat_messages(self, persona: str, prompt: str):
        self.asked.append(prompt)
        return super().chat_messages(persona, prompt)


def test_a_conversations_turns_answer_the_turns_before_in_rotation():
    show = cast_show()
    show.llm = listening = Listening()

    async def run() -> list[Utterance]:
        async with show as stage:
            spec = {"roles": ["nova", "orion"], "turns": 6, "topic": "the moon tonight"}
            turns = scene_lines({"conversation": spec}, limits(show))
            stage.submit_all(turns)
            await until_final(*turns)
            return turns

    turns = asyncio.run(run())
    assert [u.role for u in turns] == ["nova", "orion"] * 3
    assert [u.state for u in turns] == ["done"] * 6
    first, *answers = listening.asked
    assert first == "the moon tonight"
    for n, asked in enumerate(answers, start=1):
        *earlier, last = turns[max(0, n - TURNS_HEARD) : n]
        assert asked.startswith("The topic: the moon tonight\n"), asked
        # the turn it answers, and the ones before that, as they were spoken
        assert f'{last.role.capitalize()} just said: "{last.spoken_text}"' in asked, asked
        for said in earlier:
            assert f'{said.role.capitalize()} said: "{said.spoken_text}"' in asked, asked
        assert asked.count(" said: ") == len(earlier) + 1, asked  # no more than TURNS_HEARD


def test_a_conversations_turn_after_a_restart_answers_the_turns_the_logbook_kept():
    show = cast_show()
    show.llm = listening = Listening()
    # what the logbook kept: two turns finished before the restart, the third still queued
    finished = [
        {"id": "t1", "role": "nova", "spoken_text": "The moon is full.", "reply_to": None},
        {"id": "t2", "role": "orion", "spoken_text": "And bright.", "reply_to": "t1"},
    ]
    place = {"after": "t2", "overlap_ms": 0, "reply_to": "t2"}
    row = {"id": "t3", "role": "nova", "mode": "chat", "text": "the moon tonight"}
    row |= {"state": "queued", "accepted_ms": 0, "restarts": 0, "scene": place}

    async def run() -> Utterance:
        async with show as stage:
            resume(stage, [row], finished, show.cfg.role)
            turn = next(u for u in stage.history if u.id == "t3")
            await until_final(turn)
            return turn

    turn = asyncio.run(run())
    assert turn.state == "done", turn.error
    assert listening.asked == [
        "The topic: the moon tonight\n"
        'Nova said: "The moon is full."\n'
        'Orion just said: "And bright."\n'
        "Answer Orion in one or two short sentences."
    ]


def test_a_scene_is_taken_whole_or_not_at_all():
    show = cast_show()
    show.cfg.stage.queue_size = 3

    async def run() -> tuple[int, str]:
        async with show as stage:
            lines = [{"role": "nova", "text": f"Line {i}."} for i in range(4)]
            try:
                stage.submit_all(scene_lines({"lines": lines}, limits(show)))
            except Exception as exc:  # QueueFull
                return len(stage.queue), str(exc)
            return len(stage.queue), ""

    waiting, why = asyncio.run(run())
    assert waiting == 0 and "full" in why


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({}, 400, "one of the two"),
        ({"lines": [], "conversation": {}}, 400, "one of the two"),
        ({"lines": []}, 400, "not empty"),
        ({"lines": "hi"}, 400, "list"),
        ({"lines": [{"role": "nova", "text": "hi"}] * 33}, 413, "at most 32"),
        ({"lines": ["hi"]}, 400, "line 1 must be an object"),
        ({"lines": [{"role": "nobody", "text": "hi"}]}, 404, "nobody"),
        ({"lines": [{"role": "nova", "text": " "}]}, 400, 'line 1: "text" is empty'),
        ({"lines": [{"role": "nova", "text": "x" * 2001}]}, 413, "2000"),
        ({"lines": [{"role": "nova", "text": "hi", "mode": "sing"}]}, 400, "mode"),
        ({"lines": [{"role": "nova", "text": "hi", "overlap_ms": 10}]}, 400, "line before"),
        ({"lines": [{"role": "nova", "text": "a"}, BACKWARDS]}, 400, 'line 2: "overlap_ms"'),
        ({"lines": [{"role": "nova", "text": "hi", "volume": 2}]}, 400, "volume"),
        ({"conversation": {"roles": ["nova"], "turns": 2, "topic": "x"}}, 400, "two roles"),
        ({"conversation": {"roles": ["nova", "orion"], "turns": 0, "topic": "x"}}, 400, "turns"),
        ({"conversation": {"roles": ["nova", "orion"], "turns": True, "topic": "x"}}, 400, "turns"),
        ({"conversation": {"roles": ["nova", "orion"], "turns": 2}}, 400, "text"),
        ({"conversation": {"roles": ["nova", "ghost"], "turns": 2, "topic": "x"}}, 404, "ghost"),
    ],
)
def test_a_bad_scene_is_refused_with_why(body, status, says):
    show = cast_show()
    with pytest.raises(SceneError) as refused:
        scene_lines(body, limits(show))
    assert refused.value.status == status and says in str(refused.value), str(refused.value)
