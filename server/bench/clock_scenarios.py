"""The simulated scenarios `bench clock` runs: which sources report, when they fall silent or
the reference moves, the window measured, and the goal for its p99."""

from __future__ import annotations

from dataclasses import dataclass

from timesync.simulate import SimNTP, SimPTP, SimSource, lost_from


@dataclass
class Scenario:
    name: str
    sources: list[SimSource]
    start: float  # s: the measured window; before it the clock settles
    end: float
    goal_p99: float  # s
    settled: str  # what came before the window, for the table
    holdover: bool = False
    steps: tuple[tuple[float, float], ...] = ()  # (s, size s): the reference moves for good


def scenarios(minutes: float) -> list[Scenario]:
    span = minutes * 60
    return [
        Scenario("PTP healthy", [SimPTP(), SimNTP()], 60, 60 + span, 10e-6, "60 s"),
        Scenario("NTP only", [SimNTP()], 1200, 1200 + span, 500e-6, "20 min of NTP"),
        Scenario(
            "PTP lost, NTP carries",
            [SimPTP(down=lost_from(600)), SimNTP()],
            600,
            600 + span,
            500e-6,
            "10 min of PTP",
        ),
        Scenario(
            "60 s holdover after PTP",
            [SimPTP(down=lost_from(600)), SimNTP(down=lost_from(600))],
            600,
            660,
            1e-3,
            "10 min of PTP",
            holdover=True,
        ),
        Scenario(
            "60 s holdover after NTP only",
            [SimNTP(down=lost_from(1200))],
            1200,
            1260,
            1e-3,
            "20 min of NTP",
            holdover=True,
        ),
        Scenario(
            "NTP only, the reference steps 1 s",
            [SimNTP()],
            1200 + 420,
            1200 + 420 + span,
            500e-6,
            "20 min of NTP, the step, 7 min",
            steps=((1200.0, 1.0),),
        ),
    ]
