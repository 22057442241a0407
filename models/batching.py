"""Replies to several prompts of one persona in one generation.

Each step of a small model on the CPU costs about as much for a few rows as for one (the
weights are read once a step either way), so the replies that wait behind the one being
spoken can be written beside it. The rows share the persona's keys and values: every row is
laid out as [persona][padding][the rest of its prompt], the padding masked out, so the persona
sits at the same positions in each and its kept cache (prefixcache.py), repeated once a row,
fits them all; each row's positions run on from the persona over its own tokens.

The first row is the reply being spoken: its tokens are handed out as they come. The others
are kept whole, and handed over when the generation ends.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from transformers.generation.streamers import BaseStreamer


def middle_padded(
    prefix: list[int], prompts: Sequence[list[int]]
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Input ids and attention mask of `prompts` (each starting with `prefix`) as rows of
    [prefix][pads][rest]; None where one does not start with it, or is nothing past it.

    The padding is masked out, but generate()'s repetition penalty still reads every id in a
    row: it is the prefix's first token, in the row already, so each row's reply is penalised
    as it would be alone (an end-of-text pad would make a padded row's reply end later)."""
    n = len(prefix)
    if not n or any(len(p) <= n or p[:n] != prefix for p in prompts):
        return None
    pad = prefix[0]
    rests = [p[n:] for p in prompts]
    width = max(map(len, rests))
    ids = [prefix + [pad] * (width - len(r)) + r for r in rests]
    mask = [[1] * n + [0] * (width - len(r)) + [1] * len(r) for r in rests]
    return torch.tensor(ids), torch.tensor(mask)


class RowStreamer(BaseStreamer):
    """Hands the first row's tokens to the consumer as they come, time-stamped, and keeps the
    other rows' (once a row gives an end token, it is complete and what follows is padding)."""

    def __init__(
        self,
        out: queue.Queue[Any],
        end: object,
        eos: Sequence[int],
        rows: int,
        between_tokens: Callable[[], None] | None = None,
    ) -> None:
        self._out, self._end, self._eos = out, end, set(eos)
        self._between = between_tokens
        self._prompt_seen = False
        self._resumed: float | None = None  # when the model went on after the last token
        self.kept: list[list[int]] = [[] for _ in range(rows)]
        self.ended = [False] * rows  # a row that gave its end token

    def put(self, value: torch.Tensor) -> None:
        now = time.perf_counter()
        if not self._prompt_seen:  # generate() first echoes the prompt ids: skip them
            self._prompt_seen = True
            return
        decode = None if self._resumed is None else now - self._resumed
        for row, token in enumerate(value.reshape(-1).tolist()):
            if self.ended[row]:
                continue
            if row == 0:
                self._out.put((int(token), now, decode))
            else:
                self.kept[row].append(int(token))
            if token in self._eos:
                self.ended[row] = True
                if row == 0:  # its reply is whole: the consumer goes on, the others may not
                    self._out.put(self._end)
        # generate() hands the tokens over just before it computes the next ones: the caller
        # may hold it here (see `between_tokens` in ChatLLM.stream)
        if self._between is not None:
            self._between()
        self._resumed = time.perf_counter()

    def end(self) -> None:
        pass  # the thread wrapper posts the end marker, also when generate() raises
