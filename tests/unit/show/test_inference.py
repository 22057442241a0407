"""Model threads yield to the thread that runs the server, by their own step below it."""

from __future__ import annotations

import os
import threading

import pytest

from server.show.inference import ModelThread

linux_nice = pytest.mark.skipif(
    not hasattr(os, "getpriority") or not os.path.isdir("/proc/self/task"),
    reason="per-thread nice values are Linux's",
)


def _own_nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _nice_of_thread_started_at(base: int, step: int) -> int:
    """The nice value a ModelThread(step) runs at when a thread at nice `base` calls it."""
    got = []

    def server() -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), base)
        worker = ModelThread("probe", nice=step)
        got.append(worker.run_sync(_own_nice))
        worker.shutdown()

    t = threading.Thread(target=server)
    t.start()
    t.join(10)
    return got[0]


@linux_nice
def test_a_model_thread_keeps_its_step_below_a_server_run_under_nice():
    assert _nice_of_thread_started_at(0, 10) == 10
    assert _nice_of_thread_started_at(5, 10) == 15  # not 10: still below the server's loop
    assert _nice_of_thread_started_at(5, 19) == 19  # as low as Linux goes


@linux_nice
def test_a_model_thread_without_a_step_runs_as_the_server_does():
    assert _nice_of_thread_started_at(3, 0) == 3
