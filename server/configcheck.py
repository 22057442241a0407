"""The settings' rules: each value checked once it is loaded, with a message that names the
setting and says what it may be (`allnighter serve` stops at start with it)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .looks import LOOKS

if TYPE_CHECKING:
    from .config import Config

MIN_TOKEN_CHARS = 16
ORIGIN = re.compile(r"https?://[^/\s:]+(:\d{1,5})?")


def _number(value: Any) -> bool:
    """An int or a float from TOML or the environment (TOML's true is an int to Python)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(section: Any, title: str, name: str, least: int = 1) -> None:
    """A setting that counts something: a whole number of at least `least`."""
    n = getattr(section, name)
    if isinstance(n, bool) or not isinstance(n, int) or n < least:
        raise ValueError(f"{title}.{name} must be a whole number of at least {least}, not {n!r}")


def check(cfg: Config) -> None:
    """Raise ValueError naming the first setting that breaks its rule."""
    names = [role.name for role in cfg.roles]
    if len(set(names)) < len(names):
        raise ValueError(f"roles must have names of their own, not {names!r}")
    for role in cfg.roles:
        title = f'roles "{role.name}"'
        if not isinstance(role.name, str) or not role.name.strip():
            raise ValueError(f"a role's name must be text, not {role.name!r}")
        if not _number(role.weight) or not role.weight > 0:
            raise ValueError(f"{title}: weight must be a positive number, not {role.weight!r}")
        if not _number(role.pitch) or not 0.5 <= role.pitch <= 2.0:
            raise ValueError(f"{title}: pitch must be a number from 0.5 to 2, not {role.pitch!r}")
        if role.queue_cap is not None:
            _whole(role, title, "queue_cap")
        if role.look is not None and role.look not in LOOKS:
            raise ValueError(f"{title}: look must be one of {', '.join(LOOKS)}, not {role.look!r}")
    d = cfg.dub
    if not all(isinstance(k, str) and len(k) >= 16 for k in d.api_keys):
        raise ValueError("dub.api_keys must be strings of at least 16 characters each")
    if d.scheduler not in ("roles", "fifo"):
        raise ValueError(f'dub.scheduler must be "roles" or "fifo", not {d.scheduler!r}')
    if not _number(d.lines_per_minute) or not d.lines_per_minute > 0:
        raise ValueError(f"dub.lines_per_minute must be positive, not {d.lines_per_minute!r}")
    for name in ("burst", "max_lines", "queue_size", "workers"):
        _whole(d, "dub", name)
    t = cfg.time
    polls = (t.min_poll_s, t.max_poll_s, t.ptp_poll_s)
    if not all(isinstance(p, int | float) and p > 0 for p in polls) or t.min_poll_s > t.max_poll_s:
        raise ValueError("poll intervals must be positive seconds, min_poll_s <= max_poll_s")
    skew = cfg.stage.clock_skew_ppm
    if not _number(skew) or abs(skew) > 1000:
        raise ValueError(f"stage.clock_skew_ppm must be a number within ±1000, not {skew!r}")
    for name, most in (("viseme_lead_ms", 100), ("viseme_hold_ms", 200)):
        ms = getattr(cfg.stage, name)
        if not _number(ms) or not 0 <= ms <= most:
            raise ValueError(f"stage.{name} must be a number from 0 to {most}, not {ms!r}")
    if not isinstance(cfg.stage.opening, bool):
        raise ValueError("stage.opening must be true or false")
    fb = cfg.feedback
    if not _number(fb.flag_wer) or fb.flag_wer < 0:
        raise ValueError(f"feedback.flag_wer must be a number >= 0, not {fb.flag_wer!r}")
    if not isinstance(fb.correct_visemes, bool):
        raise ValueError("feedback.correct_visemes must be true or false")
    w = cfg.webrtc
    if not _number(w.connect_timeout_s) or not 0 < w.connect_timeout_s <= 30:
        raise ValueError(f"webrtc.connect_timeout_s must be 0-30 s, not {w.connect_timeout_s!r}")
    for name in ("max_viewers", "max_connecting", "max_viewers_per_address", "offer_burst"):
        _whole(w, "webrtc", name)
    lb = cfg.logbook
    if not isinstance(lb.path, str):
        raise ValueError(f"logbook.path must be a string, not {lb.path!r}")
    for name in ("keep_utterances", "keep_chat"):
        _whole(lb, "logbook", name)
    cc = cfg.cache
    if not isinstance(cc.path, str) or not isinstance(cc.redis_url, str):
        raise ValueError("cache.path and cache.redis_url must be strings")
    if cc.redis_url and not re.fullmatch(r"rediss?://\S+|unix://\S+", cc.redis_url):
        raise ValueError(f"cache.redis_url must be redis://host:port[/db], not {cc.redis_url!r}")
    if not all(_number(x) and x > 0 for x in (cc.ttl_s, cc.stale_s)):
        raise ValueError("cache.ttl_s and cache.stale_s must be positive seconds")
    if not _number(cc.jitter) or not 0 <= cc.jitter < 1:
        raise ValueError(f"cache.jitter must be a share from 0 to under 1, not {cc.jitter!r}")
    _whole(cc, "cache", "max_entries")
    ap = cfg.autopilot
    if not isinstance(ap.enabled, bool) or not isinstance(ap.greet, bool):
        raise ValueError("autopilot.enabled and autopilot.greet must be true or false")
    if not all(_number(x) and x > 0 for x in (ap.max_silence_s, ap.host_grace_s)):
        raise ValueError("autopilot.max_silence_s and host_grace_s must be positive seconds")
    for name in ("topics", "greetings", "blocked_words"):
        listed = getattr(ap, name)
        if not isinstance(listed, list) or not all(isinstance(x, str) and x for x in listed):
            raise ValueError(f"autopilot.{name} must be a list of strings")
    if not ap.topics:
        raise ValueError("autopilot.topics needs at least one topic")
    if ap.answer_chat not in ("when_idle", "every_n", "by_score", "off"):
        raise ValueError(
            'autopilot.answer_chat must be "when_idle", "every_n", "by_score" or "off",'
            f" not {ap.answer_chat!r}"
        )
    _whole(ap, "autopilot", "answer_every")
    _whole(ap, "autopilot", "max_chars")
    _night(cfg)
    al = cfg.alerts
    if not isinstance(al.webhook_url, str) or (
        al.webhook_url and not re.fullmatch(r"https?://\S+", al.webhook_url)
    ):
        raise ValueError(f"alerts.webhook_url must be an http(s) URL, not {al.webhook_url!r}")
    if not _number(al.stall_log_s) or not 0.01 <= al.stall_log_s <= 60:
        raise ValueError(f"alerts.stall_log_s must be 0.01-60 s, not {al.stall_log_s!r}")
    if isinstance(al.rss_alert_mb, bool) or not isinstance(al.rss_alert_mb, int):
        raise ValueError(f"alerts.rss_alert_mb must be a whole number, not {al.rss_alert_mb!r}")
    for origin in cfg.allowed_origins:
        if not isinstance(origin, str) or not ORIGIN.fullmatch(origin):
            raise ValueError(f'allowed_origins holds "scheme://host[:port]" each, not {origin!r}')
    if cfg.host_token and len(cfg.host_token) < MIN_TOKEN_CHARS:
        raise ValueError(
            f"the host token must be at least {MIN_TOKEN_CHARS} characters: a short one can be"
            " guessed (leave it unset for a generated one)"
        )


def _night(cfg: Config) -> None:
    import datetime as dt
    import zoneinfo

    n = cfg.night
    if not isinstance(n.triggers, bool):
        raise ValueError("night.triggers must be true or false")
    try:
        start, end = (dt.time.fromisoformat(t) for t in n.window)
    except (TypeError, ValueError):
        raise ValueError(f'night.window must be ["HH:MM", "HH:MM"], not {n.window!r}') from None
    if not isinstance(n.window, list) or len(n.window) != 2 or start == end:
        raise ValueError(f"night.window must be two different times, not {n.window!r}")
    if n.timezone:
        try:
            zoneinfo.ZoneInfo(n.timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"night.timezone is no known zone: {n.timezone!r}") from None
    for name in ("night_level", "economy_level"):
        level = getattr(n, name)
        if isinstance(level, bool) or level not in (0, 1, 2, 3):
            raise ValueError(f"night.{name} must be 0, 1, 2 or 3, not {level!r}")
    positive = ("economy_after_s", "cpu_low", "gpu_low_mb", "ttfa_p99_s", "loop_lag_p99_s")
    for name in (*positive, "frames_late", "rss_growth", "enter_s", "leave_s"):
        if not _number(getattr(n, name)) or getattr(n, name) <= 0:
            raise ValueError(f"night.{name} must be a positive number")
    if not _number(n.leave_ratio) or not 0 < n.leave_ratio < 1:
        raise ValueError(f"night.leave_ratio must be between 0 and 1, not {n.leave_ratio!r}")
    _whole(n, "night", "tts_jobs_low", least=0)
    _whole(n, "night", "compressed_tokens")
    _whole(n, "night", "compressed_words")
    if not isinstance(n.light_voice, str) or not n.light_voice.strip():
        raise ValueError(
            f'night.light_voice must be an espeak-ng voice name ("en-us"), not {n.light_voice!r}'
        )
