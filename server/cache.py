"""A cache that cannot herd: the 2 a.m. failure where every entry expires at once and every
request goes back to the models together.

- **Keyed by content**, never by clock time: the caller's key names what the value is.
- **Jittered lifetimes**: each entry is fresh for `ttl_s` ± `jitter` (a uniform share), so
  entries written together do not expire together.
- **One make per key in flight** (single flight): a hundred callers missing the same key wait
  for one make, not a hundred.
- **Stale while revalidate**: an entry past its freshness but within `stale_s` is served at
  once, and remade in the background (once, single-flight too).

Values are bytes, kept by a Store: SQLite on disk by default (`SQLiteStore`), Redis when a URL
is configured (`RedisStore`, so several servers share one cache). Time comes from an
injectable clock (the night's simulations run on their own).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .sqlitefile import open_db

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Entry:
    value: bytes
    fresh_until: float  # s, on the cache's clock
    keep_until: float  # s: served stale until then, gone after


class Store(Protocol):
    async def get(self, key: str) -> Entry | None: ...
    async def put(self, key: str, entry: Entry) -> None: ...
    async def close(self) -> None: ...


class Cache:
    def __init__(
        self,
        store: Store,
        ttl_s: float,
        stale_s: float,
        jitter: float = 0.2,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.store, self.ttl_s, self.stale_s, self.jitter = store, ttl_s, stale_s, jitter
        self.clock = clock
        self.rng = rng or random.Random()
        self._making: dict[str, asyncio.Task[bytes]] = {}
        self.counts = {"hit": 0, "stale": 0, "miss": 0, "made": 0, "failed": 0}
        self.listeners: list[Callable[[str], None]] = []  # each outcome, for the metrics

    async def get(self, key: str, make: Callable[[], Awaitable[bytes]]) -> bytes:
        """The value of `key`: fresh from the store, stale (remade behind it), or made now."""
        entry = await self._read(key)
        now = self.clock()
        if entry is not None and now < entry.fresh_until:
            self._count("hit")
            return entry.value
        if entry is not None and now < entry.keep_until:
            self._count("stale")
            self._make(key, make)  # behind the answer, once
            return entry.value
        self._count("miss")
        return await asyncio.shield(self._make(key, make))

    async def drain(self) -> None:
        """Wait for what is being made (a clean stop keeps it)."""
        while self._making:
            await asyncio.gather(*self._making.values(), return_exceptions=True)

    def lifetime(self) -> float:
        """A fresh entry's lifetime: `ttl_s` spread by ± `jitter` of it."""
        return self.ttl_s * (1 + self.jitter * self.rng.uniform(-1, 1))

    def _make(self, key: str, make: Callable[[], Awaitable[bytes]]) -> asyncio.Task[bytes]:
        task = self._making.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._made(key, make))
            self._making[key] = task
            task.add_done_callback(lambda done: self._done(key, done))
        return task

    def _done(self, key: str, task: asyncio.Task[bytes]) -> None:
        self._making.pop(key, None)
        # a remake behind a stale answer has no one waiting on it: its failure is logged here
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.warning("cache: making %s failed: %s", key[:16], exc)

    async def _made(self, key: str, make: Callable[[], Awaitable[bytes]]) -> bytes:
        try:
            value = await make()
        except BaseException:
            self._count("failed")
            raise
        self._count("made")
        now = self.clock()
        fresh = now + self.lifetime()
        try:
            await self.store.put(key, Entry(value, fresh, fresh + self.stale_s))
        except Exception as exc:  # a cache that cannot write still answers
            log.error("cache: could not keep %s: %s", key[:16], exc)
        return value

    async def _read(self, key: str) -> Entry | None:
        try:
            return await self.store.get(key)
        except Exception as exc:  # a cache that cannot read is a miss, not an outage
            log.error("cache: could not read %s: %s", key[:16], exc)
            return None

    def _count(self, outcome: str) -> None:
        self.counts[outcome] += 1
        for listener in self.listeners:
            listener(outcome)


class SQLiteStore:
    """Entries in an SQLite file (the embedded default), at most `max_entries`: past that,
    those that would expire soonest go first."""

    def __init__(self, path: str | Path, max_entries: int = 2000) -> None:
        self.max_entries = max_entries
        self._db = open_db(path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL,"
            " fresh_until REAL NOT NULL, keep_until REAL NOT NULL)"
        )

    async def get(self, key: str) -> Entry | None:
        row = self._db.execute(
            "SELECT value, fresh_until, keep_until FROM entries WHERE key = ?", (key,)
        ).fetchone()
        return None if row is None else Entry(bytes(row[0]), row[1], row[2])

    async def put(self, key: str, entry: Entry) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)",
            (key, entry.value, entry.fresh_until, entry.keep_until),
        )
        self._db.execute(
            "DELETE FROM entries WHERE key IN (SELECT key FROM entries ORDER BY keep_until DESC"
            " LIMIT -1 OFFSET ?)",
            (self.max_entries,),
        )

    def size(self) -> int:
        """How many entries it holds."""
        return self._db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]

    async def close(self) -> None:
        self._db.close()


class RedisStore:
    """Entries in Redis (`[cache] redis_url`), shared by every server that names it. Redis
    expires each at its `keep_until` (milliseconds from now, as Redis counts them)."""

    PREFIX = "allnighter:cache:"

    def __init__(self, url: str, clock: Callable[[], float] = time.time) -> None:
        import redis.asyncio as redis  # only where Redis is configured

        self._redis = redis.from_url(url)
        self.clock = clock

    async def get(self, key: str) -> Entry | None:
        value, fresh, keep = await self._redis.hmget(self.PREFIX + key, ["value", "fresh", "keep"])
        if not isinstance(value, bytes) or fresh is None or keep is None:
            return None  # gone, or half of an entry Redis was expiring
        return Entry(value, float(fresh), float(keep))

    async def put(self, key: str, entry: Entry) -> None:
        name = self.PREFIX + key
        ttl_ms = max(1, round((entry.keep_until - self.clock()) * 1000))
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                name,
                mapping={
                    "value": entry.value,
                    "fresh": entry.fresh_until,
                    "keep": entry.keep_until,
                },
            )
            pipe.pexpire(name, ttl_ms)
            await pipe.execute()

    async def close(self) -> None:
        await self._redis.aclose()
