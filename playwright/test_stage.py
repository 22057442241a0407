"""The stage page in real Chromium: it hears the show, the mouth moves with the sound and rests
in silence, interrupts silence it, chat reaches other viewers escaped, and it reconnects."""

from __future__ import annotations

import contextlib
import statistics
import time

from conftest import Host, e2e_config, open_desk, open_host, screenshot, until_final

from server.bench.browser import CHROMIUM_ARGS, chromium_path, now_ms, open_stage, probe, records
from server.bench.inprocess import LiveServer, free_port
from server.bench.lipsync_figures import LOUD, OPEN, QUIET, silent_after
from server.facts import page_facts
from server.keys import LIVE, PEERS, SIGNALS, TIME

# Canvas statistics drawn through a 2D copy: spread of brightness (a blank canvas has none)
# and the pixels of the mouth's region, to compare frames.
CANVAS_STATS = """() => {
  const src = document.getElementById("avatar");
  const c = document.createElement("canvas");
  c.width = 160; c.height = 90;
  const g = c.getContext("2d");
  g.drawImage(src, 0, 0, c.width, c.height);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let sum = 0, sq = 0;
  const px = [];
  for (let i = 0; i < d.length; i += 4) {
    const y = 0.2126 * d[i] + 0.7152 * d[i + 1] + 0.0722 * d[i + 2];
    sum += y; sq += y * y; px.push(y);
  }
  const n = d.length / 4;
  return {std: Math.sqrt(sq / n - (sum / n) ** 2), px};
}"""


def _mean_abs_diff(a: list[float], b: list[float]) -> float:
    return sum(abs(x - y) for x, y in zip(a, b, strict=True)) / len(a)


def _wait_loud(page, since: float, timeout: float = 15.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        loud = [r for r in records(page, since) if r["rms"] >= LOUD]
        if loud:
            return loud[0]["t"]
        time.sleep(0.05)
    raise AssertionError("the page heard nothing")


def test_page_hears_speech_and_the_mouth_moves_with_it(browser, show, host: Host):
    page = open_stage(browser, show.url)
    # Chromium's jitter buffer settles over a stream's first seconds and the page calibrates on
    # the first onsets it hears: a viewer's first line is not the one judged here.
    until_final(host, host.say("Oh, hello."))
    page.wait_for_timeout(1000)  # its last audio reaches the page
    probe(page)
    t0 = now_ms(page)
    page.wait_for_timeout(1500)  # quiet before the line
    quiet = page.evaluate(CANVAS_STATS)
    screenshot(page, "stage-silent")
    # an open first sound: before a k or g the lips form the stop in silence, rightly
    uid = host.say("All right, welcome to the all night show. We have a lot to talk about.")
    _wait_loud(page, t0)
    page.wait_for_function("() => window.allnighter.state().mouth_open > 0.4", timeout=10_000)
    speaking = page.evaluate(CANVAS_STATS)
    screenshot(page, "stage-speaking")
    until_final(host, uid)
    page.wait_for_timeout(1500)  # the line's audio plays out, then quiet again
    recs = records(page, t0)

    loud = [r for r in recs if r["rms"] >= LOUD]
    assert loud, "no audio above silence reached the page"
    first, last = loud[0]["t"], loud[-1]["t"]
    assert last - first > 1500, "the line was not heard through"
    speech = [r for r in recs if first <= r["t"] <= last]
    open_share = sum(r["mouth"] > OPEN for r in speech) / len(speech)
    assert open_share > 0.4, f"mouth open in only {open_share:.0%} of speech frames"
    before = [r for r in recs if r["t"] < first - 150]
    after = [r for r in recs if r["t"] > last + 300]
    assert before and max(r["mouth"] for r in before) < 0.05, "mouth moved before the sound"
    assert after and max(r["mouth"] for r in after) < 0.05, "mouth still moving after the sound"
    assert all(r["rms"] < QUIET for r in after[-20:]), "audio did not go quiet"

    assert quiet["std"] > 5 and speaking["std"] > 5, "the canvas is blank"
    assert _mean_abs_diff(quiet["px"], speaking["px"]) > 0.05, "the picture did not change"
    state = page.evaluate("() => window.allnighter.state()")
    assert state["renderer"] == "webgl" and state["fps"] > 20, state
    stats = page.evaluate("() => window.allnighter.stats()")
    assert "fps" in stats and "dropped_frames" in stats, stats
    # the page measured the lip-sync of every viseme onset it drew, and reported it
    drawn = _reported_onsets(show)
    assert len(drawn) >= 5, drawn
    assert abs(statistics.median(drawn)) < 50, drawn
    assert sum(abs(ms) < 100 for ms in drawn) >= 0.75 * len(drawn), drawn
    assert not page.errors, page.errors
    page.close()


def _reported_onsets(show: LiveServer, timeout: float = 8.0) -> list[float]:
    """The lip-sync offsets the pages reported (client_stats every 5 s), once some arrive."""
    signals = show.app[SIGNALS]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        drawn = [ms for kept in list(signals.onsets.values()) for ms in kept]
        if len(drawn) >= 5:
            return drawn
        time.sleep(0.2)
    return []


@contextlib.contextmanager
def _timing_interrupts(stage):
    """[reached, sent] (epoch ms) for each interrupt inside: when the stage had it, and when its
    event had gone out to the viewers."""
    served: list[list[float]] = []
    interrupt, emit = stage.interrupt, stage.emit

    async def timed_interrupt(role):
        served.append([time.time() * 1000])
        return await interrupt(role)

    async def timed_emit(name, data):
        await emit(name, data)
        if name == "interrupt" and served:
            served[-1].append(time.time() * 1000)

    stage.interrupt, stage.emit = timed_interrupt, timed_emit
    try:
        yield served
    finally:
        del stage.interrupt
        stage.emit = emit


def test_interrupt_from_the_panel_silences_the_page_and_closes_the_mouth(browser, show, host: Host):
    desk = open_desk(browser, show.url)
    page = open_stage(browser, show.url)
    probe(page)
    t0 = now_ms(page)
    uid = host.say(
        "Oh, this is a long line that will not finish, because the host is about to cut it off "
        "in the middle of a sentence that goes on and on and on for quite a while."
    )
    _wait_loud(page, t0)
    page.wait_for_timeout(700)
    # when the host's click lands (one browser: every tab's epoch clock is the same)
    desk.evaluate(
        """() => document.getElementById("interrupt").addEventListener("click",
             () => { window.__clickedAt = performance.timeOrigin + performance.now(); },
             {capture: true})"""
    )
    with _timing_interrupts(show.app[LIVE].stage) as served:
        desk.click("#interrupt")
        cut = desk.evaluate("() => window.__clickedAt")
        page.wait_for_timeout(1200)
    recs = records(page, t0)
    assert any(r.get("playedUntil") for r in recs), "the probe could not hear the page's output"
    quiet_at = silent_after(recs, cut, "playedUntil")  # what the viewer hears
    # The page hears the event between tasks of its main thread. Headless Chromium composites
    # this WebGL page in software, and on two cores shared with the show a frame's paint holds
    # that thread 50-200 ms, now and then 600: the bound is on the time the page could act.
    busy = page.evaluate("([a, b]) => window.__probe.busy(a, b)", [cut, quiet_at])
    print(f"heard until {quiet_at - cut:.0f} ms after the click, the page held {busy:.0f} ms of it")
    if served and len(served[0]) == 2:  # where the time went, for a run that fails
        got, emitted = served[0]
        print(
            f"the server had the POST {got - cut:.0f} ms after the click, sent the event at "
            f"{emitted - cut:.0f} ms; the page went quiet {quiet_at - emitted:.0f} ms after that"
        )
    assert quiet_at - cut - busy <= 200, (
        f"still heard {quiet_at - cut:.0f} ms after the click ({busy:.0f} ms of it the page's "
        "main thread was held by the browser)"
    )
    # the mouth may lead its sound a little: a word about to start when the event lands opens
    # it briefly within the same 200 ms; after that it rests
    closed = [r for r in recs if r["t"] > max(quiet_at, cut + 200) + 150]
    moving = [(round(r["t"] - cut), round(r["mouth"], 2)) for r in closed if r["mouth"] >= 0.05]
    assert closed and not moving, f"mouth still moving (ms after the click, opening): {moving[:8]}"
    assert until_final(host, uid)["state"] == "interrupted"
    page.close()
    desk.close()


def test_chat_reaches_other_viewers_escaped_and_floods_are_refused(browser, show):
    alice = open_stage(browser, show.url)
    bob = open_stage(browser, show.url)
    text = '<b>bold</b> & <img src=x onerror="window.pwned=1"> hi'
    alice.fill("#chat-text", text)
    alice.click("#chat-form button")
    line = bob.locator("#chat-log li .text", has_text="bold").first
    line.wait_for(timeout=5000)
    assert line.text_content() == text
    assert bob.locator("#chat-log b, #chat-log img").count() == 0
    assert not bob.evaluate("() => window.pwned === 1")
    # a flood: messages one after another, each answered before the next, until one is refused
    # (a burst of 3, then 10 a minute: a slow page's messages may earn a few more, never 12)
    answered = (
        "() => document.getElementById('chat-text').value === ''"
        " || document.getElementById('chat-error').textContent !== ''"
    )
    for i in range(12):
        alice.fill("#chat-text", f"flood {i}")
        alice.click("#chat-form button")
        alice.wait_for_function(answered, timeout=5000)
        if alice.locator("#chat-error").text_content():
            break
    assert "too many" in alice.locator("#chat-error").text_content(), f"{i + 1} sent"
    screenshot(alice, "stage-chat")
    alice.close()
    bob.close()


def test_page_reconnects_after_a_server_restart(browser, show):
    port = free_port()
    models = show.app[LIVE].models
    first = LiveServer(e2e_config(), models, port=port).start()
    page = open_stage(browser, first.url)
    first.stop()
    page.wait_for_function("() => !window.allnighter.state().connected", timeout=10_000)
    assert page.locator("#link-state").get_attribute("data-state") == "reconnecting"
    second = LiveServer(e2e_config(), models, port=port).start()
    try:
        page.wait_for_function(
            "() => window.allnighter.state().connected && window.allnighter.state().audio_playing",
            timeout=30_000,
        )
        probe(page)
        t0 = now_ms(page)
        page.wait_for_timeout(500)  # a quiet stretch, so the line's onset is one
        Host(second).say("And we are back on the air.")
        _wait_loud(page, t0)
        mouth = max((r["mouth"] for r in records(page, t0)), default=0)
        for _ in range(40):
            if mouth > OPEN:
                break
            page.wait_for_timeout(100)
            mouth = max(r["mouth"] for r in records(page, t0))
        assert mouth > OPEN, page.evaluate("() => [allnighter.state(), allnighter.stats()]")
    finally:
        page.close()
        second.stop()


def test_sound_waits_for_the_viewers_click_where_the_browser_asks_for_one(browser, show):
    strict = [a for a in CHROMIUM_ARGS if not a.startswith("--autoplay-policy")]
    with contextlib.closing(
        browser.browser_type.launch(
            executable_path=chromium_path(),
            args=[*strict, "--autoplay-policy=document-user-activation-required"],
        )
    ) as other:
        page = other.new_page()
        page.goto(show.url + "/")
        # Wait without touching the page: Playwright's evaluations carry a user gesture,
        # which would let the audio start by itself and hide the very prompt under test.
        time.sleep(5)
        gate = page.locator("#sound-gate")
        assert gate.is_visible()
        assert "Tap for sound" in gate.text_content()
        assert not page.evaluate("() => window.allnighter.state().audio_playing")
        gate.click()
        page.wait_for_function("() => window.allnighter.state().audio_playing", timeout=10_000)
        assert gate.is_hidden()


def test_page_clock_offset_is_within_its_own_uncertainty(browser, show):
    page = open_stage(browser, show.url)
    page.wait_for_function("() => window.allnighter.stats().clock_uncertainty_ms !== undefined")
    page.wait_for_timeout(500)  # the connect burst of exchanges is over
    stats = page.evaluate("() => window.allnighter.stats()")
    # the truth: the server's fused clock against this machine's clock, which the page also
    # reads (performance.timeOrigin + now is the system's wall clock)
    truth = show.call(_fused_minus_system(show))
    error = abs(stats["clock_offset_ms"] - truth)
    assert error <= stats["clock_uncertainty_ms"] + 0.5, (stats, truth)
    assert stats["clock_uncertainty_ms"] < 50, stats
    page.close()


async def _fused_minus_system(srv) -> float:
    return srv.app[TIME].now_ms() - time.time() * 1000


def test_a_viewer_who_leaves_is_let_go_at_once(browser, show):
    peers = show.app[PEERS]
    # by session, not by count: an earlier test's page may still be on its way out
    before = set(peers.viewers)
    page = open_stage(browser, show.url)
    joined = set(peers.viewers) - before
    assert len(joined) == 1, joined
    page.close()
    # the page closes its peer as it goes: the server stops sending to it, instead of until
    # ICE gives up on it half a minute later
    deadline = time.monotonic() + 3.0
    while joined & set(peers.viewers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not joined & set(peers.viewers), "the server still sends to a viewer who left"


# The facts the page's modules were handed: read once, at start, from the page (a second read
# is answered from what the first kept, so a page whose modules never read them throws here).
FACTS_READ = """async () => {
  const { pageFacts } = await import("/static/common/facts.js");
  return pageFacts({ getElementById: () => null });
}"""


def test_the_pages_run_on_the_servers_facts(browser, show):
    """The sample rate, viseme set, onset thresholds, sync windows and text limits the pages
    use are the ones the server rendered into them (server/facts.py)."""
    facts = page_facts(show.cfg)
    page = open_stage(browser, show.url)
    assert page.evaluate(FACTS_READ) == facts
    assert page.get_attribute("#chat-text", "maxlength") == str(facts["text_limits"]["chat"])
    # the mouth took the server's viseme set (a set without shapes would fall back to 2D)
    assert page.evaluate("() => window.allnighter.state().renderer") == "webgl"
    desk = open_host(browser, show.url)
    desk.wait_for_function("() => window.allnighterHost !== undefined")
    assert desk.evaluate(FACTS_READ) == facts
    assert desk.get_attribute("#say-text", "maxlength") == str(facts["text_limits"]["say"])
    assert page.errors == [] and desk.errors == []  # type: ignore[attr-defined]
    desk.close()
    page.close()
