"""What the pages must agree with the server on, gathered from where Python defines it.

The stage page and the host panel read these from the page itself: `_page` (server/app.py)
renders them as JSON into `<script type="application/json" id="allnighter-facts">`, and one
module of the pages (web/static/common/facts.js) reads that element. Nothing here is defined
anew: each value is imported from the module that owns it, or read from the config, so the
pages cannot hold a copy of their own that drifts.
"""

from __future__ import annotations

from typing import Any

from .config import Config
from .looks import cast_facts
from .media.mediaclock import SAMPLE_RATE
from .media.syncwindows import ATSC, EBU_R37
from .show.onsets import LOUD, QUIET, QUIET_MS
from .show.visemes import VISEMES


def page_facts(cfg: Config) -> dict[str, Any]:
    """The facts as JSON-able data: every number and name the pages need from the server."""
    return {
        # the broadcast clock's rate: every `sample` the server sends counts these per second
        "sample_rate": SAMPLE_RATE,
        # the viseme set of the `visemes` events, "sil" (the mouth at rest) first
        "visemes": list(VISEMES),
        # what the server calls a sound onset: the first sample above `loud` (of full scale)
        # after `quiet_ms` of samples at most `quiet`
        "onsets": {"loud": LOUD, "quiet": QUIET, "quiet_ms": QUIET_MS},
        # lip-sync windows, picture − sound (ms): [low, high], the picture at most −low early
        # and at most high late
        "sync_windows": {"atsc": list(ATSC), "ebu_r37": list(EBU_R37)},
        # the longest text the API takes: a host's line or prompt, a viewer's chat message
        "text_limits": {"say": cfg.stage.max_text_chars, "chat": cfg.chat.max_chars},
        # the characters, left to right on the stage: each role's name (its `visemes` events
        # carry it) and its look
        "cast": cast_facts(cfg.roles),
    }
