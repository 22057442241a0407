"""Utterances and the bounded queue they wait in."""

from __future__ import annotations

import statistics
import time
import uuid
from dataclasses import dataclass, field
from enum import StrEnum

from ..config import RoleConfig
from ..logbook import Logbook
from ..metrics import Metrics


class UtteranceState(StrEnum):
    QUEUED = "queued"
    SPEAKING = "speaking"
    DONE = "done"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


MODES = ("verbatim", "chat")  # an utterance's text said as written, or a prompt to the LLM
FINAL_STATES = {UtteranceState.DONE, UtteranceState.INTERRUPTED, UtteranceState.FAILED}
CROSS_MODAL_VIEWERS = 64  # viewers an utterance keeps reports of: plenty for a median


@dataclass(frozen=True)
class ViewerOnset:
    """When one viewer heard and saw an utterance's first voiced viseme (fused ms)."""

    audio_ms: float  # the reported sample's due time at the broadcast
    heard_ms: float
    picture_ms: float


@dataclass
class CrossModal:
    """An utterance as text, audio and picture on the fused clock (ms since the Unix epoch)."""

    text_ms: float | None = None  # first token decoded (chat) or the line accepted (verbatim)
    audio_ms: float | None = None  # its first voiced viseme due at the broadcast
    viewers: dict[str, ViewerOnset] = field(default_factory=dict)  # by socket id

    def add_viewer(self, sid: str, onset: ViewerOnset) -> bool:
        """Keep a viewer's first report; False when it is a repeat or beyond the bound."""
        if sid in self.viewers or len(self.viewers) >= CROSS_MODAL_VIEWERS:
            return False
        self.viewers[sid] = onset
        return True

    def to_json(self) -> dict:
        seen = self.viewers.values()
        text, audio = self.text_ms, self.audio_ms
        return {
            "text_ms": text,
            "audio_ms": audio,
            "heard_ms": rounded_median([v.heard_ms for v in seen], 3),
            "picture_ms": rounded_median([v.picture_ms for v in seen], 3),
            "audio_minus_text_ms": (
                None if audio is None or text is None else round(audio - text, 1)
            ),
            "heard_minus_audio_ms": rounded_median([v.heard_ms - v.audio_ms for v in seen]),
            "picture_minus_heard_ms": rounded_median([v.picture_ms - v.heard_ms for v in seen]),
            "viewers": len(self.viewers),
        }


def rounded_median(values: list[float], digits: int = 1) -> float | None:
    """The median rounded for a JSON figure, None when there is nothing to take it of."""
    return round(statistics.median(values), digits) if values else None


@dataclass
class Utterance:
    """One accepted line or prompt: it is spoken, interrupted, or reported failed."""

    text: str
    role: str
    mode: str  # one of MODES
    # the role's character, resolved once when the utterance is accepted
    character: RoleConfig = field(default_factory=RoleConfig, repr=False)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    cache: bool = False  # a line said again: its speech comes from the speech cache
    source: str = "host"  # who asked for it: "host", or "autopilot" (a host always comes first)
    level: int = 0  # the night's fallback level it was spoken at (set when it is taken up)
    # a scene's line (server/show/scenes.py): the line it follows, never taken up before it;
    # how far its speech may reach back over the line before (an overlap, mixed); and, in a
    # conversation, the line it answers (its prompt is that line as spoken)
    after: str | None = None
    overlap_s: float = 0.0
    reply_to: str | None = None
    prompt: str | None = None  # what the LLM is asked, where it is not `text` (set when taken up)
    # a chat reply written beside an earlier one of its persona (phrasing.py), at that one's
    # fallback level: spoken instead of asking the LLM again, where it is taken up at that level
    written: tuple[int, str] | None = field(default=None, repr=False)
    accepted_at: float = field(default_factory=time.monotonic)
    state: UtteranceState = UtteranceState.QUEUED
    phrases: list[str] = field(default_factory=list)
    tokens: int = 0  # LLM tokens decoded so far (chat mode)
    first_phrase_tokens: int | None = None  # tokens it took to cut the first phrase
    token_checks: int = 0  # tokens whose decode time was checked against 3 audio frames
    token_violations: int = 0  # of those, decoded slower than 3 frames (30 ms)
    first_token_ms: float | None = None  # fused time (ms) the first LLM token was decoded
    last_token_ms: float | None = None  # fused time (ms) the latest LLM token was decoded
    synthesis_at: float | None = None  # its first phrase went to the TTS (monotonic)
    first_chunk_at: float | None = None  # the TTS gave its first chunk of speech
    first_audio_at: float | None = None
    first_audio_sample: int | None = None
    end_sample: int | None = None
    error: str | None = None
    cross_modal: CrossModal = field(default_factory=CrossModal)

    def scene_place(self) -> dict | None:
        """Its place in a scene, as the logbook keeps it (None: not a scene's line)."""
        if self.after is None and self.reply_to is None and not self.overlap_s:
            return None
        overlap_ms = round(self.overlap_s * 1000)
        return {"after": self.after, "overlap_ms": overlap_ms, "reply_to": self.reply_to}

    def take_place(self, scene: dict | None) -> None:
        """Back in its scene after a restart (`scene`: what scene_place gave)."""
        if scene:
            self.after, self.reply_to = scene.get("after"), scene.get("reply_to")
            self.overlap_s = (scene.get("overlap_ms") or 0) / 1000

    @property
    def spoken_text(self) -> str:
        return " ".join(self.phrases)

    @property
    def text_to_first_audio(self) -> float | None:
        if self.first_audio_at is None:
            return None
        return self.first_audio_at - self.accepted_at

    def first_audio_steps(self) -> dict[str, float] | None:
        """Where text-to-first-audio went (ms): to the TTS (queue, LLM tokens, phrase window),
        the TTS's first chunk, then placing it and sending its first voiced frame."""
        marks = [self.accepted_at, self.synthesis_at, self.first_chunk_at, self.first_audio_at]
        known = [m for m in marks if m is not None]
        if len(known) < len(marks):
            return None
        names = ("to_synthesis", "synthesis", "to_send")
        steps = zip(names, known, known[1:], strict=False)  # three steps between four marks
        return {n: round((b - a) * 1000, 1) for n, a, b in steps}

    def to_json(self) -> dict:
        ttfa = self.text_to_first_audio
        return {
            "id": self.id,
            "role": self.role,
            "mode": self.mode,
            "text": self.text,
            "cache": self.cache,
            "source": self.source,
            "level": self.level,
            "after": self.after,
            "overlap_ms": round(self.overlap_s * 1000),
            "reply_to": self.reply_to,
            "spoken_text": self.spoken_text,
            "phrases": list(self.phrases),
            "tokens": self.tokens,
            "written_beside": self.written is not None,
            "first_phrase_tokens": self.first_phrase_tokens,
            "token_alignment": {"checked": self.token_checks, "violations": self.token_violations},
            "first_token_ms": self.first_token_ms,
            "last_token_ms": self.last_token_ms,
            "state": str(self.state),
            "text_to_first_audio_ms": None if ttfa is None else round(ttfa * 1000, 1),
            "first_audio_steps_ms": self.first_audio_steps(),
            "start_sample": self.first_audio_sample,
            "end_sample": self.end_sample,
            "error": self.error,
            "cross_modal": self.cross_modal.to_json(),
        }


class Outcomes:
    """An utterance's life as told outside it: its outcome counted once in the metrics, and
    each step written in the logbook (server/logbook.py), so that a restart loses nothing."""

    def __init__(self, metrics: Metrics, logbook: Logbook | None = None) -> None:
        self.metrics, self.logbook = metrics, logbook

    def accepted(self, utt: Utterance) -> None:
        self.metrics.accepted.inc()
        if self.logbook is not None:
            accepted_ms = time.time() * 1000
            scene = utt.scene_place()
            self.logbook.accepted(utt.id, utt.role, utt.mode, utt.text, accepted_ms, scene)

    def speaking(self, utt: Utterance) -> None:
        utt.state = UtteranceState.SPEAKING
        if self.logbook is not None:
            self.logbook.changed(utt.id, str(utt.state))

    def on_air(self, utt: Utterance) -> None:
        """Its first sound left for the viewers: after a restart it is not spoken again."""
        if self.logbook is not None:
            self.logbook.changed(utt.id, "on_air")

    def requeued(self, utt: Utterance) -> None:
        """Taken up again after a restart: no viewer had heard it."""
        self.metrics.accepted.inc()  # this process owes it an outcome too
        if self.logbook is not None:
            self.logbook.requeued(utt.id)

    def finish(self, utt: Utterance, state: UtteranceState, error: str | None = None) -> None:
        """Done, interrupted or failed (with why), once: a later outcome is not counted."""
        if utt.state in FINAL_STATES:
            return
        utt.state = state
        if error is not None:
            utt.error = error
        self.metrics.utterances.labels(str(state)).inc()
        if self.logbook is not None:
            self.logbook.changed(utt.id, str(state), utt.to_json())


class QueueFull(Exception):
    pass
