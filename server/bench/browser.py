"""Real Chromium for the end-to-end tests and `bench lipsync`: Debian's build, driven by
Playwright (no browser download), and the probe that watches a stage page from outside."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

# Playwright's own --disable-features list would be dropped if we passed ours, so nothing is
# disabled here: the server strips mDNS candidates instead.
CHROMIUM_ARGS = [
    "--autoplay-policy=no-user-gesture-required",
    "--allow-loopback-in-peer-connection",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
]
PROBE = (Path(__file__).resolve().parent / "probe.js").read_text()
READY = (
    "() => window.allnighter && window.allnighter.state().connected"
    " && window.allnighter.state().audio_playing"
)


def chromium_path() -> str | None:
    """Debian's Chromium, or $ALLNIGHTER_CHROMIUM; None when neither is installed."""
    path = os.environ.get("ALLNIGHTER_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return path if Path(path).exists() else None


def launch(playwright: Any) -> Any:
    path = chromium_path()
    if path is None:
        raise RuntimeError("Chromium is not installed (apt-get install chromium)")
    return playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)


def open_stage(browser: Any, url: str, timeout_ms: int = 20_000) -> Any:
    """A new viewer tab on the stage page, waited on until it hears the broadcast."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    page.goto(url)
    page.wait_for_function(READY, timeout=timeout_ms)
    return page


def probe(page: Any) -> None:
    """Start the independent per-frame observer (its own analyser) on a stage page."""
    page.evaluate(PROBE)


def records(page: Any, since: float) -> list[dict]:
    return page.evaluate("(t) => window.__probe.since(t)", since)


def now_ms(page: Any) -> float:
    return page.evaluate("() => window.__probe.now()")
