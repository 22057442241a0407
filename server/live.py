"""What the show has once it is up: until then, which step of loading it is at."""

from __future__ import annotations

from dataclasses import dataclass

from .loading import Models
from .show.feedback import SpeechFeedback
from .show.stage import Stage


@dataclass
class Live:
    step: str = "starting"  # what loading is doing; "failed (...)" if it failed
    models: Models | None = None
    feedback: SpeechFeedback | None = None
    stage: Stage | None = None

    def upcoming(self) -> list[tuple[str, dict]]:
        """Events of speech still to be played, for a viewer who joins now."""
        return self.stage.upcoming() if self.stage is not None else []

    def viewer_onset(self, sid: str, onset: dict) -> None:
        """A viewer's record of when it heard and saw an utterance's first voiced viseme."""
        if self.stage is not None:
            self.stage.viewer_onset(sid, onset)
