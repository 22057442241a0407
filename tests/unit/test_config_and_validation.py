"""Settings and small validators: bad settings are refused with a message, never ignored."""

from __future__ import annotations

import pytest

from server.config import load_config
from server.show.feedback import planned_word_starts, word_error_rate
from server.transport.ratelimit import RateLimit
from server.transport.rtp import strip_mdns_candidates
from server.transport.viewerinput import finite


def test_settings_file_overrides_defaults_and_env_gives_the_token(tmp_path):
    f = tmp_path / "show.toml"
    f.write_text('port = 9000\n[stage]\nqueue_size = 3\n[[roles]]\nname = "iris"\n')
    cfg = load_config(f, env={"ALLNIGHTER_HOST_TOKEN": "secret-host-token"})
    assert cfg.port == 9000 and cfg.stage.queue_size == 3 and cfg.host == "127.0.0.1"
    assert cfg.role("iris") is not None and cfg.role("nova") is None
    assert cfg.role(None).name == "iris"
    assert cfg.host_token == "secret-host-token" and not cfg.token_generated


def test_a_token_is_generated_when_none_is_set():
    a, b = load_config(None, env={}), load_config(None, env={})
    assert a.token_generated and len(a.host_token) >= 24 and a.host_token != b.host_token


@pytest.mark.parametrize(
    "text, message",
    [
        ("colour = 1\n", "colour"),
        ("[stage]\nqueue = 3\n", "queue"),
        ("roles = []\n", "role"),
        ("[time]\nntp_version = 5\n", "ntp_version"),
        ("[time]\nptp_poll_s = 0\n", "poll intervals"),
        ("[time]\nmin_poll_s = 90\n", "min_poll_s <= max_poll_s"),
        ("[stage]\nviseme_lead_ms = -5\n", "viseme_lead_ms"),
        ("[stage]\nviseme_lead_ms = 250\n", "viseme_lead_ms"),
        ("[stage]\nviseme_hold_ms = 201\n", "viseme_hold_ms"),
        ('[stage]\nviseme_hold_ms = "long"\n', "viseme_hold_ms"),
        ('[[roles]]\nname = "nova"\nweight = 0\n', 'roles "nova": weight'),
        ('[[roles]]\nname = "nova"\nqueue_cap = 0\n', 'roles "nova".queue_cap'),
        ("[dub]\nworkers = 0\n", "dub.workers must be a whole number of at least 1"),
    ],
)
def test_unknown_or_empty_settings_are_refused(tmp_path, text, message):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_config(f, env={})


def test_mdns_candidates_are_stripped_and_others_kept():
    sdp = (
        "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"
        "a=candidate:1 1 udp 2113937151 4f1c-uuid.local 51000 typ host\r\n"
        "a=candidate:2 1 udp 2113937151 127.0.0.1 51001 typ host\r\n"
    )
    out = strip_mdns_candidates(sdp)
    assert ".local" not in out and "127.0.0.1 51001" in out and out.startswith("v=0\r\n")


def test_rate_limit_allows_a_burst_then_refuses():
    limit = RateLimit(per_minute=60, burst=3)
    assert [limit.allow() for _ in range(4)] == [True, True, True, False]


@pytest.mark.parametrize(
    "value, ok",
    [
        (1, True),
        (1.5, True),
        (True, False),
        ("1", False),
        (float("nan"), False),
        (float("inf"), False),
    ],
)
def test_only_finite_numbers_pass_as_numbers(value, ok):
    assert finite(value) is ok


def test_word_error_rate_and_planned_word_starts():
    assert word_error_rate("Good evening, night owls.", "good evening night owls") == 0
    assert word_error_rate("one two three four", "one three four five") == 0.5
    phonemes = [("^", 100), ("h", 50), ("i", 50), (" ", 100), ("ð", 50), ("ɛ", 50), (".", 10)]
    assert planned_word_starts(phonemes, 100) == [1.0, 3.0]
