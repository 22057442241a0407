"""Who blocked the event loop: when its heartbeat stops for half a second, every thread's stack
is logged once, so a stall at 2 a.m. names its cause, not just its length (the broadcast only
knows it had to skip frames). The culprit is the loop thread's own call, or, when the loop
waited for the GIL, whichever other thread held it."""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback

log = logging.getLogger(__name__)


class StallWatch:
    """`beat()` from the event loop every `beat_s`; a thread beside it reports a beat that is
    late by more than `stall_s` (looking four times within that)."""

    def __init__(self, stall_s: float = 0.4, beat_s: float = 0.1) -> None:
        self.after_s = beat_s + stall_s
        self.poll_s = min(0.1, stall_s / 4)
        self.last_beat = time.monotonic()
        self.loop_thread = threading.get_ident()
        self.stalls = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Called on the loop's thread: that is the thread whose beats are watched."""
        self.loop_thread = threading.get_ident()
        self.beat()
        self._thread = threading.Thread(target=self._watch, name="stall-watch", daemon=True)
        self._thread.start()

    def beat(self) -> None:
        self.last_beat = time.monotonic()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)

    def _watch(self) -> None:
        reported = False
        while not self._stop.wait(self.poll_s):
            late = time.monotonic() - self.last_beat
            if late < self.after_s:
                reported = False
            elif not reported:
                reported = True
                self.stalls += 1
                report = stacks(self)
                log.warning("event loop blocked for %.2f s so far; threads:\n%s", late, report)


def stacks(watch: StallWatch) -> str:
    """Every thread's stack but the watcher's, the loop's first."""
    names = {t.ident: t.name for t in threading.enumerate()}
    frames = sys._current_frames()
    order = sorted(frames, key=lambda ident: ident != watch.loop_thread)
    out = []
    for ident in order:
        if ident == threading.get_ident():
            continue
        label = "event loop" if ident == watch.loop_thread else names.get(ident, str(ident))
        out.append(f"--- {label}\n" + "".join(traceback.format_stack(frames[ident], limit=12)))
    return "\n".join(out)
