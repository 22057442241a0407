"""A dubbing request's lines: what a client asks for, checked, and what each becomes."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..config import RoleConfig
from ..show.scenes import Limits, SceneError, each_line, role_named, text_of
from ..show.visemes import VisemeFrame

FORMATS = ("wav", "opus")
_ids = itertools.count()


DubError = SceneError  # a request refused: `status` and why


@dataclass
class Dubbed:
    """One line spoken: 48 kHz int16 audio, its viseme frames and sound onsets on the same
    sample clock (sample 0: the audio's first)."""

    pcm: np.ndarray
    frames: list[VisemeFrame]
    onsets: list[int]


@dataclass
class DubLine:
    """A line waiting to be dubbed, as the role scheduler sees it (server/show/scheduling.py)."""

    index: int  # its place in its request
    role: str
    text: str
    character: RoleConfig = field(repr=False)
    id: str = field(default_factory=lambda: f"dub-{next(_ids)}")
    after: str | None = None  # the request's line before: its lines are spoken in order
    accepted_at: float = field(default_factory=time.monotonic)
    due_at: float | None = None  # paced (server/dub/desk.py): when the line before it played
    started_at: float | None = None  # taken up by the worker
    finished_at: float | None = None  # spoken whole, or failed
    done: asyncio.Future[Dubbed] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future(), repr=False
    )

    @property
    def spoken(self) -> bool:
        """Made whole: not failed, not withdrawn."""
        done = self.done
        return done.done() and not done.cancelled() and done.exception() is None


def dub_lines(
    body: dict,
    role: Callable[[str | None], RoleConfig | None],
    max_lines: int,
    max_text_chars: int,
) -> tuple[list[DubLine], str]:
    """The lines of a request {"lines": [{"role", "text"}], "format"?}, and its format."""
    unknown = set(body) - {"lines", "format"}
    if unknown:
        raise DubError(400, f"unknown field(s): {', '.join(sorted(unknown))}")
    fmt = body.get("format", "wav")
    if fmt not in FORMATS:
        raise DubError(400, '"format" must be "wav" or "opus"')
    out: list[DubLine] = []
    limits = Limits(max_text_chars, role)
    for n, (where, line) in enumerate(each_line(body.get("lines"), max_lines, {"role", "text"})):
        character = role_named(line.get("role"), limits, where, needed=False)
        text = text_of(line.get("text"), limits, where)
        out.append(DubLine(n, character.name, text, character))
        if n:
            out[-1].after = out[-2].id
    return out, fmt
