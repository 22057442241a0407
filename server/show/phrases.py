"""The phrase window: tokens in, speakable phrases out.

Piper speaks whole phrases, so the stage must decide where to cut the token stream. Cutting at
sentence and clause boundaries keeps prosody natural; a window of N tokens bounds how long the
first audio waits for a boundary. The window follows the TTS input buffer: it halves (floor 4)
when the buffer is over 70 % full and doubles (cap 16) otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from models.sentences import ends_sentence

# A sentence end followed by a space, or ending the text so far after a letter: a streamed
# "night." is cut at once instead of one token later; "3." waits (it may become "3.5").
SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*\s|(?<=[^\W\d_])[!?…]+$|(?<=[^\W\d_])\.$")
CLAUSE_END = re.compile(r"[,;:—–]\s|\s-\s")
FULL_THRESHOLD = 0.7


def next_window(current: int, buffer_level: float, floor: int = 4, cap: int = 16) -> int:
    """Window size for the next phrase given the TTS buffer fill level (0..1)."""
    if buffer_level > FULL_THRESHOLD:
        return max(floor, current // 2)
    return min(cap, current * 2)


@dataclass
class PhraseWindow:
    """Accumulates token texts and cuts phrases at the best boundary inside the window."""

    size: int = 8
    floor: int = 4
    cap: int = 16
    _pieces: list[str] = field(default_factory=list)

    def push(self, text: str) -> str | None:
        """Add one token's text; returns a phrase when one is ready."""
        self._pieces.append(text)
        buffered = "".join(self._pieces)
        # a sentence end is always a good place to cut
        m = _last(SENTENCE_END, buffered)
        if m is not None and _speakable(buffered[: m.end()]) and not _abbreviation(buffered, m):
            return self._cut(m.end())
        if len(self._pieces) >= self.size:
            m = _last(CLAUSE_END, buffered)
            if m is not None and buffered[: m.end()].strip():
                return self._cut(m.end())
            # no boundary inside the window: cut after the last complete word (a token that
            # ends without a space may be the first half of a word)
            if buffered[-1:].isspace():
                return self._cut(len(buffered))
            space = buffered.rfind(" ")
            if space > 0:
                return self._cut(space + 1)
        return None

    def flush(self) -> str | None:
        """The rest, at the end of the stream."""
        text = " ".join("".join(self._pieces).split())
        self._pieces.clear()
        return text or None

    def resize(self, buffer_level: float) -> None:
        self.size = next_window(self.size, buffer_level, self.floor, self.cap)

    def _cut(self, at: int) -> str | None:
        buffered = "".join(self._pieces)
        phrase, rest = " ".join(buffered[:at].split()), buffered[at:]
        self._pieces = [rest] if rest else []
        return phrase or None


def _abbreviation(text: str, m: re.Match[str]) -> bool:
    """Is the '.' at this sentence end part of "Mr." or "U.S." rather than a full stop? (The
    voice's rule: models/sentences.py.)"""
    return not ends_sentence(text, m.start())


def _speakable(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    last = None
    for last in pattern.finditer(text):  # noqa: B007 - we want the final match
        pass
    return last


def word_tokens(text: str) -> list[str]:
    """Split a verbatim line into word tokens (each with its trailing space) for the window."""
    return re.findall(r"\S+\s*", text.strip() + " ")


class StageDirections:
    """Drops stage directions — "(laughs)", "*smiles*", "[pause]" — from a streamed reply.

    Small chat models write them; a voice must not read them out. Works token by token, so
    a direction split over several tokens is still removed.
    """

    PAIRS = {"(": ")", "[": "]", "*": "*"}

    def __init__(self) -> None:
        self._closing: str | None = None

    def feed(self, text: str) -> str:
        out = []
        for ch in text:
            if self._closing is not None:
                if ch == self._closing:
                    self._closing = None
            elif ch in self.PAIRS:
                self._closing = self.PAIRS[ch]
            else:
                out.append(ch)
        return "".join(out)
