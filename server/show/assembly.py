"""The show put together: each step built with what it needs, and the stage over them. The one
place that knows every part (the app calls it once the models are loaded)."""

from __future__ import annotations

from models.protocols import LLM, TTS
from timesync.fused import FusedClock

from ..config import Config
from ..logbook import Logbook
from ..media.broadcast import Broadcast
from ..media.mediaclock import MediaClock
from ..media.timeline import SpeechTimeline
from ..metrics import Metrics
from .announcing import Announcer, Emit
from .crossmodal import CrossModalFigures
from .feedback import SpeechFeedback
from .phrasetap import PhraseTap
from .phrasing import Phrasing
from .pipeline import Pipeline
from .placing import Placing, no_correction
from .playout import Playout
from .resuming import resume
from .speaking import Speaking
from .speech import SpeechFirst
from .speechcache import SpeechCache
from .stage import Stage
from .stamps import Stamps
from .utterances import Outcomes


def assemble(
    cfg: Config,
    clock: MediaClock,
    timeline: SpeechTimeline,
    broadcast: Broadcast,
    metrics: Metrics,
    emit: Emit,
    llm: LLM,
    tts: TTS,
    feedback: SpeechFeedback | None = None,
    fused: FusedClock | None = None,
    logbook: Logbook | None = None,
    speech_cache: SpeechCache | None = None,
    light: TTS | None = None,
) -> Stage:
    stamps = Stamps(clock, fused if fused is not None else FusedClock())
    gate = SpeechFirst()  # the LLM yields the CPU to speech
    tap = None
    if feedback is not None:
        # the ASR hears each phrase as the broadcast sent it, and its correction moves the
        # visemes of what is placed next: the feedback loop, as an input of placing
        heard = tap = PhraseTap(feedback.check)
        broadcast.observe(lambda frame: heard.frame(frame.start, frame.pcm))
    correction = feedback.correction_samples if feedback is not None else no_correction
    announcer = Announcer(emit, stamps)
    pipeline = Pipeline(
        Phrasing(llm, cfg.stage, cfg.models, metrics, gate, stamps, cfg.night),
        Speaking(tts, cfg.stage, cfg.models.tts_deadline_s, metrics, gate, speech_cache, light),
        Placing(clock, timeline, broadcast, cfg.stage, metrics, tap, correction),
        announcer,
        CrossModalFigures(metrics, stamps),
        gate,
        cfg.stage.tts_buffer_phrases,
    )
    outcomes = Outcomes(metrics, logbook)
    playout = Playout(metrics, outcomes, announcer)
    broadcast.observe(playout.frame)
    stage = Stage(
        pipeline, playout, broadcast, timeline, cfg.stage, metrics, outcomes, emit, cfg.roles
    )
    if logbook is not None:  # what a restart left, taken up before the worker starts
        resume(stage, logbook.unfinished(), logbook.finished(cfg.stage.history), cfg.role)
    return stage
