"""A blocked event loop is reported with the call that blocked it."""

import asyncio
import logging
import time

from server.stalls import StallWatch


def hold_the_loop_for_a_while():
    time.sleep(0.8)  # the kind of call that must never run on the event loop


def watched(caplog, beats_before: int, block=None, beats_after: int = 0, stall_s: float = 0.25):
    """A loop that beats every 50 ms, around an optional blocking call, under a stall watch
    that reports a beat `stall_s` late: the watch, and what it logged."""

    async def run(watch):
        watch.start()
        for _ in range(beats_before):
            await asyncio.sleep(0.05)
            watch.beat()
        if block is not None:
            block()
        for _ in range(beats_after):
            await asyncio.sleep(0.05)
            watch.beat()

    watch = StallWatch(stall_s, beat_s=0.05)
    with caplog.at_level(logging.WARNING, logger="server.stalls"):
        asyncio.run(run(watch))
    watch.stop()
    return watch, [r.getMessage() for r in caplog.records]


def test_a_blocked_loop_is_logged_once_with_the_blocking_call(caplog):
    watch, reports = watched(caplog, 3, hold_the_loop_for_a_while, 5)
    assert watch.stalls == 1 and len(reports) == 1, reports
    assert "event loop blocked" in reports[0]
    loop_stack = reports[0].split("--- ")[1]
    assert loop_stack.startswith("event loop") and "hold_the_loop_for_a_while" in loop_stack


def test_a_loop_that_keeps_beating_is_never_reported(caplog):
    watch, reports = watched(caplog, 12)
    assert watch.stalls == 0 and not reports


def hold_the_loop_briefly():
    time.sleep(0.25)  # a quarter second: a few frames of audio late


def test_a_lower_threshold_names_a_shorter_stall(caplog):
    _, quiet = watched(caplog, 3, hold_the_loop_briefly, 3, stall_s=0.5)
    assert not quiet  # under half a second beyond a beat, not reported
    caplog.clear()
    watch, reports = watched(caplog, 3, hold_the_loop_briefly, 3, stall_s=0.1)
    assert watch.stalls == 1 and "hold_the_loop_briefly" in reports[0].split("--- ")[1]
