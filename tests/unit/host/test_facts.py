"""The pages carry the server's facts: the sample rate, the viseme set, the onset thresholds,
the lip-sync windows and the text limits, each defined once in Python (server/facts.py gathers
them) and rendered into both pages as JSON. web/tests/facts.json, what the node tests run
with, is held to the same. (web/tests/facts.test.mjs checks the pages' code keeps no copy.)"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import aiohttp_jinja2
import pytest

from server.config import Config
from server.facts import page_facts
from server.host import hostdesk
from server.media import mediaclock
from server.show import onsets, visemes
from tests.harness import page_text

NODE_FACTS = Path(__file__).resolve().parents[3] / "web" / "tests" / "facts.json"
ELEMENT = re.compile(
    r'<script type="application/json" id="allnighter-facts">(?P<json>.*?)</script>', re.S
)


def facts_of(page: str) -> dict:
    found = ELEMENT.findall(page)
    assert len(found) == 1, "one facts element per page"
    return json.loads(found[0])


@pytest.mark.parametrize("path", ["/", "/host"])
def test_each_page_carries_the_servers_facts(tone_server, path):
    facts = facts_of(asyncio.run(page_text(tone_server, path)))
    cfg = tone_server.cfg
    assert facts["sample_rate"] == mediaclock.SAMPLE_RATE
    assert facts["visemes"] == list(visemes.VISEMES)
    assert facts["onsets"] == {
        "loud": onsets.LOUD,
        "quiet": onsets.QUIET,
        "quiet_ms": onsets.QUIET_MS,
    }
    assert facts["sync_windows"] == {
        "atsc": list(hostdesk.ATSC),
        "ebu_r37": list(hostdesk.EBU_R37),
    }
    assert facts["text_limits"] == {"say": cfg.stage.max_text_chars, "chat": cfg.chat.max_chars}
    assert facts == page_facts(cfg)


def test_the_text_limits_are_the_configs_in_the_pages_fields_too(tone_server):
    stage, chat = tone_server.cfg.stage, tone_server.cfg.chat
    before = stage.max_text_chars, chat.max_chars
    stage.max_text_chars, chat.max_chars = 1234, 56
    try:
        host = asyncio.run(page_text(tone_server, "/host"))
        viewer = asyncio.run(page_text(tone_server, "/"))
    finally:
        stage.max_text_chars, chat.max_chars = before
    for page in (host, viewer):
        assert facts_of(page)["text_limits"] == {"say": 1234, "chat": 56}
    assert 'id="say-text"' in host and 'maxlength="1234"' in host
    assert ">0 / 1234<" in host
    assert 'id="chat-text"' in viewer and 'maxlength="56"' in viewer
    assert not re.search(r'maxlength="(?!1234"|56")', host + viewer), "no limit of the page's own"


def test_the_facts_element_cannot_be_closed_by_what_it_holds(tone_server):
    """`tojson` escapes <, > and &: a string in the facts cannot end the script element."""
    env = aiohttp_jinja2.get_env(tone_server.app)
    hostile = {"name": "</script><script>alert(1)</script>", "amp": "&amp; <!--"}
    rendered = env.from_string(
        '<script type="application/json" id="allnighter-facts">{{ facts|tojson }}</script>'
    ).render(facts=hostile)
    assert facts_of(rendered) == hostile
    assert rendered.count("</script>") == 1


def test_the_node_tests_run_with_the_servers_facts():
    assert json.loads(NODE_FACTS.read_text()) == page_facts(Config())
