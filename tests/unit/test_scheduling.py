"""The role scheduler on a clock of its own: weight first, a role keeps the floor for 300 ms,
waiting ages a line up so nothing starves, and each role's queue is bounded with its name."""

from __future__ import annotations

import asyncio

import pytest

from server.config import RoleConfig
from server.show.scheduling import CONTINUITY_S, RoleQueue
from server.show.utterances import QueueFull, Utterance


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def line(role: str, text: str = "a line") -> Utterance:
    return Utterance(text, role, "verbatim", RoleConfig(name=role))


def pick(queue: RoleQueue) -> Utterance:
    return asyncio.run(queue.get())


def test_lines_that_came_together_go_by_their_roles_weight_then_by_arrival():
    clock = Clock()
    queue = RoleQueue(10, {"extra": 1.0, "lead": 4.0, "narrator": 2.0}, clock=clock)
    for role in ("extra", "narrator", "lead", "extra"):
        queue.put(line(role, f"{role} {len(queue)}"))
    assert [u.text for u in queue.waiting()] == ["lead 2", "narrator 1", "extra 0", "extra 3"]
    assert [pick(queue).text for _ in range(4)] == ["lead 2", "narrator 1", "extra 0", "extra 3"]


def test_a_role_whose_line_just_ended_keeps_the_floor_for_300_ms_only():
    clock = Clock()
    queue = RoleQueue(10, {"a": 1.0, "b": 1.2}, clock=clock)
    queue.put(line("b"))
    queue.put(line("a"))
    queue.finished("a")  # a's line ended now: 1 × 1.5 outranks 1.2
    assert pick(queue).role == "a"
    queue.put(line("a"))
    clock.t += CONTINUITY_S + 0.01  # the window passed: b's weight wins again
    assert pick(queue).role == "b"


def test_the_ranking_the_host_sees_is_evaluated_again_every_50_ms():
    # every waiting line ages alike, so the order changes only as a role's floor runs out
    clock = Clock()
    queue = RoleQueue(10, {"a": 1.0, "b": 1.2}, clock=clock)
    queue.put(line("a"))
    queue.put(line("b"))
    queue.finished("a")
    clock.t += 0.28
    assert [u.role for u in queue.waiting()] == ["a", "b"]  # a still has the floor
    clock.t += 0.03  # a's 300 ms are over, but the ranking is 30 ms old: as it was
    assert [u.role for u in queue.waiting()] == ["a", "b"]
    clock.t += 0.03  # 60 ms old: ranked again
    assert [u.role for u in queue.waiting()] == ["b", "a"]


def test_each_role_is_bounded_and_its_refusal_names_it_while_others_still_get_in():
    queue = RoleQueue(10, caps={"chorus": 2}, clock=Clock())
    queue.put(line("chorus"))
    queue.put(line("chorus"))
    with pytest.raises(QueueFull, match='role "chorus" has 2 lines waiting'):
        queue.put(line("chorus"))
    queue.put(line("soloist"))  # another role is still taken
    assert len(queue) == 3
    for _ in range(7):
        queue.put(line("soloist"))
    with pytest.raises(QueueFull, match=r"queue is full \(10\)"):
        queue.put(line("soloist"))


def heavy_load(aging_s: float) -> tuple[RoleQueue, float | None, int]:
    """Four heavy roles (weight 8) keep the queue full, each line taking 2-5 s; one light
    line (weight 1) arrives while a line is spoken. (The queue, how long the light line
    waited or None if 100 lines went before it, how many did.)"""
    clock = Clock()
    weights = {"light": 1.0, **{f"heavy{k}": 8.0 for k in range(4)}}
    caps = {f"heavy{k}": 2 for k in range(4)}
    queue = RoleQueue(8, weights, caps, clock=clock, aging_s=aging_s)
    durations = iter([2.0, 5.0, 3.0, 4.0] * 100)

    def keep_full() -> None:
        for k in range(4):
            while sum(u.role == f"heavy{k}" for u in queue.waiting()) < 2 and len(queue) < 8:
                queue.put(line(f"heavy{k}"))
                clock.t += 1e-3  # they arrive one after another

    keep_full()
    served = pick(queue)
    queue.put(line("light"))
    arrived = clock.t
    for picks in range(1, 101):
        clock.t += next(durations)
        queue.finished(served.role)
        keep_full()
        served = pick(queue)
        if served.role == "light":
            return queue, clock.t - arrived, picks
    return queue, None, 100


def test_a_light_role_under_constant_heavy_load_is_served_within_its_bound():
    queue, waited, picks = heavy_load(aging_s=2.0)
    assert waited is not None, "the light line starved"
    bound = queue.starvation_bound_s("light", longest_s=5.0, shortest_s=2.0)
    assert waited <= bound, (waited, bound)
    # in practice: after the lines waiting when it came, and those within the horizon
    assert picks <= 7 + queue.horizon_s("light") / 2.0 + 1, (picks, queue.horizon_s("light"))
    # without aging (the study's ranking by weight alone) it is never served
    _, never, _ = heavy_load(aging_s=1e12)
    assert never is None


def test_the_show_speaks_a_heavier_roles_waiting_line_first():
    from server.bench.inprocess import LiveServer, say, until_final
    from server.config import load_config
    from server.loading import Models
    from tests.conftest import TOKEN
    from tests.fakes import ToneTTS, WordsLLM

    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.roles = [RoleConfig(name="extra", weight=1.0), RoleConfig(name="lead", weight=4.0)]
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(), None)).start()

    async def run() -> list[str]:
        _, first = await say(srv, "a long opening line " * 6, role="extra")
        ids = [first["utterance_id"]]
        for role in ("extra", "extra", "lead"):  # the lead's line comes last
            ids.append((await say(srv, f"a line for the {role}", role=role))[1]["utterance_id"])
        records = [await until_final(srv, i, timeout=60) for i in ids]
        return [r["role"] for r in sorted(records, key=lambda r: r["start_sample"])]

    try:
        order = asyncio.run(run())
    finally:
        srv.stop()
    assert order == ["extra", "lead", "extra", "extra"], order


def test_a_scenes_lines_keep_their_order_whatever_their_weights():
    clock = Clock()
    queue = RoleQueue(8, {"light": 1.0, "heavy": 8.0}, clock=clock)
    first, second, third = line("light", "1"), line("heavy", "2"), line("light", "3")
    second.after, third.after = first.id, second.id
    other = line("heavy", "not in the scene")
    queue.put_all([first, second, third])
    queue.put(other)
    # the host sees the order the picks will take: the scene's lines in its order
    assert [u.text for u in queue.waiting()] == ["not in the scene", "1", "2", "3"]
    assert [pick(queue).text for _ in range(4)] == ["not in the scene", "1", "2", "3"]


def test_a_scene_line_whose_line_before_was_taken_out_may_go():
    queue = RoleQueue(8, clock=Clock())
    first, second = line("a", "1"), line("b", "2")
    second.after = first.id
    queue.put_all([first, second])
    assert queue.remove_role("a") == [first]  # a host interrupted role a
    assert pick(queue) is second


def test_lines_put_together_go_in_all_or_none_within_each_roles_cap():
    queue = RoleQueue(4, caps={"a": 2}, clock=Clock())
    queue.put(line("a"))
    with pytest.raises(QueueFull, match='role "a"'):
        queue.put_all([line("b"), line("a"), line("a")])
    with pytest.raises(QueueFull, match="full"):
        queue.put_all([line("b")] * 4)
    assert len(queue) == 1
    queue.put_all([line("a"), line("b")])
    assert len(queue) == 3


def request(role: str, n: int, tag: str) -> list[Utterance]:
    """A dubbing request's lines: each after the one before."""
    lines = [line(role, f"{tag}{k}") for k in range(n)]
    for before, after in zip(lines, lines[1:], strict=False):
        after.after = before.id
    return lines


def test_paced_requests_each_get_their_first_line_before_any_gets_its_second():
    clock = Clock()
    queue = RoleQueue(16, {"light": 1.0, "heavy": 8.0}, clock=clock)
    for tag, role in (("a", "heavy"), ("b", "heavy"), ("c", "light")):
        queue.put_all(request(role, 2, tag), paced=True)
        clock.t += 1e-3
    # unpaced, a's second line would go before b's first (it came earlier)
    assert [pick(queue).text for _ in range(3)] == ["a0", "b0", "c0"]
    # nothing due waits: a line not yet due goes rather than none (its client's line before
    # it is not made yet)
    assert pick(queue).text == "a1"


def test_a_paced_line_is_due_when_the_line_before_it_has_played():
    clock = Clock()
    queue = RoleQueue(16, clock=clock)
    first, second = request("a", 2, "x")
    queue.put_all([first, second], paced=True)
    assert pick(queue) is first
    clock.t += 0.5  # made in 0.5 s, and it plays 2 s: its client needs the next in 2 s
    queue.played(first.id, clock.t + 2.0)
    clock.t += 0.1
    earlier = line("a", "came before it was due")
    queue.put(earlier)
    clock.t += 3.0  # a line that came after it was due goes after it: earliest due first
    later = line("a", "came after it was due")
    queue.put(later)
    assert [pick(queue).text for _ in range(3)] == [earlier.text, "x1", later.text]


def test_unpaced_lines_of_a_request_keep_their_arrival():
    clock = Clock()
    queue = RoleQueue(16, clock=clock)
    queue.put_all(request("a", 2, "a"))
    clock.t += 1e-3
    queue.put_all(request("a", 2, "b"))
    assert [pick(queue).text for _ in range(4)] == ["a0", "a1", "b0", "b1"]
