"""Semantic compression, the night's first step down: a long prompt condensed to what asks for an
answer. Extractive, so it costs nothing at the hour it is meant to save: the sentences that
ask (a question mark) first, then the opening ones, in their order, up to a number of words.
The reply is shortened by its token budget (phrasing.py)."""

from __future__ import annotations

from models.sentences import split_sentences


def condense(text: str, most_words: int) -> tuple[str, float]:
    """`text` in at most `most_words` words (whole sentences where they fit), and the share of
    its words kept."""
    words = text.split()
    if len(words) <= most_words:
        return text, 1.0
    sentences = split_sentences(text)
    ranked = sorted(range(len(sentences)), key=lambda i: ("?" not in sentences[i], i))
    kept: set[int] = set()
    count = 0
    for i in ranked:
        n = len(sentences[i].split())
        if count + n <= most_words:
            kept.add(i)
            count += n
    if not kept:  # one long sentence: its first words
        short = " ".join(words[:most_words])
        return short, most_words / len(words)
    short = " ".join(sentences[i] for i in sorted(kept))
    return short, count / len(words)
