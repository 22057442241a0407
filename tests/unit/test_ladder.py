"""The fallback ladder on a simulated clock: the night window, sustained low load and strain
each want a level; hysteresis keeps an oscillating load from flapping it; the host's pin wins."""

from __future__ import annotations

import datetime as dt
import math

from server.config import NightConfig
from server.night.ladder import Ladder, Reading, in_window


class SimTime:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def reading(t: float, local: str = "20:00", **over) -> Reading:
    quiet = {
        "cpu": 0.5,
        "gpu_memory_mb": None,
        "tts_jobs": 5,
        "ttfa_p99_s": 1.0,
        "loop_lag_p99_s": 0.005,
        "frames_late": 0.0,
        "rss_growth": 0.0,
    }
    return Reading(at=t, local=dt.time.fromisoformat(local), **{**quiet, **over})


def feed(ladder: Ladder, sim: SimTime, seconds: float, every: float = 5.0, **over) -> list[int]:
    levels = []
    for _ in range(int(seconds / every)):
        sim.t += every
        over_now = {k: (v(sim.t) if callable(v) else v) for k, v in over.items()}
        ladder.observe(reading(sim.t, **over_now))
        levels.append(ladder.level)
    return levels


def test_the_night_window_crosses_midnight():
    t = dt.time.fromisoformat
    assert in_window(t("02:00"), t("01:00"), t("06:00"))
    assert not in_window(t("06:00"), t("01:00"), t("06:00"))
    assert in_window(t("23:30"), t("22:00"), t("02:00")) and in_window(
        t("01:59"), t("22:00"), t("02:00")
    )
    assert not in_window(t("12:00"), t("22:00"), t("02:00"))


def test_the_night_window_wants_its_level_and_says_so():
    sim = SimTime()
    ladder = Ladder(NightConfig(night_level=1), sim)
    assert feed(ladder, sim, 60, local="00:59")[-1] == 0
    assert feed(ladder, sim, 10, local="01:00")[-1] == 1
    assert ladder.reason == "the night window" and ladder.night
    assert feed(ladder, sim, 10, local="06:00")[-1] == 0


def test_sustained_low_load_steps_down_after_fifteen_minutes_only():
    sim = SimTime()
    ladder = Ladder(NightConfig(economy_level=1), sim)
    low = {"cpu": 0.05, "tts_jobs": 0}
    levels = feed(ladder, sim, 14 * 60, **low)
    assert set(levels) == {0}
    assert feed(ladder, sim, 90, **low)[-1] == 1 and ladder.reason == "low load"
    # back to work: economy ends once the load is back for a minute
    assert feed(ladder, sim, 70, cpu=0.6, tts_jobs=6)[-1] == 0


def test_strain_steps_up_a_level_a_minute_and_down_a_level_per_five_calm_minutes():
    sim = SimTime()
    ladder = Ladder(NightConfig(enter_s=60, leave_s=300), sim)
    levels = feed(ladder, sim, 200, ttfa_p99_s=4.0)  # over its 3 s budget
    assert levels[-1] == 3 and ladder.reason.startswith("strain: text-to-first-audio p99")
    assert feed(ladder, sim, 290)[-1] == 3  # calm, not long enough yet
    assert feed(ladder, sim, 20)[-1] == 2
    assert feed(ladder, sim, 600)[-1] == 0


def test_a_load_oscillating_around_its_line_does_not_flap_the_ladder():
    sim = SimTime()
    ladder = Ladder(NightConfig(enter_s=60, leave_s=300), sim)
    # text-to-first-audio swinging ±10 % around its budget every 40 s, for two hours
    swing = lambda t: 3.0 * (1 + 0.1 * math.sin(2 * math.pi * t / 40))  # noqa: E731
    feed(ladder, sim, 7200, ttfa_p99_s=swing)
    assert ladder.switches == 0
    # held over the line it steps up once; swinging just under it, it does not step down
    feed(ladder, sim, 65, ttfa_p99_s=3.3)
    assert ladder.level == 1
    just_under = lambda t: 3.0 * (0.9 + 0.05 * math.sin(2 * math.pi * t / 40))  # noqa: E731
    feed(ladder, sim, 7200, ttfa_p99_s=just_under)
    assert ladder.level == 1 and ladder.switches == 1


def test_the_hosts_pin_wins_until_unpinned():
    sim = SimTime()
    ladder = Ladder(NightConfig(), sim)
    heard = []
    ladder.listeners.append(lambda level, why: heard.append((level, why)))
    ladder.pin(3)
    assert feed(ladder, sim, 30, local="02:00")[-1] == 3
    assert ladder.to_json()["pinned"] and ladder.reason == "pinned by the host"
    ladder.pin(0)
    assert feed(ladder, sim, 30, local="02:00")[-1] == 0
    ladder.pin(None)
    assert feed(ladder, sim, 10, local="02:00")[-1] == 1
    assert heard == [(3, "pinned by the host"), (0, "pinned by the host"), (1, "the night window")]


def test_with_its_triggers_off_only_the_pin_moves_it():
    sim = SimTime()
    ladder = Ladder(NightConfig(triggers=False), sim)
    assert set(feed(ladder, sim, 600, local="02:00", ttfa_p99_s=9.0)) == {0}
    ladder.pin(2)
    assert ladder.level == 2
