"""Scenes: a host's script of lines for several roles, said in its order, and conversations,
where characters answer each other for a set number of turns.

A scene is accepted whole or not at all (the queue's room and each role's cap). Its lines
follow one another (`Utterance.after`), whatever their roles' weights; a line may reach back
over the end of the one before by `overlap_ms` (both are heard, mixed: media/timeline.py), and
otherwise starts after it. A conversation's turns are chat lines of its roles in rotation; each
answers the turn before as it was spoken, with the few before that (its prompt is made when it
is taken up, from the stage's history or, after a restart, from the logbook's records).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..config import RoleConfig
from .utterances import MODES, Utterance

MAX_LINES = 32  # a scene's lines, at most (the stage's queue holds 32 by default)
MAX_TURNS = 16
MAX_OVERLAP_MS = 5000
# a conversation's turns a prompt carries, at most: enough to answer what was said and not
# repeat what was said before it; a small LLM's context holds them many times over
TURNS_HEARD = 4


class SceneError(ValueError):
    """A request of lines refused (a scene, or a dubbing request: server/dub): `status` (400
    bad, 404 unknown role, 413 too long) and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Limits:
    max_text_chars: int
    role: Callable[[str | None], RoleConfig | None]


def scene_lines(body: dict, limits: Limits) -> list[Utterance]:
    """The utterances of a scene request: {"lines": [...]} or {"conversation": {...}}."""
    if ("lines" in body) == ("conversation" in body):
        raise SceneError(400, 'a scene has "lines" or a "conversation", one of the two')
    if "lines" in body:
        return _script(body["lines"], limits)
    return _conversation(body["conversation"], limits)


def each_line(lines: object, most: int, fields: set[str]) -> list[tuple[str, dict]]:
    """A request's "lines": a list of 1 to `most` objects of `fields` at most, each with
    where it is ("line N") for a refusal's message."""
    if not isinstance(lines, list) or not lines:
        raise SceneError(400, '"lines" must be a list of lines, not empty')
    if len(lines) > most:
        raise SceneError(413, f"a request has at most {most} lines")
    out = []
    for n, line in enumerate(lines):
        where = f"line {n + 1}"
        if not isinstance(line, dict):
            raise SceneError(400, f"{where} must be an object")
        unknown = set(line) - fields
        if unknown:
            raise SceneError(400, f"{where} has unknown field(s): {', '.join(sorted(unknown))}")
        out.append((where, line))
    return out


def _script(lines: object, limits: Limits) -> list[Utterance]:
    out: list[Utterance] = []
    for where, line in each_line(lines, MAX_LINES, {"role", "text", "mode", "overlap_ms"}):
        role = role_named(line.get("role"), limits, where)
        text = text_of(line.get("text"), limits, where)
        mode = mode_of(line.get("mode", "verbatim"), where)
        overlap = line.get("overlap_ms", 0)
        if type(overlap) not in (int, float) or not 0 <= overlap <= MAX_OVERLAP_MS:
            raise SceneError(400, f'{where}: "overlap_ms" must be from 0 to {MAX_OVERLAP_MS}')
        if overlap and not out:
            raise SceneError(400, 'line 1: "overlap_ms" needs a line before it to overlap')
        utt = Utterance(text, role.name, mode, role)
        utt.overlap_s = overlap / 1000
        utt.after = out[-1].id if out else None
        out.append(utt)
    return out


def _conversation(spec: object, limits: Limits) -> list[Utterance]:
    if not isinstance(spec, dict):
        raise SceneError(400, '"conversation" must be an object')
    unknown = set(spec) - {"roles", "turns", "topic"}
    if unknown:
        raise SceneError(400, f"conversation has unknown field(s): {', '.join(sorted(unknown))}")
    names = spec.get("roles")
    if not isinstance(names, list) or len(names) < 2:
        raise SceneError(400, '"roles" must list at least two roles')
    roles = [role_named(name, limits, "conversation") for name in names]
    turns = spec.get("turns")
    if type(turns) is not int or not 1 <= turns <= MAX_TURNS:
        raise SceneError(400, f'"turns" must be a whole number from 1 to {MAX_TURNS}')
    topic = text_of(spec.get("topic"), limits, "conversation")
    out: list[Utterance] = []
    for turn in range(turns):
        role = roles[turn % len(roles)]
        utt = Utterance(topic, role.name, "chat", role)
        if out:
            utt.after = utt.reply_to = out[-1].id
        out.append(utt)
    return out


def _at(where: str | None, message: str) -> str:
    """A refusal's message, with where in the request it applies (a line's, a scene's)."""
    return f"{where}: {message}" if where else message


def role_named(
    name: object, limits: Limits, where: str | None = None, needed: bool = True
) -> RoleConfig:
    """The role `name` names (where not `needed`, None names the first)."""
    if not isinstance(name, str) and (needed or name is not None):
        raise SceneError(400, _at(where, '"role" must be a string'))
    role = limits.role(name)  # a str, or None where allowed
    if role is None:
        raise SceneError(404, _at(where, f"unknown role {name!r}"))
    return role


def text_of(text: object, limits: Limits, where: str | None = None) -> str:
    """The text to speak, stripped; a request's (`/api/v1/say`), a line's or a topic's."""
    if not isinstance(text, str):
        raise SceneError(400, _at(where, '"text" must be a string'))
    text = text.strip()
    if not text:
        raise SceneError(400, _at(where, '"text" is empty'))
    if len(text) > limits.max_text_chars:
        raise SceneError(413, _at(where, f'"text" longer than {limits.max_text_chars} characters'))
    return text


def mode_of(mode: object, where: str | None = None) -> str:
    if mode not in MODES:
        raise SceneError(400, _at(where, '"mode" must be "verbatim" or "chat"'))
    return str(mode)


def answering(topic: str, turns: list[tuple[str, str]]) -> str | None:
    """The prompt of a conversation's turn: the topic and the turns before it as they were
    spoken, `turns` of (role, spoken text), oldest first, the last the one it answers (None
    where that one was not spoken: the topic alone is asked)."""
    if not turns or not turns[-1][1]:
        return None
    *earlier, (role, said) = [(r.capitalize(), text) for r, text in turns]
    heard = "".join(f'{name} said: "{text}"\n' for name, text in earlier if text)
    return (
        f'The topic: {topic}\n{heard}{role} just said: "{said}"\n'
        f"Answer {role} in one or two short sentences."
    )
