"""The phrase window: boundaries and sizing against the TTS buffer level."""

from __future__ import annotations

import pytest

from server.show.phrases import PhraseWindow, next_window, word_tokens


@pytest.mark.parametrize(
    "current, level, expected",
    [(8, 0.0, 16), (16, 0.2, 16), (8, 0.71, 4), (4, 0.9, 4), (16, 0.8, 8), (8, 0.7, 16)],
)
def test_window_halves_when_tts_buffer_is_over_70_percent_and_doubles_otherwise(
    current, level, expected
):
    assert next_window(current, level) == expected


def run(tokens, size=8):
    w, out = PhraseWindow(size), []
    for t in tokens:
        p = w.push(t)
        if p:
            out.append(p)
    rest = w.flush()
    return out + ([rest] if rest else [])


def test_sentences_are_cut_at_their_end():
    assert run(["Hello", " there", "!", " How", " are", " you", "?"]) == [
        "Hello there!",
        "How are you?",
    ]


def test_long_sentence_is_cut_at_a_clause_boundary_inside_the_window():
    text = (
        "Good evening, night owls and early birds alike, "
        "welcome back to the show that never sleeps."
    )
    phrases = run(word_tokens(text))
    assert phrases[0] == "Good evening, night owls and early birds alike,"
    assert " ".join(phrases) == text


def test_no_boundary_cuts_at_a_word_after_the_window():
    words = word_tokens("one two three four five six seven eight nine ten")
    phrases = run(words, size=4)
    assert phrases[0] == "one two three four"
    assert " ".join(phrases) == "one two three four five six seven eight nine ten"


def test_decimal_points_are_not_sentence_ends():
    assert run(["It", " is", " 3", ".", "5", " degrees", "."]) == ["It is 3.5 degrees."]


def test_nothing_is_lost_or_invented():
    text = "A; b: c, d. E! f? g h i j k l m n o p q r s t u v w x y z."
    assert " ".join(run(word_tokens(text))).split() == text.split()


def test_stage_directions_are_not_spoken_even_split_over_tokens():
    from server.show.phrases import StageDirections

    f = StageDirections()
    tokens = ["(", "laugh", "s)", " Ah", ", welcome", "! *", "smiles*", " Good [pause] night."]
    assert "".join(f.feed(t) for t in tokens) == " Ah, welcome!  Good  night."


def test_a_streamed_full_stop_cuts_at_once_but_not_after_a_title_or_digit():
    w = PhraseWindow()
    assert w.push("Hello") is None and w.push(" there") is None
    assert w.push(".") == "Hello there."  # no need to wait for the next token
    assert run(["Ask", " Dr", ".", " Who", " now", "."]) == ["Ask Dr. Who now."]
    assert run(["Pi", " is", " 3", ".", "14", "."]) == ["Pi is 3.14."]
