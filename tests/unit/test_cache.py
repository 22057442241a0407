"""Caches that cannot herd: one make per key in flight, jittered lifetimes, stale while
revalidate; on disk by default and in a real Redis; and the show's speech cache speaking a
stock line the second time without the TTS."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import numpy as np
import pytest

from models.protocols import SpeechChunk, VoiceStyle
from server.bench.inprocess import LiveServer, say, until_final
from server.bench.redisserver import redis_on_loopback, redis_server_path
from server.cache import Cache, Entry, RedisStore, SQLiteStore
from server.config import load_config
from server.keys import METRICS
from server.loading import Models
from server.show.speechcache import decode, encode, speech_key
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM

TTL = 3600.0


class SimTime:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def cache(store=None, jitter: float = 0.2, seed: int = 1) -> tuple[Cache, SimTime]:
    sim = SimTime()
    store = store or SQLiteStore(":memory:")
    return Cache(store, TTL, stale_s=TTL, jitter=jitter, clock=sim, rng=random.Random(seed)), sim


def test_a_hundred_misses_of_one_key_make_it_once():
    c, _ = cache()
    made = []

    async def make() -> bytes:
        made.append(1)
        await asyncio.sleep(0.05)  # a synthesis takes a while: the others arrive meanwhile
        return b"hello"

    async def all_at_once() -> list[bytes]:
        return await asyncio.gather(*(c.get("greeting", make) for _ in range(100)))

    assert asyncio.run(all_at_once()) == [b"hello"] * 100
    assert len(made) == 1 and c.counts["miss"] == 100 and c.counts["made"] == 1


def test_entries_written_together_do_not_expire_together():
    async def fill(c: Cache) -> list[float]:
        for n in range(1000):
            await c.get(f"line {n}", lambda: asyncio.sleep(0, b"x"))
        rows = c.store._db.execute("SELECT fresh_until FROM entries").fetchall()  # type: ignore[attr-defined]
        return [r[0] for r in rows]

    for jitter, most_in_a_minute in ((0.2, 80), (0.0, 1000)):
        c, sim = cache(SQLiteStore(":memory:", max_entries=5000), jitter=jitter)
        expiries = asyncio.run(fill(c))
        per_minute = Counter(int((t - sim.t) // 60) for t in expiries)
        if jitter:
            # spread over ±20 % of an hour: about 42 a minute, never most of them at once
            assert max(per_minute.values()) <= most_in_a_minute, per_minute.most_common(3)
            assert min(expiries) >= sim.t + 0.8 * TTL and max(expiries) <= sim.t + 1.2 * TTL
        else:  # without jitter: the herd, every entry in the same minute
            assert max(per_minute.values()) == most_in_a_minute


def test_a_stale_entry_is_served_at_once_and_remade_behind_it_once():
    c, sim = cache()
    version = {"n": 0}

    async def make() -> bytes:
        version["n"] += 1
        await asyncio.sleep(0.01)
        return f"v{version['n']}".encode()

    async def scenario() -> list[bytes]:
        out = [await c.get("k", make)]  # a miss: v1 made
        sim.t += 1.3 * TTL  # past its freshness, within its stale time
        out += await asyncio.gather(*(c.get("k", make) for _ in range(10)))  # all served v1
        await asyncio.sleep(0.05)  # the one remake finishes behind them
        out.append(await c.get("k", make))  # fresh again: v2
        sim.t += 3 * TTL  # past everything: a miss
        out.append(await c.get("k", make))
        return out

    out = asyncio.run(scenario())
    assert out == [b"v1"] + [b"v1"] * 10 + [b"v2", b"v3"]
    assert c.counts == {"hit": 1, "stale": 10, "miss": 2, "made": 3, "failed": 0}


def test_a_clean_stop_waits_for_a_remake_behind_a_stale_answer():
    c, sim = cache()

    async def make() -> bytes:
        await asyncio.sleep(0.05)
        return b"made"

    async def scenario() -> Entry | None:
        await c.get("k", make)
        sim.t += 1.3 * TTL
        await c.get("k", make)  # stale: the remake runs behind the answer
        await c.drain()
        return await c.store.get("k")

    kept = asyncio.run(scenario())
    assert kept is not None and kept.fresh_until > sim.t  # the remake was kept before the stop
    assert c.counts["made"] == 2


def test_a_make_that_fails_is_a_failure_for_its_callers_and_is_not_kept():
    c, _ = cache()

    async def broken() -> bytes:
        raise RuntimeError("the TTS broke")

    async def scenario() -> None:
        with pytest.raises(RuntimeError, match="the TTS broke"):
            await c.get("k", broken)
        assert await c.store.get("k") is None

    asyncio.run(scenario())
    assert c.counts["failed"] == 1


def test_the_disk_store_keeps_at_most_its_entries_and_survives_a_restart(tmp_path):
    async def scenario() -> None:
        store = SQLiteStore(tmp_path / "cache.sqlite", max_entries=3)
        for n in range(5):
            await store.put(f"k{n}", Entry(b"v%d" % n, 100.0 + n, 200.0 + n))
        await store.close()
        store = SQLiteStore(tmp_path / "cache.sqlite", max_entries=3)
        kept = [k for k in ("k0", "k1", "k2", "k3", "k4") if await store.get(k)]
        assert kept == ["k2", "k3", "k4"]  # those that would go soonest went first
        assert store.size() == 3
        assert await store.get("k4") == Entry(b"v4", 104.0, 204.0)

    asyncio.run(scenario())


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    if redis_server_path() is None:
        pytest.skip("redis-server is not installed (scripts/test-packages.sh installs it)")
    with redis_on_loopback(tmp_path_factory.mktemp("redis")) as url:
        yield url


def test_two_servers_share_a_redis_cache_and_it_expires_there(redis_url):
    async def scenario() -> None:
        sim = SimTime()
        one = Cache(RedisStore(redis_url, clock=sim), TTL, TTL, clock=sim)
        two = Cache(RedisStore(redis_url, clock=sim), TTL, TTL, clock=sim)
        made = []

        async def make() -> bytes:
            made.append(1)
            return b"\x00\x01 audio"

        assert await one.get("shared line", make) == b"\x00\x01 audio"
        assert await two.get("shared line", make) == b"\x00\x01 audio"  # made by the first
        assert len(made) == 1 and two.counts["hit"] == 1
        # Redis itself drops an entry at its keep time (here a second from now)
        await one.store.put("short", Entry(b"x", sim.t, sim.t + 1.0))
        assert await two.store.get("short") is not None
        await asyncio.sleep(1.3)
        assert await two.store.get("short") is None
        await one.store.close()
        await two.store.close()

    asyncio.run(scenario())


def test_speech_keeps_its_samples_phonemes_and_text_and_its_key_is_its_content():
    chunk = SpeechChunk(np.arange(-5, 5, dtype=np.int16), 22050, (("^", 4), ("a", 6)), "a.")
    other = SpeechChunk(np.array([7, 8], dtype=np.int16), 22050, (("b", 2),), "b.")
    back = decode(encode([chunk, other]))
    assert [c.text for c in back] == ["a.", "b."]
    assert back[0].phonemes == chunk.phonemes and back[1].sample_rate == 22050
    assert np.array_equal(back[0].audio, chunk.audio) and np.array_equal(back[1].audio, [7, 8])
    style = VoiceStyle()
    assert speech_key("joe", "Good evening.", style) == speech_key("joe", "Good evening.", style)
    assert speech_key("joe", "Good evening.", style) != speech_key("joe", "Good evening!", style)
    slower = VoiceStyle(length_scale=1.2)
    assert speech_key("joe", "Good evening.", style) != speech_key("joe", "Good evening.", slower)


class CountingTTS(ToneTTS):
    def __init__(self) -> None:
        super().__init__(word_s=0.05, gap_s=0.02)
        self.texts: list[str] = []

    def speak(self, text, style=None, urgent=False):
        self.texts.append(text)
        return super().speak(text, style, urgent)


def test_a_stock_line_said_twice_is_synthesized_once():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    tts = CountingTTS()
    srv = LiveServer(cfg, Models(WordsLLM(), tts, None)).start()
    try:

        async def scenario() -> list[tuple[dict, int]]:
            done = []  # each utterance's record, and how many TTS calls there were by its end
            for cached in (True, True, False):
                status, body = await say(srv, "Welcome back, night owls.", cache=cached)
                assert status == 202, body
                done.append((await until_final(srv, body["utterance_id"]), len(tts.texts)))
            return done

        (first, after_first), (second, after_second), (uncached, after_uncached) = srv.call(
            scenario(), 60
        )
        counts = {
            s.labels["outcome"]: s.value
            for m in srv.app[METRICS].registry.collect()
            if m.name == "allnighter_speech_cache"
            for s in m.samples
            if s.name.endswith("_total")
        }
    finally:
        srv.stop()
    assert [u["state"] for u in (first, second, uncached)] == ["done"] * 3
    assert first["cache"] and second["cache"] and not uncached["cache"]
    # the second telling took no synthesis; the same line uncached did
    assert after_first >= 1 and after_second == after_first and after_uncached > after_second
    assert counts["miss"] == 1 and counts["hit"] == 1 and counts["made"] == 1
