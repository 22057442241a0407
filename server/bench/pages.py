"""The stage pages a long run watches through, asked for their figures within a deadline.

A tab can die in a long run (its renderer crashed or was killed): a viewer would see the
browser's error page, and a call on it may never return. Such a tab is counted, and left out:
the other tabs' figures are still read. A browser that does not answer at all within
DEADLINE_S is killed (deadline.py), and nothing more is asked of it.

On this machine Chromium's zygote, the process every renderer is forked from, once spun in the
kernel from the browser's first minute on (60 % of a core, never blocking again): no tab could
be opened, and dead renderers were left unreaped, which is how two hours ended with tabs that
never answered; a later run's spun from its start, its tabs open. So the pages open within
OPEN_S, and then the zygotes are idle, or the browser is killed and launched again.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .browser import launch
from .cores import confine_browser
from .cputime import CpuReader
from .deadline import answered_within, kill_browser
from .watcher import STATS_PERIOD_S, Watcher

DEADLINE_S = 120.0  # for the five pages' figures of a window (seconds, normally)
OPEN_S = 120.0  # for a browser to open the pages (5-10 s, normally)
LAUNCHES = 2
SPIN_CORES, SPIN_CHECK_S = 0.2, 3.0  # a zygote this busy (cores) with the pages open spins
T = TypeVar("T")
Marks = list[tuple[Watcher, tuple[float, float]]]  # where each live page's window begins


def zygotes_busy(tag: str) -> float:
    """How busy the zygotes of the browser launched with `tag` are, in cores (CPU s a second),
    over SPIN_CHECK_S: with its pages open they have nothing to do."""
    reader = CpuReader(-1, tag)
    reader.read(time.monotonic())
    time.sleep(SPIN_CHECK_S)
    return (reader.read(time.monotonic()) or {}).get("zygotes", 0.0)


def open_pages(pw: Any, tag: str, url: str, n: int) -> tuple[Any, list[Watcher], str]:
    """A browser with `n` watchers on `url`, opened within OPEN_S with its zygotes idle (tried
    LAUNCHES times, a new browser each), on this thread's cores, and the tag it was launched
    with (`tag`, numbered)."""
    from playwright.sync_api import Error

    for attempt in range(1, LAUNCHES + 1):
        tagged = f"{tag}-{attempt}"
        browser = launch(pw, tagged)
        try:
            with answered_within(tagged, OPEN_S):
                watchers = [Watcher(browser, url) for _ in range(n)]
        except Error as exc:
            kill_browser(tagged)  # where a page failed on its own, the browser still runs
            print(f"the browser did not open {n} pages within {OPEN_S:g} s: {exc}", flush=True)
            continue
        confine_browser(tagged)
        spin = zygotes_busy(tagged)
        if spin <= SPIN_CORES:
            return browser, watchers, tagged
        kill_browser(tagged)
        print(f"the zygotes spun ({spin:.2f} of a core, pages open): launched again", flush=True)
    raise RuntimeError(f"no browser opened {n} pages in {LAUNCHES} launches")


class Pages:
    """The watchers of one browser (launched with `tag`: browser.launch)."""

    def __init__(self, watchers: list[Watcher], tag: str, deadline_s: float = DEADLINE_S) -> None:
        self.watchers, self.tag, self.deadline_s = watchers, tag, deadline_s
        self.killed_at: float | None = None  # monotonic s: the browser did not answer

    @property
    def alive(self) -> list[Watcher]:
        if self.killed_at is not None:
            return []
        return [w for w in self.watchers if w.crashed_at is None]

    def marks(self) -> Marks:
        """Where each live page's window begins."""
        return self._answered(lambda w: (w, w.mark()))

    def figures(self, marks: Marks) -> dict[str, list[float]]:
        """Every page's figures since its mark, together (a tab that died leaves its out)."""
        since = dict(marks)
        self.wait(STATS_PERIOD_S + 0.5)  # each page's last report
        out: dict[str, list[float]] = {}
        for figures in self._answered(lambda w: w.figures(since[w], wait=False), list(since)):
            for key, values in figures.items():
                out.setdefault(key, []).extend(values)
        return out

    def forget(self, marks: Marks | None) -> list[float | None]:
        """Each live page's probe keeps only its records since its mark (the last minute's,
        with none); each page's JS heap in use after, MB."""
        since = dict(marks or [])
        return self._answered(lambda w: w.forget(since.get(w)))

    def wait(self, seconds: float) -> None:
        """Sleep, while Playwright takes the pages' events, on a live page's clock. A tab that
        crashed before its event came fails to wait: the next one waits (and its event comes
        meanwhile), or with none left it is a plain sleep."""
        from playwright.sync_api import Error

        for w in self.alive:
            with contextlib.suppress(Error):
                w.wait(seconds)
                return
        time.sleep(seconds)

    def crashes(self) -> list[float]:
        """When tabs died (monotonic s)."""
        return sorted(w.crashed_at for w in self.watchers if w.crashed_at is not None)

    def _answered(self, ask: Callable[[Watcher], T], among: list[Watcher] | None = None) -> list[T]:
        """`ask` of every live page (of those `among`), within the deadline in all, or the
        browser is killed."""
        from playwright.sync_api import Error

        out: list[T] = []
        try:
            with answered_within(self.tag, self.deadline_s):
                for w in self.alive:
                    if among is not None and w not in among:
                        continue
                    try:
                        out.append(ask(w))
                    except Error:
                        self.wait(0.5)  # its crash event, where that was the cause
                        if w.crashed_at is None:
                            raise
        except Error as exc:
            self.killed_at = time.monotonic()
            print(f"the pages did not answer within {self.deadline_s:g} s: {exc}", flush=True)
        return out
