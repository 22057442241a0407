"""Real Chromium for the end-to-end tests and `bench lipsync`: Debian's build, driven by
Playwright (no browser download), and the probe that watches a stage page from outside."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.show.inference import lower_priority

# Playwright's own --disable-features list would be dropped if we passed ours, so nothing is
# disabled here: the server strips mDNS candidates instead.
CHROMIUM_ARGS = [
    "--autoplay-policy=no-user-gesture-required",
    "--allow-loopback-in-peer-connection",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    # Without a GPU, compositing the page through SwiftShader took 1.7 cores for a canvas
    # that only clears: the stage drew 27-34 fps on two cores, with 50 ms frame jitter, and a
    # viseme waits for a frame. Software compositing (what Chromium does where a GPU is
    # blocklisted) leaves WebGL on SwiftShader: 48-56 fps, 17 ms jitter.
    "--disable-gpu-compositing",
]
TAG_SWITCH = "--allnighter-run"  # unknown to Chromium, which ignores it
PROBE = (Path(__file__).resolve().parent / "probe.js").read_text()
READY = (
    "() => window.allnighter && window.allnighter.state().connected"
    " && window.allnighter.state().audio_playing"
)


# A viewer's browser runs on the viewer's machine; here it shares two cores with the server.
# Shared evenly, the page missed a vsync in 1-2 % of its frames, most while speech played, and a
# viseme onset in a missed frame was drawn up to a frame late: the late tail of the page's
# every-onset figure. With the server's threads 5 nice values below the browser, two rounds of
# 30 lines (one server, turn about with even sharing) drew none of 1738 onsets more than 11 ms
# late, against 6 of 1743 more than 15 ms, at the same 59-60 fps. (A core of its own instead
# left the browser one: 29-46 fps, and line starts drawn up to 23 ms late.) The misses left
# gather around line starts, where Piper synthesizes the line's next sentences; they stayed
# with every server thread at SCHED_IDLE, and went with the audio synthesized beforehand: the
# two share caches and memory, not only cores (docs/sync.md, "Frame timing"). Where Linux's
# autogroup is on, a nice value weighs only inside a session, and Playwright starts the browser
# in a session of its own: the whole session the server runs in (its process, the Playwright
# driver, the shell that started them) is put the same step behind the browser's session too,
# for as long as the server runs. Without it, the 20-line lip-sync test read |p95| 16.6 ms
# against its 15 in one of four rounds on two cores (2 of 80 line starts over 15 ms); with
# it, 6.9-9.5 ms in six (1 of 120).
SERVER_NICE = 5
AUTOGROUP = Path("/proc/self/autogroup")


def behind_the_browser(step: int = SERVER_NICE) -> Callable[[], None]:
    """Run the calling thread, and every thread it starts from now on (the server's), `step`
    nice values below the browser launched before it; its session's autogroup too, until the
    returned callable puts that back (it outlives the process: the shell's session)."""
    lower_priority(step)
    before = _autogroup_nice()
    if before is None:
        return lambda: None
    _set_autogroup_nice(min(19, before + step))
    return lambda: _set_autogroup_nice(before)


def _autogroup_nice() -> int | None:
    """This session's autogroup nice value ("/autogroup-70 nice 0"); None without autogroup."""
    try:
        return int(AUTOGROUP.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def _set_autogroup_nice(nice: int) -> None:
    try:  # a higher value needs no privilege; one not higher than it was is allowed back
        AUTOGROUP.write_text(str(nice))
    except OSError:
        pass


def chromium_path() -> str | None:
    """Debian's Chromium, or $ALLNIGHTER_CHROMIUM; None when neither is installed."""
    path = os.environ.get("ALLNIGHTER_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return path if Path(path).exists() else None


def launch(playwright: Any, tag: str | None = None) -> Any:
    """Chromium; `tag` marks its command line (a switch it ignores), for deadline.py to find
    its processes by."""
    path = chromium_path()
    if path is None:
        raise RuntimeError("Chromium is not installed (apt-get install chromium)")
    args = CHROMIUM_ARGS + ([f"{TAG_SWITCH}={tag}"] if tag else [])
    return playwright.chromium.launch(executable_path=path, args=args)


# A small window: the page is composited in software, and at 1280×720 that drew 25-30 fps on
# two cores, with frames spreading the lip-sync figures over ±30 ms and a frame's paint
# holding the page's main thread for 50-200 ms, events and all. At 800×450, 35-50 fps.
VIEWPORT = {"width": 800, "height": 450}


def open_stage(
    browser: Any, url: str, timeout_ms: int = 20_000, before: Callable[[Any], None] | None = None
) -> Any:
    """A new viewer tab on the stage page (VIEWPORT), waited on until it hears the broadcast;
    `before(page)` runs before it loads (to listen from its first request)."""
    page = browser.new_page(viewport=VIEWPORT)
    if before is not None:
        before(page)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    try:
        page.goto(url)
        page.wait_for_function(READY, timeout=timeout_ms)
    except Exception:
        page.close()  # a tab that never came up must not go on loading the machine
        raise
    return page


def probe(page: Any) -> None:
    """Start the independent per-frame observer (its own analyser) on a stage page."""
    page.evaluate(PROBE)


def records(page: Any, since: float) -> list[dict]:
    """The probe's records since `since` (epoch ms). They come as one JSON string, which the
    json module parses in C: returned as objects, Playwright turned them into Python value by
    value, 7.3 s for 10 minutes of frames (0.5 s as a string), in the interpreter the server's
    loop thread shares; its broadcast skipped 50-70 frames each time."""
    return json.loads(page.evaluate("(t) => JSON.stringify(window.__probe.since(t))", since))


def now_ms(page: Any) -> float:
    return page.evaluate("() => window.__probe.now()")
