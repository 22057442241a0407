"""An utterance's opening: where its first phrase is cut, and how the two syntheses meet."""

from __future__ import annotations

import asyncio

import numpy as np

from models.protocols import SpeechChunk
from server.show.onsets import sound_onsets
from server.show.opening import opening_words, split_at_word, spoken

SR = 22_050


def test_the_opening_ends_at_a_pause_or_before_a_function_word_and_leaves_two_words():
    cut = {
        "Good evening, night owls.": "Good evening,",
        "In, and out. Good.": "In,",
        "Welcome back to the show that never sleeps.": "Welcome back",
        "Let me read a few of your messages.": "Let me read",
        "The moon is up and so are we.": "The moon is up",
        "Comets are mostly ice and dust.": "Comets are mostly ice",
        "It is quiet out there, isn't it?": "It is quiet",  # six words, no better place
        "Three hours until sunrise.": "Three hours",
    }
    for phrase, opening in cut.items():
        k = opening_words(phrase)
        assert k is not None and " ".join(phrase.split()[:k]) == opening, (phrase, k)
    # short sentences are spoken whole, and the rest is never a lone word
    for whole in ["Yes.", "But the sea remembered.", "Stay with me.", "Comets are ice and dust."]:
        assert opening_words(whole) in (None, 3) and opening_words(whole) != len(whole.split())
    assert opening_words("But the sea remembered.") is None
    assert opening_words("Grab a warm drink. And settle in.") is None  # four words, one sentence


def chunk(text: str, word_ms: float = 200, gap_ms: float = 30) -> SpeechChunk:
    """A chunk in Piper's shape: a lead-in, each word a tone, a word space between words."""
    n_word, n_gap = int(SR * word_ms / 1000), int(SR * gap_ms / 1000)
    t = np.arange(n_word) / SR
    parts, phonemes = [np.zeros(n_gap, np.int16)], [("^", n_gap)]
    for i, word in enumerate(text.split()):
        if i:
            parts.append(np.full(n_gap, 3000, np.int16))  # running speech: no silence
            phonemes.append((" ", n_gap))
        parts.append((np.sin(2 * np.pi * 220 * t) * 8000 + 3000).astype(np.int16))
        phonemes.append((word[0], n_word))
        if word.endswith(","):
            parts.append(np.zeros(3 * n_gap, np.int16))  # a pause
            phonemes.append((",", 3 * n_gap))
    parts.append(np.zeros(n_gap, np.int16))
    phonemes.append(("$", n_gap))
    return SpeechChunk(np.concatenate(parts), SR, tuple(phonemes), text)


def test_a_chunk_is_cut_at_its_word_space_with_fades_where_the_halves_meet():
    c = chunk("Welcome back to the show.")
    head, tail = split_at_word(c, 2)
    assert head.text == "Welcome back" and tail.text == "to the show."
    assert len(head.audio) + len(tail.audio) == len(c.audio)
    assert sum(n for _, n in head.phonemes) == len(head.audio)
    assert sum(n for _, n in tail.phonemes) == len(tail.audio)
    # each half has half the passage from "back" to "to"
    space = int(SR * 0.030)
    assert head.phonemes[-2:] == (("b", int(SR * 0.2)), (" ", space // 2))
    assert tail.phonemes[0] == (" ", space - space // 2) and tail.phonemes[1][0] == "t"
    # the fades: silent where they meet, unchanged a fade away from it
    assert head.audio[-1] == 0 and tail.audio[0] == 0
    fade = int(SR * 0.002)
    assert np.array_equal(head.audio[: -fade - 1], c.audio[: len(head.audio) - fade - 1])
    assert split_at_word(c, 9) is None  # fewer words than that


def test_a_pause_after_the_opening_is_the_rests_whole():
    c = chunk("Good evening, night owls.")
    head, tail = split_at_word(c, 2)
    assert [p for p, _ in head.phonemes] == ["^", "G", " ", "e"]
    assert [p for p, _ in tail.phonemes][:3] == [",", " ", "n"]
    assert head.text == "Good evening," and tail.text == "night owls."


def collect(phrase: str, speak, opens: bool = True) -> tuple[list[tuple[str, object]], list[str]]:
    asked: list[str] = []

    async def synthesize(text: str, urgent: bool):
        asked.append(text if not urgent else f"urgent: {text}")
        for c in speak(text):
            yield c

    async def run():
        return [(text, chunk) async for text, chunk, _ in spoken(phrase, synthesize, opens)]

    return asyncio.run(run()), asked


def test_an_opening_is_spoken_from_its_own_synthesis_and_the_rest_from_the_whole_phrase():
    phrase = "Welcome back to the show. It never sleeps."
    got, asked = collect(phrase, lambda text: [chunk(s) for s in _sentences(text)])
    assert asked == ["urgent: Welcome back to", phrase]  # first audio waits for the opening
    assert [text for text, _ in got] == ["Welcome back", "to the show. It never sleeps."] + [
        "to the show. It never sleeps."
    ]
    head, tail, second = (c for _, c in got)
    assert head.text == "Welcome back" and tail.text == "to the show."
    assert second.text == "It never sleeps."
    # the opening and the rest of its sentence add up to the whole sentence's speech after it
    whole = chunk("Welcome back to the show.")
    assert len(tail.audio) == len(whole.audio) - len(split_at_word(whole, 2)[0].audio)


def test_without_a_place_to_cut_or_words_to_find_the_phrase_is_spoken_whole():
    got, asked = collect("Yes.", lambda text: [chunk(text)])
    assert asked == ["urgent: Yes."] and [t for t, _ in got] == ["Yes."]
    got, asked = collect("Welcome back to the show.", lambda text: [chunk(text)], opens=False)
    assert asked == ["Welcome back to the show."]
    # Piper spoke other words than the text's ("112" as three): nothing is cut
    odd = lambda text: [chunk(text + " one twelve")]  # noqa: E731
    got, asked = collect("Welcome back to the show.", odd)
    assert asked == ["urgent: Welcome back to", "urgent: Welcome back to the show."]
    assert [t for t, _ in got] == ["Welcome back to the show."]


def test_the_rest_goes_on_alone_when_the_whole_phrase_has_other_words():
    spoken_as = {"Welcome back to the show.": "Welcome back to the show one"}
    got, asked = collect("Welcome back to the show.", lambda t: [chunk(spoken_as.get(t, t))])
    # the whole phrase's rendering could not be cut: the rest is synthesized on its own
    assert asked == ["urgent: Welcome back to", "Welcome back to the show.", "to the show."]
    assert [t for t, _ in got] == ["Welcome back", "to the show."]
    assert got[1][1].text == "to the show."


def test_the_rest_of_a_sentence_has_no_onset_where_it_goes_on_from_speech():
    rate = 48_000
    voiced = (np.cos(np.arange(4800) / 5) * 8000).astype(np.int16)
    assert sound_onsets(voiced, rate) == [0]  # alone, its first sound is an onset
    assert sound_onsets(voiced, rate, before=voiced[:2400]) == []  # after speech it is not
    quiet = np.zeros(2400, np.int16)
    assert sound_onsets(voiced, rate, before=quiet) == [0]  # after a pause it is


def _sentences(text: str) -> list[str]:
    out, current = [], []
    for word in text.split():
        current.append(word)
        if word.endswith("."):
            out.append(" ".join(current))
            current = []
    return out + ([" ".join(current)] if current else [])
