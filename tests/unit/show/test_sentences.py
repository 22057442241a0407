"""One rule for where a sentence ends: the voice splits text by it, and the phrase window cuts
the LLM's stream by it, so a phrase never ends where the voice reads on."""

from __future__ import annotations

import pytest

from models.sentences import split_sentences
from server.show.phrases import PhraseWindow, word_tokens

TEXTS = [
    "Hello there. How are you tonight?",
    "Dr. Smith is in. Wow!! Really?",
    "It's 3 a.m. here. U.S.A. rocks",
    "Ask J. Doe, e.g. the keeper. Then etc. and so on. No more.",
    "Mrs. Hall said so… Then she left.",
]


def test_sentences_split_where_a_full_stop_ends_one():
    assert split_sentences(TEXTS[0]) == ["Hello there.", "How are you tonight?"]
    assert split_sentences(TEXTS[1]) == ["Dr. Smith is in.", "Wow!!", "Really?"]
    assert split_sentences(TEXTS[2]) == ["It's 3 a.m. here.", "U.S.A. rocks"]
    assert split_sentences("  ") == []


@pytest.mark.parametrize("text", TEXTS)
def test_the_phrase_window_cuts_where_the_voice_splits(text):
    """Fed word by word, with a window too wide to cut anywhere but at sentence ends."""
    window = PhraseWindow(size=64, floor=64, cap=64)
    cuts = [p for w in word_tokens(text) if (p := window.push(w))]
    rest = window.flush()
    assert cuts + ([rest] if rest else []) == split_sentences(text)


def test_an_opening_is_cut_inside_the_first_sentence_the_voice_speaks():
    """ "Dr." is no sentence: the opening words come from the sentence that goes on."""
    from server.show.opening import _first_sentence

    words = "Dr. Smith is in tonight. Welcome.".split()
    assert _first_sentence(words) == split_sentences(" ".join(words))[0].split()
