"""Simulated nights for `bench nights`: the night's machinery on a clock of its own.

Each night runs from 20:00 to 08:00 in one-second steps, seeded. Viewers join (most in the
evening, few at 4 a.m.) and leave; each join brings a greeting and a stock opener comes every
45 s, both through the speech cache; the show's autopilot (server/host/autopilot.py) looks
every second and says a few words on a topic after `max_silence_s` of quiet; every line the
show accepts goes into the logbook.
At 02:00 the server restarts: it is gone for `DOWN_S`, every page comes back by its own
backoff, the cache and the logbook are opened again from their files. At 03:30 the only time
source steps 50 ms. The parts are the show's own, each on the simulated clock: the speech cache
(server/cache.py, on SQLite), the logbook (server/logbook.py), the night's ladder
(server/night/ladder.py), the fused clock (timesync/, over a simulated NTP server) and the
page's reconnect backoff (web/static/stage/link.js, run by node).

Incidents: an accepted line the logbook lost at the restart, the clock going backwards or out
of its bound (but between the step and the first reading that shows it, which nothing can
know), the cache or logbook growing past their bounds, nothing on the air for longer than the
autopilot's gap and its next look (the restart's silence is reported on its own). Syntheses
(cache misses and remakes) are counted by the minute: the 02:00 hour against the worst other,
for the cache as shipped and with lifetimes that line up (no jitter, nothing served stale).
With a line or two a minute the requests themselves spread what expires together, so the
baseline herds little here: this shows the shipped cache's remakes stay spread over a
restart, not how bad a herd could be.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import itertools
import json
import math
import random
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from timesync.simulate import Reference, SimNTP, run

from ..cache import Cache, SQLiteStore
from ..config import RoleConfig
from ..host.autopilot import Autopilot
from ..logbook import Logbook
from ..night.ladder import Ladder, Reading
from ..nightsettings import AutopilotConfig, CacheConfig, NightConfig
from ..show.stage import Stage
from ..show.utterances import Utterance

HOURS = 12  # 20:00 to 08:00
START = dt.datetime(2026, 12, 4, 20, 0, tzinfo=dt.UTC)
RESTART_S = 6 * 3600  # 02:00
DOWN_S = 20.0  # a restart with the models in the page cache
STEP_S, STEP = 7.5 * 3600, 0.05  # 03:30: the NTP server steps 50 ms
LINE_S = 6.0  # a line's length: the logbook's lines are spoken one after another
STAY_S = 1500  # how long a viewer stays, on average
KEEP = 500  # finished lines the logbook keeps
GREETINGS = [f"Welcome, night owl number {k}!" for k in range(8)]
OPENERS = [f"Here is a thought about topic {k}." for k in range(16)]
BACKOFF = Path(__file__).resolve().parent / "backoff.mjs"


def joins_per_minute(hour: float) -> float:
    """Viewers arriving, by hours after 20:00: an evening crowd, thin at 4 a.m., a morning."""
    return 0.3 + 2.7 * math.exp(-(((hour - 1.5) / 2.0) ** 2)) + 1.2 * max(0.0, hour - 9.5)


@dataclass
class Night:
    seed: int
    lost: int = 0  # accepted lines the logbook no longer had after the restart
    clock_backwards: int = 0
    bound_missed: float = 0.0  # share of reads whose error the bound did not cover
    unknowable_s: float = 0.0  # from the step to the first reading that shows it
    grew: int = 0  # the cache or the logbook past its bound
    silences_over: int = 0  # nothing on the air longer than the autopilot's gap (and a tick)
    longest_silence_s: float = 0.0  # the restart's aside
    restart_silence_s: float = 0.0  # from the server's going to its first line after
    made: dict[str, list[int]] = field(default_factory=dict)  # syntheses a minute, by variant
    viewers_peak: int = 0
    viewers_at_restart: int = 0
    back_peak: int = 0  # pages back in the busiest second after the restart
    switches: int = 0
    levels: set[int] = field(default_factory=set)

    @property
    def incidents(self) -> int:
        return (
            self.lost + self.clock_backwards + (self.bound_missed > 0) + self.grew
            + self.silences_over
        )  # fmt: skip


class SimStage:
    """What the autopilot asks of the stage, on the simulated night: whether it is quiet, and
    a line to say (the loop below speaks it)."""

    def __init__(self, quiet: Callable[[], bool]) -> None:
        self._quiet = quiet
        self.taken: list[Utterance] = []

    @property
    def quiet(self) -> bool:
        return self._quiet()

    def submit(
        self, text: str, character: RoleConfig, mode: str, cache: bool = False, source: str = ""
    ) -> Utterance:
        utt = Utterance(text, character.name, mode, character, cache=cache, source=source)
        self.taken.append(utt)
        return utt

    def withdraw(self, source: str, why: str) -> list[str]:
        return []  # no host acts in the simulation


def reconnects(viewers: int, down_s: float, seed: int) -> list[float]:
    """When each page is back, s after the server went away (the page's own backoff)."""
    out = subprocess.run(
        ["node", "--no-warnings", str(BACKOFF), str(viewers), str(round(down_s * 1000)), str(seed)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return [ms / 1000 for ms in json.loads(out.stdout)]


class SimTime:
    def __init__(self) -> None:
        self.s = 0.0

    def epoch(self) -> float:
        return START.timestamp() + self.s

    def local(self) -> dt.time:
        return (START + dt.timedelta(seconds=self.s)).time()


async def _night(
    seed: int,
    cache_cfg: CacheConfig,
    night_cfg: NightConfig,
    autopilot_cfg: AutopilotConfig,
    folder: Path,
) -> Night:
    rng = random.Random(seed)
    t = SimTime()
    fig = Night(seed)
    variants = {"shipped": (cache_cfg.jitter, cache_cfg.stale_s), "aligned": (0.0, 0.0)}
    files = {name: folder / f"{name}.sqlite" for name in variants}
    made = {name: [0] * (HOURS * 60) for name in variants}  # by the minute

    def open_caches() -> dict[str, Cache]:
        return {
            name: Cache(
                SQLiteStore(files[name], cache_cfg.max_entries), cache_cfg.ttl_s, stale, jitter,
                clock=t.epoch, rng=random.Random(seed * 7 + k),
            )
            for k, (name, (jitter, stale)) in enumerate(variants.items())
        }  # fmt: skip

    def open_ladder() -> Ladder:
        ladder = Ladder(night_cfg, clock=lambda: t.s)
        ladder.listeners.append(lambda level, why: fig.levels.add(level))
        return ladder

    caches, ladder = open_caches(), open_ladder()
    book = Logbook(folder / "logbook.sqlite", keep_utterances=KEEP)
    leave = np.random.default_rng(seed)
    viewers, queue, serial = 0, list[str](), itertools.count()
    on_air: str | None = None
    speaking_until = 0.0
    stage = SimStage(lambda: on_air is None and not queue)
    quiet_since: float | None = 0.0

    def open_autopilot() -> Autopilot:
        """The show's own autopilot, on the simulated clock: a few words on a topic after
        `max_silence_s` of quiet (the greetings come with each join below)."""
        cfg = dataclasses.replace(autopilot_cfg, enabled=True, greet=False, answer_chat="off")
        return Autopilot(
            cfg, stage=lambda: cast(Stage, stage), chat=list, answered=lambda c, u: None,
            is_answered=lambda c: False, viewers=lambda: viewers, role=RoleConfig(),
            clock=lambda: t.s, rng=random.Random(seed),
        )  # fmt: skip

    autopilot = open_autopilot()

    async def line(text: str) -> None:
        for name, cache in caches.items():
            minute = int(t.s // 60)

            async def make(name: str = name, minute: int = minute) -> bytes:
                made[name][minute] += 1
                return text.encode()

            await cache.get(text, make)
        accept(text)

    def accept(text: str) -> None:
        uid = f"{seed}-{next(serial)}"
        book.accepted(uid, "host", "verbatim", text, t.epoch() * 1000)
        queue.append(uid)

    for second in range(HOURS * 3600):
        t.s = float(second)
        if second == RESTART_S:  # the server stops; what it kept is opened again
            fig.viewers_at_restart = viewers
            book.close()
            for cache in caches.values():
                await cache.drain()  # a clean stop: what was being made is kept first
                await cache.store.close()
            t.s += DOWN_S
            book = Logbook(folder / "logbook.sqlite", keep_utterances=KEEP)
            caches, ladder, autopilot = open_caches(), open_ladder(), open_autopilot()
            kept = {row["id"] for row in book.unfinished()}
            fig.lost += sum(1 for uid in [*queue, on_air] if uid is not None and uid not in kept)
            if on_air is not None:  # as server/show/resuming.py does: reported failed
                book.changed(on_air, "failed")
                on_air = None
            back = np.floor(reconnects(viewers, DOWN_S, seed))
            fig.back_peak = int(np.bincount(back.astype(int)).max()) if viewers else 0
        hour = t.s / 3600
        if rng.random() < joins_per_minute(hour) / 60:
            viewers += 1
            await line(rng.choice(GREETINGS))
        viewers -= int(leave.binomial(viewers, 1 / STAY_S))
        fig.viewers_peak = max(fig.viewers_peak, viewers)
        if second % 45 == 0:
            await line(rng.choice(OPENERS))
        autopilot.tick()
        for utt in stage.taken:  # a topic: the LLM's reply, not cached
            accept(utt.text)
        stage.taken.clear()
        if t.s >= speaking_until:  # the line on the air is done; the next one speaks
            if on_air is not None:
                book.changed(on_air, "done")
            on_air = queue.pop(0) if queue else None
            if on_air is not None:
                book.changed(on_air, "on_air")
                speaking_until = t.s + LINE_S
        if on_air is None and quiet_since is None:
            quiet_since = t.s
        elif on_air is not None and quiet_since is not None:
            quiet = t.s - quiet_since
            if quiet_since < RESTART_S <= t.s:
                fig.restart_silence_s = quiet
            else:
                fig.longest_silence_s = max(fig.longest_silence_s, quiet)
                # the autopilot speaks once the gap has passed, at its next look (a second)
                fig.silences_over += quiet > autopilot_cfg.max_silence_s + 1.0
            quiet_since = None
        if second % 10 == 0:
            cpu = min(1.0, 0.03 + 0.002 * viewers + rng.gauss(0, 0.01))
            reading = Reading(
                t.s, t.local(), max(0.0, cpu), None, len(queue), 0.8 + 0.002 * viewers,
                0.01, 0.0, 0.02,
            )  # fmt: skip
            if ladder.observe(reading):
                fig.switches += 1
    book.trim()
    fig.grew += int(book.size() > KEEP + len(queue) + 1)
    book.close()
    for cache in caches.values():
        await cache.drain()
        store = cache.store
        assert isinstance(store, SQLiteStore)  # the simulation keeps its caches on SQLite
        fig.grew += int(store.size() > cache_cfg.max_entries)
        await store.close()
    fig.made = made
    fig.levels.add(0)
    trace = run([SimNTP()], HOURS * 3600, reference=Reference(steps=((STEP_S, STEP),)), seed=seed)
    fig.clock_backwards = int(trace.backwards())
    # from the step to the first reading that shows it nothing can know of it: not counted
    fig.bound_missed = float(trace.uncovered(STEP_S).sum() / trace.knowable(STEP_S).sum())
    fig.unknowable_s = trace.first_reading("ntp", STEP_S) - STEP_S
    return fig


def simulate(
    nights: int, cache_cfg: CacheConfig, night_cfg: NightConfig, autopilot_cfg: AutopilotConfig
) -> list[Night]:
    out = []
    for seed in range(nights):
        with tempfile.TemporaryDirectory() as folder:
            night = _night(seed, cache_cfg, night_cfg, autopilot_cfg, Path(folder))
            out.append(asyncio.run(night))
        print(f"  night {seed + 1}/{nights}: {out[-1].incidents} incidents", flush=True)
    return out
