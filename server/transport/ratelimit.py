"""Token buckets: one per viewer socket, or one per address (or dubbing key) in a bounded
table."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass
class RateLimit:
    """`burst` at once, refilled at `per_minute`."""

    per_minute: float
    burst: int
    tokens: float = 0.0
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = float(self.burst)

    def allow(self, cost: float = 1) -> bool:
        """Spend `cost` tokens if there are that many (a request of several lines costs one
        a line); otherwise spend none."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_minute / 60)
        self.stamp = now
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        return False


class PerAddress:
    """A RateLimit per client address. The table keeps the `keep` addresses seen last: a
    script with more addresses than that gets fresh buckets, but the table cannot grow."""

    def __init__(self, per_minute: float, burst: int, keep: int = 4096) -> None:
        self.per_minute, self.burst, self.keep = per_minute, burst, keep
        self._buckets: OrderedDict[str, RateLimit] = OrderedDict()

    def allow(self, address: str, cost: float = 1) -> bool:
        bucket = self._buckets.pop(address, None) or RateLimit(self.per_minute, self.burst)
        self._buckets[address] = bucket
        while len(self._buckets) > self.keep:
            self._buckets.popitem(last=False)
        return bucket.allow(cost)
