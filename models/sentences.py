"""Where a sentence ends: one rule for the show's phrase window and for the voice.

The voice synthesizes sentence by sentence and the phrase window cuts the LLM's stream at
sentence ends; if the two disagreed ("Dr." a sentence for one and not the other), a phrase
would be cut where the voice reads on, or the reverse. A full stop ends a sentence unless it
closes a title ("Dr."), a lone initial ("J.") or a dotted abbreviation ("U.S.A.", "a.m.",
"e.g."), which espeak-ng mostly reads through.
"""

from __future__ import annotations

import re

TITLES = frozenset({"mr", "mrs", "ms", "dr", "st", "vs", "etc", "jr", "sr", "prof"})
_DOTTED = re.compile(r"(?:\w\.)+\w")  # "U.S.A" of "U.S.A.", "a.m" of "a.m."
# a sentence end in whole text: . ! ? … (and closing quotes or brackets), then a space
SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*\s+")


def is_abbreviation(word: str) -> bool:
    """Is the full stop right after `word` part of an abbreviation, not a sentence's end?"""
    w = word.lstrip("\"'([")
    return w.lower() in TITLES or (len(w) == 1 and w.isupper()) or bool(_DOTTED.fullmatch(w))


def ends_sentence(text: str, at: int) -> bool:
    """Does the sentence-end mark at `text[at]` end a sentence (a "." may close an
    abbreviation instead)?"""
    if text[at] != ".":
        return True
    before = text[:at].split()
    return not (before and is_abbreviation(before[-1]))


def split_sentences(text: str) -> list[str]:
    """`text` as its sentences, each stripped; none for blank text."""
    sentences: list[str] = []
    start = 0
    for match in SENTENCE_END.finditer(text):
        if not ends_sentence(text, match.start()):
            continue
        if sentence := text[start : match.end()].strip():
            sentences.append(sentence)
        start = match.end()
    if tail := text[start:].strip():
        sentences.append(tail)
    return sentences
