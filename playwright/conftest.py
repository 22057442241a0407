"""End-to-end fixtures: a real Allnighter server (real models) and real Chromium (Debian's).

No browser is downloaded: Playwright drives /usr/bin/chromium (or $ALLNIGHTER_CHROMIUM).
Missing Chromium is a failure, not a skip: `make test` installs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from server.bench import inprocess
from server.bench.browser import behind_the_browser, chromium_path, launch
from server.bench.inprocess import LiveServer, request
from server.config import load_config

TOKEN = "e2e-host-token-0123"
SHOTS = Path(__file__).resolve().parent.parent / ".artifacts" / "screenshots"


@pytest.fixture(scope="session")
def browser() -> Browser:
    with sync_playwright() as p:
        if chromium_path() is None:
            pytest.fail("Chromium is not installed (make test installs Debian's chromium)")
        b = launch(p)
        yield b
        b.close()


def e2e_config(**stage: Any) -> Any:
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    cfg.load_asr = False  # the ASR checker is not what these tests look at; it costs CPU
    cfg.chat.burst = 3
    # the same show at any hour: a run inside the night window (or after 15 quiet minutes)
    # would otherwise speak at the night's level, and the tests that need a level pin it
    cfg.night.triggers = False
    for key, value in stage.items():
        setattr(cfg.stage, key, value)
    return cfg


@pytest.fixture(scope="session")
def show(browser: Browser) -> LiveServer:
    """The show with its real models (SmolLM2, Piper), loaded once for every browser test.

    Its threads run 5 nice values below the browser launched before it, as in `bench lipsync`:
    a viewer's browser has the viewer's machine to itself. Sharing two cores evenly, a page
    missed vsyncs where the server synthesized a line's next words, and with other processes
    on the machine the lip-sync test's p95 once read 17 ms against its 15.
    """
    restore = behind_the_browser()
    try:
        srv = LiveServer(e2e_config()).start(ready_timeout=600)
        yield srv
        srv.stop()
    finally:
        restore()


class Host:
    """The host API, called the way a host's tool would (plain HTTP with the token)."""

    def __init__(self, srv: LiveServer) -> None:
        self.srv = srv

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, Any]:
        return self.srv.call(request(self.srv, method, path, body))

    def say(self, text: str, mode: str = "verbatim") -> str:
        status, body = self.call("POST", "/api/v1/say", {"text": text, "mode": mode})
        assert status == 202, body
        return body["utterance_id"]

    def interrupt(self) -> dict:
        status, body = self.call("POST", "/api/v1/interrupt", {})
        assert status == 200, body
        return body


@pytest.fixture
def host(show: LiveServer) -> Host:
    return Host(show)


def open_host(browser: Browser, url: str) -> Page:
    """The host panel in a new tab (not signed in)."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors  # type: ignore[attr-defined]
    page.goto(url + "/host")
    return page


def sign_in(page: Page, token: str = TOKEN) -> None:
    page.fill("#token", token)
    page.click("#login")


def open_desk(browser: Browser, url: str) -> Page:
    """The host panel, signed in with the right token."""
    page = open_host(browser, url)
    sign_in(page)
    expect(page.locator("#desk")).to_be_visible()
    return page


def screenshot(page: Page, name: str, **kw: Any) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), **kw)
    return path


def until_final(host: Host, utt_id: str, timeout: float = 60.0) -> dict:
    """Wait until an utterance is done, interrupted or failed; returns its record."""
    return host.srv.call(inprocess.until_final(host.srv, utt_id, timeout), timeout + 10)
