"""Playout: the show watching its own broadcast. An utterance's first voiced frame as it leaves
(its text-to-first-audio), its end as it plays out (done), and what was announced of speech
the broadcast has passed (forgotten)."""

from __future__ import annotations

from ..media.broadcast import EmittedFrame
from ..metrics import Metrics
from .announcing import Announcer
from .utterances import Outcomes, Utterance, UtteranceState


class Playout:
    def __init__(self, metrics: Metrics, outcomes: Outcomes, announcer: Announcer) -> None:
        self.metrics, self.outcomes, self.announcer = metrics, outcomes, announcer
        self.speaking: Utterance | None = None  # being performed (the stage sets it)
        self.playing: dict[str, Utterance] = {}  # fully placed, still being broadcast

    def find(self, utt_id: str) -> Utterance | None:
        if self.speaking is not None and self.speaking.id == utt_id:
            return self.speaking
        return self.playing.get(utt_id)

    def performed(self, utt: Utterance, write_head: int) -> None:
        """`utt` is placed to its end: done once played, failed if nothing was spoken."""
        if utt.end_sample is None:  # nothing was spoken (an empty LLM reply)
            self.outcomes.finish(utt, UtteranceState.FAILED, "nothing to speak")
        elif utt.end_sample <= write_head:
            self.outcomes.finish(utt, UtteranceState.DONE)
        else:
            self.playing[utt.id] = utt

    def stop(self, role: str | None) -> list[Utterance]:
        """An interrupt: the utterances of `role` (all when None) still playing, interrupted."""
        stopped = [u for u in self.playing.values() if role is None or u.role == role]
        for utt in stopped:
            del self.playing[utt.id]
            self.outcomes.finish(utt, UtteranceState.INTERRUPTED)
        return stopped

    def frame(self, frame: EmittedFrame) -> None:
        """One frame as the broadcast sent it."""
        if frame.voiced:
            for utt_id in frame.utterances:
                utt = self.find(utt_id)
                if utt is not None and utt.first_audio_at is None:
                    utt.first_audio_at = frame.left_at
                    utt.first_audio_sample = frame.start
                    ttfa = frame.left_at - utt.accepted_at
                    self.metrics.text_to_first_audio.labels(utt.mode).observe(ttfa)
                    self.metrics.anomalies.observe("text_to_first_audio", ttfa)
                    self.outcomes.on_air(utt)
        end = frame.start + frame.samples
        for utt in list(self.playing.values()):
            if utt.end_sample is not None and utt.end_sample <= end:
                self.playing.pop(utt.id, None)
                self.outcomes.finish(utt, UtteranceState.DONE)
        self.announcer.forget_played(end)
