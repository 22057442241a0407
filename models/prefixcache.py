"""The keys and values of each persona's system prompt, computed once and reused.

A chat prompt opens with its role's persona (the system message), the same for every reply of
that role: the model's keys and values for those tokens come out the same each time. They are
kept, one entry per persona (a few MB each), and each generation starts from a copy of them
(generate() appends to the cache it is given), so only the rest of the prompt is computed
before the first token.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

import torch
from transformers import DynamicCache


class PrefixCache:
    def __init__(self, model: Any, most: int = 16) -> None:
        self.model = model
        self.most = most  # personas kept, the least recently used let go first
        self._kept: OrderedDict[tuple[int, ...], DynamicCache] = OrderedDict()
        self.misses = 0  # personas computed (again, where one was let go)

    def start(self, prefix: list[int], prompt: torch.Tensor) -> DynamicCache | None:
        """A copy of the cache of `prefix` (token ids) where the prompt (ids, batch of 1)
        starts with it and goes on past it; None otherwise. Computed the first time: call
        with the model to itself (under the generation lock), in inference mode."""
        n = len(prefix)
        if not n or prompt.shape[0] != 1 or prompt.shape[-1] <= n:
            return None
        if prompt[0, :n].tolist() != prefix:  # the template split the tokens another way
            return None
        key = tuple(prefix)
        cache = self._kept.get(key)
        if cache is None:
            self.misses += 1
            empty = DynamicCache(config=self.model.config)
            out = self.model(input_ids=prompt[:, :n], cache=empty, use_cache=True)
            cache = self._kept[key] = out.cache
            while len(self._kept) > self.most:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
        return copy.deepcopy(cache)


class NoPrefixes:
    """Keeps no persona: every prompt computed whole (the baseline reuse is measured against)."""

    def start(self, prefix: list[int], prompt: torch.Tensor) -> None:
        return None
