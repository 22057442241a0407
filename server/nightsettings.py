"""The settings of a show that runs all night: the logbook that survives restarts, the fallback
ladder, the autopilot, the speech cache and the alerts. Loaded with the rest (config.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LogbookConfig:
    # the SQLite file that keeps accepted utterances and chat across restarts; empty: the
    # user's state directory ($XDG_STATE_HOME, else ~/.local/state, /allnighter/logbook.sqlite);
    # ":memory:" keeps nothing past the process
    path: str = ""
    keep_utterances: int = 10_000  # the newest finished utterances kept (unfinished: all)
    keep_chat: int = 2_000


@dataclass
class NightConfig:
    # the night window, local time of the show (it may cross midnight), and the zone ("": the
    # machine's)
    window: list[str] = field(default_factory=lambda: ["01:00", "06:00"])
    triggers: bool = True  # false: only the host's pin moves the level
    timezone: str = ""
    night_level: int = 1  # wanted inside the window
    economy_level: int = 1  # wanted after economy_after_s of low load
    economy_after_s: float = 900.0
    cpu_low: float = 0.12  # low load: under this share of the machine's CPU,
    gpu_low_mb: float = 384.0  # under this much GPU memory (where there is a GPU),
    tts_jobs_low: int = 3  # and at most this many lines waiting or being made
    # strain: any of these over its line for enter_s steps one level up; all of them back
    # under leave_ratio of their lines for leave_s steps one down
    ttfa_p99_s: float = 3.0
    loop_lag_p99_s: float = 0.1
    frames_late: float = 0.01
    rss_growth: float = 0.5
    enter_s: float = 60.0
    leave_s: float = 300.0
    leave_ratio: float = 0.8
    # level 1: chat replies at most this many tokens, prompts condensed to this many words
    compressed_tokens: int = 24
    compressed_words: int = 30
    # level 2: the light voice, espeak-ng's (a voice name of its own: "en-us", "en-us+m3", …)
    light_voice: str = "en-us"


@dataclass
class AutopilotConfig:
    # on at start (the host panel switches it at any time): the show never falls silent longer
    # than max_silence_s; a host's line or interrupt always comes first
    enabled: bool = False
    max_silence_s: float = 20.0
    host_grace_s: float = 30.0  # after a host acts, the autopilot waits this long
    topics: list[str] = field(
        default_factory=lambda: [
            "the stars you can see tonight",
            "what keeps people up at two in the morning",
            "a small kindness someone did for you",
            "the sounds of a city at night",
        ]
    )
    greet: bool = True  # a stock greeting (spoken from the speech cache) for viewers joining
    greetings: list[str] = field(
        default_factory=lambda: [
            "Welcome in, and thanks for keeping me company tonight.",
            "Hello there, new friends. Pull up a chair.",
        ]
    )
    # which viewer chat it answers, when nothing waits: "when_idle" (the oldest unanswered),
    # "every_n" (once answer_every messages came since the last), "by_score" (the best
    # question), or "off"
    answer_chat: str = "when_idle"
    answer_every: int = 3
    # a viewer message it may answer: no blocked word, at most max_chars (else shown to the
    # host as refused, never spoken)
    blocked_words: list[str] = field(default_factory=list)
    max_chars: int = 200


@dataclass
class CacheConfig:
    # the speech cache of lines said again (server/show/speechcache.py): an SQLite file (empty:
    # the user's state directory, /allnighter/speechcache.sqlite; ":memory:" keeps it in
    # the process), or Redis when a URL is given ("redis://host:port/db"), shared by servers
    path: str = ""
    redis_url: str = ""
    ttl_s: float = 6 * 3600.0  # fresh this long, ± jitter of it
    jitter: float = 0.2
    stale_s: float = 24 * 3600.0  # then served stale (and remade behind it) this long
    max_entries: int = 2000  # on disk; Redis bounds itself


@dataclass
class AlertsConfig:
    # each alert (server/anomalies.py) is also POSTed here as JSON; empty: none
    webhook_url: str = ""
    # resident memory (MB) past which an alert is raised; 0: three quarters of the machine's
    rss_alert_mb: int = 0
    # an event loop held this long logs every thread's stack (server/stalls.py); lower it to
    # find what holds the loop for tens of milliseconds
    stall_log_s: float = 0.4
