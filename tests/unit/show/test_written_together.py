"""Chat prompts of one persona waiting together are answered in one generation, and each is
spoken with its own reply; a generation cut short leaves theirs to be asked again."""

from __future__ import annotations

import asyncio
import dataclasses

from server.show.utterances import Utterance
from tests.fakes import WordsLLM
from tests.unit.show.test_stage import Show, until_final


class Answering(WordsLLM):
    """Answers each prompt with a reply of its own; "the moon" at length (about 4 s)."""

    def answer(self, prompt: str) -> str:
        return " ".join(["The moon"] * 200) if prompt == "the moon" else f"About {prompt}, yes."


def show_with_batches() -> Show:
    show = Show()
    show.llm = Answering(batches=True)
    return show


def spoken(show: Show, utt: Utterance) -> str:
    return " ".join(p["text"] for p in show.of("utterance", utt))


def test_waiting_prompts_of_one_persona_are_written_in_one_generation_and_each_is_spoken():
    show = show_with_batches()
    nova, orion = show.cfg.roles[0], show.cfg.roles[1]

    async def run() -> list[Utterance]:
        async with show as stage:
            show.tts.running.clear()  # a line holds the stage while the prompts come in
            held = stage.submit("Hold on.", nova, "verbatim")
            asked = [
                stage.submit(text, role, "chat")
                for text, role in [("the stars", nova), ("the sea", orion), ("the sky", nova)]
            ]
            asked.append(stage.submit("the dawn", nova, "chat"))
            show.tts.running.set()
            await until_final(held, *asked)
            return asked

    stars, sea, sky, dawn = asyncio.run(run())
    assert [u.state for u in (stars, sea, sky, dawn)] == ["done"] * 4
    # Nova's three prompts in one generation, Orion's (another persona) alone
    assert sorted(show.llm.generations) == [["the sea"], ["the stars", "the sky", "the dawn"]]
    for utt in (stars, sea, sky, dawn):
        assert spoken(show, utt) == f"About {utt.text}, yes."
    assert [u.written is not None for u in (stars, sea, sky, dawn)] == [False, False, True, True]


def test_replies_of_a_generation_cut_short_are_asked_again_and_spoken():
    show = show_with_batches()
    nova = show.cfg.roles[0]
    # another role with Nova's persona: its prompt goes beside hers, and outlives her interrupt
    echo = dataclasses.replace(nova, name="echo")
    show.cfg.roles.append(echo)

    async def run() -> tuple[Utterance, Utterance]:
        async with show as stage:
            show.tts.running.clear()
            held = stage.submit("Hold on.", nova, "verbatim")
            moon = stage.submit("the moon", nova, "chat")
            stars = stage.submit("the stars", echo, "chat")
            show.tts.running.set()
            while stage.current is not moon:
                await asyncio.sleep(0.01)
            await stage.interrupt(nova.name)  # while the moon's long reply is written
            await until_final(held, moon, stars)
            return moon, stars

    moon, stars = asyncio.run(run())
    assert moon.state == "interrupted" and stars.state == "done"
    assert show.llm.generations == [["the moon", "the stars"], ["the stars"]]
    assert stars.written is None and spoken(show, stars) == "About the stars, yes."
