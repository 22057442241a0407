"""The LLM's first token of a chat reply with each role's persona computed whole, against the
persona's kept keys and values reused (models/prefixcache.py): in `bench roles`.

Paired: each prompt in both ways, one right after the other, so the machine's noise falls on
both alike. Greedy, one token: the time is the prompt's prefill and the first decoding step.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from models.prefixcache import NoPrefixes

from ..config import default_cast
from .table import pct, render

PROMPTS = [
    "Say hello to the viewers.", "What is your favourite star?", "Tell us about the moon.",
    "How do you stay awake all night?", "What should we talk about next?", "Why do owls hoot?",
    "What is a good midnight snack?", "Name a constellation.", "What is a comet?",
    "Wish everyone a good night.",
]  # fmt: skip


def _first_token_ms(llm: Any, persona: str, prompt: str) -> float:
    started = time.perf_counter()
    pieces = llm.stream(llm.chat_messages(persona, prompt), max_new_tokens=1, temperature=0.0)
    for _ in pieces:
        break
    elapsed = (time.perf_counter() - started) * 1000
    pieces.close()
    return elapsed


def persona_table(llm: Any, reps: int = 2) -> str:
    kept = llm.prefixes
    whole: list[float] = []
    reused: list[float] = []
    try:
        for persona in [role.persona for role in default_cast()]:
            _first_token_ms(llm, persona, PROMPTS[0])  # the persona kept, the threads warm
            for prompt in PROMPTS * reps:
                llm.prefixes = NoPrefixes()
                whole.append(_first_token_ms(llm, persona, prompt))
                llm.prefixes = kept
                reused.append(_first_token_ms(llm, persona, prompt))
    finally:
        llm.prefixes = kept
    ratios = [r / w for r, w in zip(reused, whole, strict=True)]
    w, r = statistics.median(whole), statistics.median(reused)
    return render(
        f"the LLM's first token of a reply, the role's persona computed whole or reused "
        f"({len(whole)} prompts of the default cast's two roles, paired; ms)",
        ["persona", "median", "p95", "÷ whole, paired median"],
        [
            ["computed whole", w, pct(whole, 95), "baseline"],
            ["reused", r, pct(reused, 95), statistics.median(ratios)],
        ],
    )
