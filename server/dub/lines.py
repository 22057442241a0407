"""A dubbing request's lines: what a client asks for, checked, and what each becomes."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..config import RoleConfig
from ..show.visemes import VisemeFrame

FORMATS = ("wav", "opus")
_ids = itertools.count()


class DubError(ValueError):
    """A request refused: `status` and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


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
    started_at: float | None = None  # taken up by the worker
    first_audio_at: float | None = None  # its first chunk spoken
    finished_at: float | None = None  # spoken whole, or failed
    done: asyncio.Future[Dubbed] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future(), repr=False
    )


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
    lines = body.get("lines")
    if not isinstance(lines, list) or not lines:
        raise DubError(400, '"lines" must be a list of lines, not empty')
    if len(lines) > max_lines:
        raise DubError(413, f"a request has at most {max_lines} lines")
    out: list[DubLine] = []
    for n, line in enumerate(lines):
        where = f"line {n + 1}"
        if not isinstance(line, dict) or set(line) - {"role", "text"}:
            raise DubError(400, f'{where} must be an object of "role" and "text"')
        name = line.get("role")
        if name is not None and not isinstance(name, str):
            raise DubError(400, f'{where}: "role" must be a role\'s name')
        character = role(name)
        if character is None:
            raise DubError(404, f"{where}: unknown role {name!r}")
        text = line.get("text")
        if not isinstance(text, str) or not text.strip():
            raise DubError(400, f'{where}: "text" must be a string, not empty')
        if len(text) > max_text_chars:
            raise DubError(413, f'{where}: "text" longer than {max_text_chars} characters')
        out.append(DubLine(n, character.name, text.strip(), character))
        if n:
            out[-1].after = out[-2].id
    return out, fmt
