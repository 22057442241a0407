"""The app's typed keys: what a handler can reach through `request.app[...]`, and its type."""

from __future__ import annotations

from aiohttp import web

from timesync.fused import FusedClock

from .config import Config
from .live import Live
from .logbook import Logbook
from .media.broadcast import Broadcast
from .media.mediaclock import MediaClock
from .media.timeline import SpeechTimeline
from .memorywatch import MemoryWatch
from .metrics import Metrics
from .transport.peers import ViewerPeers
from .transport.signals import Signals

CONFIG = web.AppKey("config", Config)
METRICS = web.AppKey("metrics", Metrics)
TIME = web.AppKey("time", FusedClock)  # the fused clock every timestamp is read from
SIGNALS = web.AppKey("signals", Signals)
LIVE = web.AppKey("live", Live)
MEMORY = web.AppKey("memory", MemoryWatch)  # resident and GPU memory, sampled
LOGBOOK = web.AppKey("logbook", Logbook)  # accepted utterances and chat, kept across restarts
# set when the app starts (they run on its loop)
MEDIA_CLOCK = web.AppKey("media_clock", MediaClock)
TIMELINE = web.AppKey("timeline", SpeechTimeline)
BROADCAST = web.AppKey("broadcast", Broadcast)
PEERS = web.AppKey("peers", ViewerPeers)
