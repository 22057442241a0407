"""Playwright calls with a deadline: past it, the browser's processes are killed.

A synchronous Playwright call waits for the browser's answer with no limit of its own
(`page.evaluate` takes no timeout). Twice a real hour ended with two of its five tabs dead:
their renderers exited, the browser never reaped them, and the next call on those pages never
returned, so the hour's figures were never read. Killing the browser ends every call waiting
on it: each raises, and the run goes on without its pages.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from .browser import TAG_SWITCH


def processes() -> dict[int, tuple[int, str]]:
    """Every process: its parent's pid and its command line."""
    out: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid …": comm may hold spaces and parentheses
        out[int(entry.name)] = (int(stat[stat.rindex(")") + 2 :].split()[1]), cmdline)
    return out


def below(tree: dict[int, tuple[int, str]], roots: Iterable[int]) -> set[int]:
    """`roots` (those in `tree`, from processes()) and every process under them."""
    out = {pid for pid in roots if pid in tree}
    grown = True
    while grown:
        under = {pid for pid, (ppid, _) in tree.items() if ppid in out} - out
        out |= under
        grown = bool(under)
    return out


def of_browser(tag: str, tree: dict[int, tuple[int, str]]) -> set[int]:
    """The browser launched with `tag` (browser.launch) and every process under it."""
    return below(tree, [pid for pid, (_, cmd) in tree.items() if f"{TAG_SWITCH}={tag}" in cmd])


def kill_browser(tag: str) -> int:
    """SIGKILL the browser launched with `tag` (browser.launch) and every process under it;
    how many were killed."""
    killed = 0
    for pid in of_browser(tag, processes()):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


@contextlib.contextmanager
def answered_within(tag: str, seconds: float) -> Iterator[threading.Event]:
    """Run the calls inside within `seconds`, or the browser tagged `tag` is killed (the
    event yielded is set if it was)."""
    killed = threading.Event()

    def expire() -> None:
        killed.set()
        kill_browser(tag)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield killed
    finally:
        timer.cancel()
