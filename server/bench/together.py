"""The LLM's replies to waiting chat prompts of one persona: one generation each, against all
in one generation beside the first (models/batching.py, as the stage writes them): in
`bench roles`.

Greedy, so both ways give the same words (counted); paired: each group both ways, one right
after the other. The time runs from the first prompt asked to the last reply whole; the first
reply's first token shows what the one being spoken pays for the others.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from ..config import default_cast
from .personas import PROMPTS
from .table import render

TOKENS = 32  # a reply's budget: a sentence or two


def _reply(pieces: Any, started: float, first: list[float]) -> str:
    """The reply's text; `first` gets the ms from `started` to its first token."""
    text: list[str] = []
    for piece in pieces:
        if not text:
            first.append((time.perf_counter() - started) * 1000)
        text.append(piece.text)
    return "".join(text)


def _alone(llm: Any, messages: list, first: list[float]) -> list[str]:
    started = time.perf_counter()
    out = [_reply(llm.stream(messages[0], TOKENS, 0.0), started, first)]
    return out + [_reply(llm.stream(m, TOKENS, 0.0), started, []) for m in messages[1:]]


def _together(llm: Any, messages: list, first: list[float]) -> list[str | None]:
    kept: list[list[str | None]] = []
    started = time.perf_counter()
    pieces = llm.stream(messages[0], TOKENS, 0.0, also=messages[1:], kept=kept.append)
    reply = _reply(pieces, started, first)
    if llm.last_thread is not None:
        llm.last_thread.join()  # the others are whole when it ends
    return [reply, *(kept[0] if kept else [])]


def together_table(llm: Any, sizes: tuple[int, ...] = (1, 2, 4), reps: int = 3) -> str:
    persona = default_cast()[0].persona
    rows = []
    for size in sizes:
        alone_ms: list[float] = []
        together_ms: list[float] = []
        firsts: tuple[list[float], list[float]] = ([], [])  # the first reply's first token
        same = 0
        for rep in range(reps):
            start = (rep * size) % len(PROMPTS)
            prompts = (PROMPTS * 2)[start : start + size]
            messages = [llm.chat_messages(persona, p) for p in prompts]
            t = time.perf_counter()
            one_by_one = _alone(llm, messages, firsts[0])
            alone_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            at_once = _together(llm, messages, firsts[1])
            together_ms.append((time.perf_counter() - t) * 1000)
            same += sum(a == b for a, b in zip(one_by_one, at_once, strict=True))
        a, b = statistics.median(alone_ms), statistics.median(together_ms)
        ratios = [y / x for x, y in zip(alone_ms, together_ms, strict=True)]
        first = [statistics.median(f) for f in firsts]
        paired = statistics.median(ratios)
        rows.append([size, a, b, paired, *first, f"{same}/{size * reps}"])
    columns = ["prompts", "one by one", "together", "÷ one by one, paired median"]
    columns += ["first token, one by one", "first token, together", "same words"]
    return render(
        f"the LLM's replies to waiting prompts of one persona: one generation each, or one for "
        f"all (greedy, {TOKENS} tokens at most; median of {reps}, paired; ms for the group)",
        columns,
        rows,
    )
