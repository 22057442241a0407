"""The cross-modal figures of an utterance: when its text, its audio and its picture happened,
on the fused clock. Its audio against its text once, when its first voiced viseme is placed;
each viewer's hearing and drawing of it as the viewer's page reports them."""

from __future__ import annotations

from ..metrics import Metrics
from .stamps import Stamps
from .utterances import Utterance, ViewerOnset


class CrossModalFigures:
    def __init__(self, metrics: Metrics, stamps: Stamps) -> None:
        self.metrics, self.stamps = metrics, stamps

    def audio_placed(self, utt: Utterance, sample: int) -> None:
        """`utt`'s first voiced viseme is placed at `sample`: its audio against its text."""
        cm = utt.cross_modal
        cm.audio_ms = self.stamps.sample_ms(sample)
        # a verbatim line is text from the moment it is accepted
        chat = utt.mode == "chat"
        cm.text_ms = utt.first_token_ms if chat else self.stamps.fused_ms(utt.accepted_at)
        if cm.text_ms is not None:
            self.metrics.cross_modal.labels("audio_minus_text").observe(cm.audio_ms - cm.text_ms)

    def viewer_onset(self, utt: Utterance, sid: str, onset: dict) -> None:
        """A viewer drew `utt`'s first voiced viseme: its page's `utterance_onsets` record
        {id, sample, heard_ms, drawn_ms} (fused ms), as the signals checked it."""
        audio_ms = self.stamps.sample_ms(onset["sample"])
        seen = ViewerOnset(audio_ms, onset["heard_ms"], onset["drawn_ms"])
        if utt.cross_modal.add_viewer(sid, seen):
            offsets = self.metrics.cross_modal
            offsets.labels("heard_minus_audio").observe(seen.heard_ms - seen.audio_ms)
            offsets.labels("picture_minus_heard").observe(seen.picture_ms - seen.heard_ms)
