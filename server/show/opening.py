"""An utterance's opening: its first few words heard before the whole sentence is synthesized.

Piper synthesizes a sentence at once, so first audio waits for the whole first sentence: on
two cores 130-180 ms for eight words, against 50-75 ms for three. The stage therefore speaks
the first words of the first phrase from a short synthesis of their own, and the rest from a
synthesis of the whole phrase, made while the opening plays (it lasts 0.5-1 s, the synthesis a
fraction of that), so the rest follows without a gap.

The cut is where speech pauses or may pause: after a comma or a colon in the first four words,
else before a function word ("and", "to", "the"…) after two to four words, else after three
words of a sentence of six or more; at least two words must follow, and a short sentence is
not cut. The opening is synthesized with the word after the cut (so its last word is not
spoken as a sentence's last, lengthened and falling), and both syntheses are cut at the same
word boundary, found in Piper's phonemes: the space before the next word. What follows the cut
is the whole phrase's own rendering, so the rest of the sentence sounds as it would have. A
comma's pause is the rest's (it starts with the comma), as long as in the whole sentence; a
join inside running speech meets in 2 ms fades, so no click marks it. Against the whole
sentence's own rendering, a join adds a median 4 ms of silence within 80 ms of it (p90 17 ms;
two renderings of the whole sentence differ there by -12 to +23 ms).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import AsyncGenerator, Callable

import numpy as np

from models.protocols import SpeechChunk
from models.sentences import is_abbreviation

MAX_WORDS = 4  # the opening is at most this many words
MIN_REST = 2  # words that must follow it in its sentence
LONG_SENTENCE = 6  # a sentence with no better place is cut after FALLBACK_WORDS from this long
FALLBACK_WORDS = 3
FADE_MS = 2.0
WORD_SPACE = " "  # Piper's phoneme between two words
PAUSE_AFTER = re.compile(r"[,;:—–]$")
PAUSES = set(",;:—–")  # Piper's phonemes for them
FUNCTION_WORDS = {
    "a", "an", "the", "and", "but", "or", "nor", "so", "yet", "because", "if", "when", "while",
    "that", "which", "who", "whose", "where", "to", "of", "in", "on", "at", "for", "with",
    "about", "from", "into", "over", "under", "after", "before", "until", "than", "as",
    "like", "through", "between", "without",
}  # fmt: skip
# a sentence ends at . ! ? (closing quotes may follow) before a space: the opening stays in the
# phrase's first sentence, which Piper speaks as its first chunk
SENTENCE_END = re.compile(r"[.!?…][\"')\]]*$")


def opening_words(phrase: str) -> int | None:
    """How many words of `phrase` to speak first on their own; None: speak it whole."""
    words = _first_sentence(phrase.split())
    n = len(words)
    for j in range(min(MAX_WORDS, n - MIN_REST)):
        if PAUSE_AFTER.search(words[j]):
            return j + 1
    for k in range(2, min(MAX_WORDS, n - MIN_REST) + 1):
        if words[k].lower().strip("\"'([") in FUNCTION_WORDS:
            return k
    return FALLBACK_WORDS if n >= LONG_SENTENCE else None


def _first_sentence(words: list[str]) -> list[str]:
    for i, word in enumerate(words):
        if SENTENCE_END.search(word) and not (word[-1] == "." and is_abbreviation(word[:-1])):
            return words[: i + 1]
    return words


def split_at_word(chunk: SpeechChunk, k: int) -> tuple[SpeechChunk, SpeechChunk] | None:
    """`chunk` cut before its (k+1)-th word: in the middle of its k-th word space (each
    rendering gives half of the passage from one word to the next), or at the start of the
    comma (colon…) before it, with the audio and phonemes on either side (2 ms fades where they
    meet). None where Piper's words are not the text's (a number spoken as several words, say):
    then nothing is cut."""
    spaces = [i for i, (symbol, _) in enumerate(chunk.phonemes) if symbol == WORD_SPACE]
    if len(spaces) < k:
        return None
    i = spaces[k - 1]
    phonemes = list(chunk.phonemes)
    if i > 0 and phonemes[i - 1][0] in PAUSES:
        i -= 1  # the pause is the rest's: its length is the whole sentence's, not the opening's
    else:
        half = int(phonemes[i][1]) // 2
        phonemes[i : i + 1] = [(WORD_SPACE, half), (WORD_SPACE, int(phonemes[i][1]) - half)]
        i += 1
    at = sum(int(samples) for _, samples in phonemes[:i])
    if at == 0 or at >= len(chunk.audio):
        return None
    fade = max(1, int(chunk.sample_rate * FADE_MS / 1000))
    head_audio = chunk.audio[:at].astype(np.float32)
    tail_audio = chunk.audio[at:].astype(np.float32)
    n = min(fade, len(head_audio))
    head_audio[-n:] *= np.linspace(1.0, 0.0, n, dtype=np.float32)
    n = min(fade, len(tail_audio))
    tail_audio[:n] *= np.linspace(0.0, 1.0, n, dtype=np.float32)
    words = chunk.text.split()
    head = dataclasses.replace(
        chunk,
        audio=head_audio.astype(np.int16),
        phonemes=tuple(phonemes[:i]),
        text=" ".join(words[:k]),
    )
    tail = dataclasses.replace(
        chunk,
        audio=tail_audio.astype(np.int16),
        phonemes=tuple(phonemes[i:]),
        text=" ".join(words[k:]),
    )
    return head, tail


def _spaces(chunk: SpeechChunk) -> int:
    return sum(symbol == WORD_SPACE for symbol, _ in chunk.phonemes)


def joined(head: SpeechChunk, tail: SpeechChunk) -> SpeechChunk:
    """An opening and its rest as one chunk: what the viewer hears of the sentence's start."""
    return dataclasses.replace(
        head,
        audio=np.concatenate([head.audio, tail.audio]),
        phonemes=tuple(head.phonemes) + tuple(tail.phonemes),
        text=f"{head.text} {tail.text}",
    )


Synthesize = Callable[[str, bool], AsyncGenerator[SpeechChunk, None]]  # (text, urgent) → chunks
OPENING, REST, WHOLE = "opening", "rest", ""


async def spoken(
    phrase: str, synthesize: Synthesize, opens: bool
) -> AsyncGenerator[tuple[str, SpeechChunk, str], None]:
    """(text, chunk, part) triples to place one after another for `phrase`: when it `opens`
    an utterance and has a place to cut, its OPENING from a short synthesis (urgent: first
    audio waits for it), then the REST of its sentence from the whole phrase's; else, and for
    the phrase's further sentences, each chunk as Piper gives it (WHOLE)."""
    k = opening_words(phrase) if opens else None
    head = None
    if k is not None:
        words = phrase.split()
        async with contextlib.aclosing(synthesize(" ".join(words[: k + 1]), True)) as chunks:
            async for chunk in chunks:
                if head is None and _spaces(chunk) == k:
                    head = (split_at_word(chunk, k) or (None,))[0]
    if head is None:  # nothing to cut, or Piper's words are not the text's: spoken whole
        async with contextlib.aclosing(synthesize(phrase, opens)) as chunks:
            async for chunk in chunks:
                yield phrase, chunk, WHOLE
        return
    assert k is not None  # the head was cut at it
    yield " ".join(words[:k]), head, OPENING
    rest, sentence = " ".join(words[k:]), len(_first_sentence(words))
    alone = False
    async with contextlib.aclosing(synthesize(phrase, False)) as chunks:
        async for chunk in chunks:
            part = WHOLE
            if head is not None:  # the whole phrase's first sentence: the rest of it
                head = None
                cut = split_at_word(chunk, k) if _spaces(chunk) == sentence - 1 else None
                if cut is None:
                    alone = True
                    break
                chunk, part = cut[1], REST
            yield rest, chunk, part
    if alone:  # the whole phrase was spoken with other words: the rest on its own
        async with contextlib.aclosing(synthesize(rest, False)) as chunks:
            async for chunk in chunks:
                yield rest, chunk, WHOLE
