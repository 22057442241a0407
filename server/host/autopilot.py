"""Autopilot: the show runs itself when nobody drives it, and steps aside when someone does.

With it on (a setting, and a switch in the host panel), once nothing waits, nothing is being
made and nothing plays out, the autopilot adds one line, in this order of need:

1. a stock greeting (verbatim, from the speech cache) when viewers joined since the last one;
2. an answer to a viewer's chat message, by the policy configured: the oldest unanswered when
   the show is idle (`when_idle`), once `answer_every` messages came since the last answer
   (`every_n`), or the best question (`by_score`). Each message passes moderation first: a
   blocked word or too long, and it is refused (listed for the host, never spoken);
3. after `max_silence_s` of silence, a few words on a topic from the list.

A host always comes first: when a host says something, answers a message or interrupts, the
autopilot's waiting lines are withdrawn (reported interrupted, with why) and it keeps quiet
for `host_grace_s`. Its decisions run on an injectable clock (the night's simulations).
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from ..config import AutopilotConfig, RoleConfig
from ..show.stage import Stage
from ..show.utterances import QueueFull, Utterance
from ..tasks import every

log = logging.getLogger(__name__)

SOURCE = "autopilot"
REFUSED_KEPT = 20


@dataclass(frozen=True)
class Refusal:
    chat_id: str
    text: str
    why: str

    def to_json(self) -> dict:
        return {"id": self.chat_id, "text": self.text, "why": self.why}


def moderate(text: str, cfg: AutopilotConfig) -> str | None:
    """Why a viewer message may not be answered on air (None: it may)."""
    if len(text) > cfg.max_chars:
        return f"longer than {cfg.max_chars} characters"
    words = set(re.findall(r"\w+", text.casefold()))
    blocked = sorted(w for w in (b.casefold() for b in cfg.blocked_words) if w in words)
    return f"blocked word: {blocked[0]}" if blocked else None


def score(text: str, role: RoleConfig) -> float:
    """How much a message asks for an answer: a question, the character named, a length that
    says something."""
    points = 2.0 * ("?" in text) + 3.0 * (role.name.casefold() in text.casefold())
    return points + min(len(text.split()), 12) / 12


class Autopilot:
    def __init__(
        self,
        cfg: AutopilotConfig,
        stage: Callable[[], Stage | None],
        chat: Callable[[], list[dict]],
        answered: Callable[[str, str], None],
        is_answered: Callable[[str], bool],
        viewers: Callable[[], int],
        role: RoleConfig,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.cfg, self.role, self.clock = cfg, role, clock
        self._stage, self._chat, self._viewers = stage, chat, viewers
        self._answered, self._is_answered = answered, is_answered
        self.rng = rng or random.Random()
        self.enabled = cfg.enabled
        self.refused: deque[Refusal] = deque(maxlen=REFUSED_KEPT)
        self._quiet_since = clock()
        self._host_at = float("-inf")
        self._viewers_greeted = 0
        self._seen_chat: set[str] = set()
        self._new_since_answer = 0
        self.last: str | None = None  # what it did last: "greeting", "answer", "topic"

    # ---- the host -------------------------------------------------------------------------
    def host_acted(self) -> None:
        """A host said, answered or interrupted something: the autopilot steps aside."""
        self._host_at = self.clock()
        stage = self._stage()
        if stage is not None:
            stage.withdraw(SOURCE, "a host came first")

    def switch(self, on: bool) -> None:
        self.enabled = on
        self._quiet_since = self.clock()

    # ---- deciding ----------------------------------------------------------------------------
    def tick(self) -> Utterance | None:
        """One look at the show; the line added, if any."""
        now = self.clock()
        self._count_new_chat()
        stage = self._stage()
        if stage is None or not stage.quiet:
            self._quiet_since = now
            return None
        if not self.enabled or now - self._host_at < self.cfg.host_grace_s:
            return None
        viewers = self._viewers()
        if self.cfg.greet and viewers > self._viewers_greeted:
            self._viewers_greeted = viewers
            return self._say(stage, self.rng.choice(self.cfg.greetings), "verbatim", "greeting")
        self._viewers_greeted = min(self._viewers_greeted, viewers)  # those who left
        if (message := self._chat_to_answer()) is not None:
            utt = self._say(stage, chat_prompt(message), "chat", "answer")
            if utt is not None:
                self._answered(message["id"], utt.id)
                self._new_since_answer = 0
            return utt
        if now - self._quiet_since >= self.cfg.max_silence_s:
            topic = self.rng.choice(self.cfg.topics)
            prompt = f"Say a few words to your viewers about {topic}."
            return self._say(stage, prompt, "chat", "topic")
        return None

    def _chat_to_answer(self) -> dict | None:
        policy = self.cfg.answer_chat
        if policy == "off":
            return None
        open_ = [m for m in self._chat() if not self._is_answered(m["id"])]
        allowed = [m for m in open_ if self._allowed(m)]
        if not allowed:
            return None
        if policy == "when_idle":
            return allowed[0]
        if policy == "every_n":
            return allowed[-1] if self._new_since_answer >= self.cfg.answer_every else None
        return max(allowed, key=lambda m: score(m["text"], self.role))

    def _allowed(self, message: dict) -> bool:
        why = moderate(message["text"], self.cfg)
        if why is None:
            return True
        if all(r.chat_id != message["id"] for r in self.refused):
            self.refused.append(Refusal(message["id"], message["text"], why))
            log.info("autopilot: not answering chat %s: %s", message["id"], why)
        return False

    def _count_new_chat(self) -> None:
        for m in self._chat():
            if m["id"] not in self._seen_chat:
                self._seen_chat.add(m["id"])
                self._new_since_answer += 1
        if len(self._seen_chat) > 1000:  # only the recent chat is ever shown again
            self._seen_chat = {m["id"] for m in self._chat()}

    def _say(self, stage: Stage, text: str, mode: str, what: str) -> Utterance | None:
        cache = mode == "verbatim"  # stock lines: synthesized once
        try:
            utt = stage.submit(text, self.role, mode, cache=cache, source=SOURCE)
        except QueueFull:
            return None
        self.last = what
        self._quiet_since = self.clock()
        return utt

    def to_json(self) -> dict:
        return {
            "enabled": self.enabled,
            "last": self.last,
            "answer_chat": self.cfg.answer_chat,
            "refused": [r.to_json() for r in self.refused],
        }

    async def run(self, every_s: float = 0.5) -> None:
        await every(every_s, "autopilot: a look at the show", self.tick)


AUTOPILOT = web.AppKey("autopilot", Autopilot)


def chat_prompt(msg: dict) -> str:
    """The prompt a character answers: who wrote what (the viewer's text is data, not HTML)."""
    return f"{msg['from']} writes in the chat: {msg['text']}"
