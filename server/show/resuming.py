"""After a restart: the stage takes up what the logbook kept (server/logbook.py), before its
worker starts. What no viewer heard is spoken from its start; what was on the air, or in the
works at the restart before too, is reported failed, with why. A scene's lines keep their
order (each names the line it follows) and their overlaps; a conversation's turn whose turns
before were finished before the restart answers them as the logbook's records kept them."""

from __future__ import annotations

from collections.abc import Callable

from ..config import RoleConfig
from .stage import Stage
from .utterances import QueueFull, Utterance, UtteranceState


def resume(
    stage: Stage,
    unfinished: list[dict],
    finished: list[dict],
    role_of: Callable[[str], RoleConfig | None],
) -> None:
    """`unfinished`: the logbook's rows, in the order accepted; `finished`: the records of the
    last finished utterances, which the host still sees."""
    stage.before_restart = finished
    for row in unfinished:
        character = role_of(row["role"])
        utt = Utterance(row["text"], row["role"], row["mode"], id=row["id"])
        utt.character = character or utt.character
        utt.take_place(row.get("scene"))  # a scene's line keeps its order and its overlap
        stage.history.append(utt)
        if row["state"] == "on_air":
            why = "the server stopped while it was being spoken"
        elif row["state"] != "queued" and row["restarts"] >= 1:
            why = "it was in the works at two restarts in a row (it may be what stops them)"
        elif character is None:
            why = f"its role {row['role']!r} is gone after a restart"
        else:
            try:
                stage.queue.put(utt)
                if row["state"] != "queued":
                    stage.outcomes.requeued(utt)
                continue
            except QueueFull:
                why = "the queue was full after a restart"
        stage.outcomes.finish(utt, UtteranceState.FAILED, why)
    stage.metrics.queue_depth.set(len(stage.queue))
