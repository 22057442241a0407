"""Each phrase's sound as the broadcast sent it, gathered frame by frame for the ASR check.

The feedback must hear what left the server, not what Piper handed the timeline: placement,
mixing and anything else on the way show up only there. A phrase is expected when it is
scheduled; each emitted frame fills the part it covers; once the broadcast is past the
phrase's end, the whole phrase goes to the checker. A phrase whose utterance was interrupted
is forgotten (its sound was cut; checking it would flag words the host silenced).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from models.protocols import SpeechChunk

# phrases scheduled and not yet sent: the stage runs at most max_ahead_s (20 s) ahead
MAX_PENDING = 128


@dataclass
class ExpectedPhrase:
    utterance_id: str
    text: str
    start: int  # broadcast sample of its first sample
    chunk: SpeechChunk  # Piper's chunk: its own sound and alignments
    pcm: np.ndarray  # the broadcast's samples over [start, start + len)

    @property
    def end(self) -> int:
        return self.start + len(self.pcm)


class PhraseTap:
    """Gathers scheduled phrases' samples from the broadcast frames; hands each on complete."""

    def __init__(self, deliver: Callable[[str, str, np.ndarray, int, SpeechChunk], None]) -> None:
        self._deliver = deliver  # (utterance_id, text, pcm, start, chunk), as SpeechFeedback.check
        self._pending: deque[ExpectedPhrase] = deque(maxlen=MAX_PENDING)

    def expect(
        self, utterance_id: str, text: str, start: int, samples: int, chunk: SpeechChunk
    ) -> ExpectedPhrase:
        """Gather [start, start + samples): call before it is placed, so no frame of it is
        sent before it is expected."""
        phrase = ExpectedPhrase(utterance_id, text, start, chunk, np.zeros(samples, np.int16))
        self._pending.append(phrase)
        return phrase

    def extend(
        self, phrase: ExpectedPhrase, start: int, samples: int, text: str, chunk: SpeechChunk
    ) -> bool:
        """Make an expected phrase go on over [start, start + samples), right after it, as
        `text` and `chunk` (an opening and the rest of its sentence, heard as one); False when
        it has been handed on already or does not end there."""
        if phrase not in self._pending or phrase.end != start:
            return False
        phrase.pcm = np.concatenate([phrase.pcm, np.zeros(samples, np.int16)])
        phrase.text, phrase.chunk = text, chunk
        return True

    def frame(self, start: int, pcm: np.ndarray) -> None:
        """One emitted frame: its first broadcast sample and its samples."""
        end = start + len(pcm)
        done = []
        for phrase in self._pending:
            lo, hi = max(start, phrase.start), min(end, phrase.end)
            if hi > lo:
                phrase.pcm[lo - phrase.start : hi - phrase.start] = pcm[lo - start : hi - start]
            if phrase.end <= end:
                done.append(phrase)
        for phrase in done:
            self._pending.remove(phrase)
            self._deliver(phrase.utterance_id, phrase.text, phrase.pcm, phrase.start, phrase.chunk)

    def forget(self, utterance_ids: Iterable[str]) -> None:
        """Drop the phrases of utterances that were interrupted."""
        ids = set(utterance_ids)
        kept = [p for p in self._pending if p.utterance_id not in ids]
        self._pending = deque(kept, maxlen=MAX_PENDING)

    def __len__(self) -> int:
        return len(self._pending)
