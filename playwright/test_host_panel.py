"""The host panel in real Chromium against the real show: sign in, say a line, the stage hears it;
answer a viewer's chat message; screenshots under .artifacts/screenshots/."""

from __future__ import annotations

import re
import time

from conftest import TOKEN, open_desk, open_host, screenshot, sign_in
from playwright.sync_api import Browser, Route, expect

from server.bench.browser import now_ms, open_stage, probe, records
from server.bench.inprocess import LiveServer
from server.bench.lipsync_figures import LOUD, OPEN

# the show's state pill: "live", and "live · night" inside the night window (01:00-06:00 by
# default, by the machine's clock: a test run at 05:30 sees it)
LIVE = re.compile(r"^live( · night)?$")


def test_host_panel_rejects_a_wrong_token_and_remembers_the_right_one_per_tab(
    browser: Browser, show: LiveServer
):
    page = open_host(browser, show.url)
    expect(page.locator("#token")).to_be_visible()
    expect(page.locator("#desk")).to_be_hidden()
    screenshot(page, "host-login")

    sign_in(page, "not-the-token")
    expect(page.locator("#login-error")).to_have_text("Wrong host token")
    expect(page.locator("#desk")).to_be_hidden()
    assert page.evaluate("sessionStorage.length") == 0
    screenshot(page, "host-login-wrong-token")

    sign_in(page, TOKEN)
    expect(page.locator("#desk")).to_be_visible()
    expect(page.locator("#login-card")).to_be_hidden()
    expect(page.locator("#show-state")).to_have_text(LIVE)

    page.reload()  # the same tab remembers the token
    expect(page.locator("#desk")).to_be_visible()
    # another tab (its own session storage) does not
    other = browser.new_page(viewport={"width": 1440, "height": 900})
    other.goto(show.url + "/host")
    expect(other.locator("#token")).to_be_visible()
    expect(other.locator("#desk")).to_be_hidden()
    other.close()

    page.click("#signout")
    expect(page.locator("#token")).to_be_visible()
    assert page.evaluate("sessionStorage.length") == 0
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()


def test_host_says_a_line_from_the_panel_and_the_stage_hears_it(browser: Browser, show: LiveServer):
    stage = open_stage(browser, show.url)
    page = open_desk(browser, show.url)
    listening = page.locator("#viewers .stat").first  # the stage tab is a listener
    expect(listening).to_contain_text("Listening (audio)")
    expect(listening.locator(".v")).to_have_text(re.compile(r"[1-9]\d*"))

    probe(stage)  # the stage's own analyser on the audio it receives, and the mouth it draws
    time.sleep(0.3)
    since = now_ms(stage)

    line = "Good evening night owls, the host panel is on the air."
    page.fill("#say-text", line)
    page.click("#say-verbatim")
    expect(page.locator("#say-text")).to_have_value("")  # accepted (202) and cleared
    done = page.locator("#recent li[data-state=done]", has_text=line)
    expect(done).to_be_visible(timeout=60_000)
    expect(done.locator(".ttfa")).to_have_text(re.compile(r"^\d+ ms$|^\d+\.\d s$"))
    # where its time went: text to audio at the server, then the stage tab's heard and drawn
    # times of its first voiced viseme (reported every 5 s)
    expect(done.locator(".xmodal")).to_contain_text("text→audio")
    xmodal = re.compile(r"picture−heard [+-]?\d+ ms \(\d+ viewers?\)")
    expect(done.locator(".xmodal")).to_contain_text(xmodal, timeout=15_000)
    # these tests run without the ASR checker (CPU): the panel says so, and lists nothing
    expect(page.locator("#check-state")).to_have_text("off")
    expect(page.locator("#flagged-empty")).to_be_visible()
    screenshot(page, "host-panel")

    heard = records(stage, since)
    assert len(heard) > 20
    assert max(r["rms"] for r in heard) >= LOUD, "the stage page heard the line"
    assert max(r["mouth"] for r in heard) > OPEN, "the avatar's mouth moved with it"

    # errors from the API are shown inline: an empty line, then a line that is too long
    page.click("#say-verbatim")
    expect(page.locator("#say-error")).to_have_text("Type a line first.")
    page.evaluate("document.getElementById('say-text').removeAttribute('maxlength')")
    page.fill("#say-text", "x" * 2001)
    page.click("#say-verbatim")
    expect(page.locator("#say-error")).to_contain_text("Too long")
    page.fill("#say-text", "")

    assert page.errors == [] and stage.errors == []  # type: ignore[attr-defined]
    stage.close()
    page.close()


def test_host_answers_a_viewer_chat_message_from_the_panel(browser: Browser, show: LiveServer):
    stage = open_stage(browser, show.url)
    page = open_desk(browser, show.url)

    question = "What is your favourite <b>star</b>?"
    stage.fill("#chat-text", question)
    stage.press("#chat-text", "Enter")
    msg = page.locator("#chat-list li", has_text=question)
    expect(msg).to_be_visible(timeout=10_000)
    assert msg.locator("b").count() == 0  # viewer text stays text
    msg.get_by_test_id("answer").click()
    expect(msg).to_have_attribute("data-answered", "true")
    expect(msg.get_by_test_id("answer")).to_have_text("Answered")

    answer = page.locator("#recent li[data-mode=chat]", has_text=question).first
    expect(answer).to_be_visible(timeout=10_000)
    expect(page.locator("#now")).to_contain_text(question, timeout=30_000)
    screenshot(page, "host-panel-answering")
    expect(answer).to_have_attribute("data-state", "done", timeout=120_000)
    expect(answer.locator(".utt-reply")).not_to_be_empty()
    screenshot(page, "host-panel-answered")

    page.click("#interrupt")
    expect(page.locator("#interrupt-msg")).to_contain_text("Interrupted")
    assert page.errors == [] and stage.errors == []  # type: ignore[attr-defined]
    stage.close()
    page.close()


def test_host_panel_keeps_refreshing_after_bad_answers(browser: Browser, show: LiveServer):
    """A literal Infinity (what a viewer's 1e308 once put in the medians), a body of the
    wrong shape and a proxy's HTML error page: the panel says so and goes on polling."""
    page = open_desk(browser, show.url)
    state = page.locator("#show-state")
    expect(state).to_have_text(LIVE)
    bad = [
        {"status": 200, "content_type": "application/json", "body": '{"viewers": Infinity}'},
        {"status": 200, "content_type": "application/json", "body": '{"recent": 5, "queue": 1}'},
        {"status": 502, "content_type": "text/html", "body": "<h1>Bad Gateway</h1>"},
    ]
    served: list[str] = []

    def answer(route: Route) -> None:
        if len(served) < len(bad):
            served.append(route.request.url)
            route.fulfill(**bad[len(served) - 1])
        else:
            route.continue_()

    page.route("**/api/v1/show", answer)
    expect(state).to_have_attribute("data-state", "offline", timeout=5000)
    deadline = time.monotonic() + 15
    while len(served) < len(bad) and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert len(served) == len(bad), served
    # the real answers come back, and the panel shows them again
    expect(state).to_have_text(LIVE, timeout=5000)
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()


def test_host_switches_the_autopilot_and_sees_the_last_hour(browser: Browser, show: LiveServer):
    from server.host.autopilot import AUTOPILOT

    page = open_desk(browser, show.url)
    # the last hour's charts are drawn (uPlot, from the history sampled since the show began)
    for chart in ("chart-ttfa", "chart-viewers", "chart-rss", "chart-night"):
        expect(page.locator(f"#{chart} canvas")).to_be_visible(timeout=10_000)
    page.locator("#charts").scroll_into_view_if_needed()
    screenshot(page, "host-panel-last-hour")
    box, state = page.get_by_test_id("autopilot"), page.get_by_test_id("autopilot-state")
    expect(state).to_contain_text("Off", timeout=10_000)
    box.check()
    expect(state).to_contain_text("On")
    assert show.app[AUTOPILOT].enabled
    box.uncheck()
    expect(state).to_contain_text("Off")
    assert not show.app[AUTOPILOT].enabled
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()
