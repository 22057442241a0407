"""`allnighter bench latency`: text to first audio through the whole pipeline, beside its floor,
and against a peer.

Pipeline: a host's line accepted over HTTP → its first non-silent frame leaving for viewers
(measured by the broadcast itself). Floor, measured in the same run on the same model objects
while the server is idle: for verbatim lines, Piper's first chunk alone (with alignments); for
chat prompts, the LLM's first phrase plus Piper's first chunk of it. The overhead is what the
stage, the phrase window, resampling, scheduling and the broadcast add on top.

Then the 20 verbatim lines against pipecat's in-process Piper path (peer.py): Allnighter as
shipped, opening each line with its first words (server/show/opening.py), at the server and at a
WebRTC viewer; Allnighter again with the opening off (Piper's whole first sentence, the
baseline); and pipecat, in a virtual environment of its own, with the same voice and lines.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from server.config import load_config

from ..keys import LIVE
from .inprocess import LiveServer, say, until_final
from .peer import first_audio_tables, measure_allnighter, measure_pipecat
from .table import median, pct, render

VERBATIM = [
    "Good evening, night owls.",
    "The moon is up and so are we.",
    "Welcome back to the show that never sleeps.",
    "Grab a warm drink and settle in.",
    "Tonight we talk about the stars.",
    "It is quiet out there, isn't it?",
    "Let me read a few of your messages.",
    "Somebody asked about comets again.",
    "Comets are mostly ice and dust.",
    "That is why they grow a tail near the sun.",
    "Thank you for staying up with me.",
    "Next up, a story about a lighthouse.",
    "The keeper lit the lamp every night.",
    "Ships passed safely because of him.",
    "Nobody ever thanked him in person.",
    "But the sea remembered.",
    "Let's take a short breath together.",
    "In, and out. Good.",
    "Three hours until sunrise.",
    "Stay with me, it gets better.",
]
LONG_FIRST = [
    "Good evening to every night owl, early bird, insomniac and shift worker who found their "
    "way to this little corner of the internet tonight. We are glad you are here.",
    "If you have ever wondered why the sky looks darker on a winter night than it does in the "
    "middle of summer, tonight we are going to find out together. Stay a while.",
    "The lighthouse keeper climbed the one hundred and twelve steps of his tower every evening "
    "at exactly the same time, rain or shine, for forty years. Nobody knew why.",
    "Somewhere between midnight and the first grey light of morning there is an hour that "
    "belongs to nobody at all, and that is the hour we are broadcasting from right now.",
    "When the station started this show we promised to keep the lights on and the kettle warm "
    "for anyone who could not sleep, and we intend to keep that promise tonight.",
]
PROMPTS = [
    "Say hello to the viewers.",
    "What is your favourite star?",
    "Tell us something about the moon.",
    "How do you stay awake all night?",
    "Give us a tip for a calm evening.",
    "What should we talk about next?",
    "Describe the night sky in one sentence.",
    "Why do owls hoot?",
    "What is a good midnight snack?",
    "Say something kind to a tired viewer.",
    "What is a comet?",
    "Tell a very short joke.",
    "What does the sea sound like at night?",
    "Recommend a song for late hours.",
    "What time is it where you are?",
    "How do lighthouses work?",
    "Name a constellation.",
    "What do you dream about?",
    "Why is the sky dark at night?",
    "Wish everyone a good night.",
]


async def _say_and_wait(srv: LiveServer, text: str, mode: str) -> dict:
    status, body = await say(srv, text, mode=mode)
    if status != 202:
        raise RuntimeError(f"say refused: {status} {body}")
    # poll gently: the server shares this process, and its loop and GIL with the client
    return await until_final(srv, body["utterance_id"], timeout=300, poll=0.25)


def _settle(srv: LiveServer) -> None:
    """Wait until the ASR checker is idle, then a moment more for the last audio to leave."""
    feedback = srv.app[LIVE].feedback
    for _ in range(400):
        busy = feedback is not None and not feedback.idle
        if not busy:
            break
        time.sleep(0.05)
    time.sleep(0.3)


def _floor_verbatim(tts: Any, text: str) -> float:
    t = time.perf_counter()
    next(iter(tts.speak(text)))
    return time.perf_counter() - t


def _floor_chat(llm: Any, tts: Any, persona: str, prompt: str, utt: dict) -> float:
    """The LLM decoding as many tokens as the pipeline's first phrase took, then Piper's first
    chunk of that same phrase: the same work as the pipeline's, with nothing around it.

    Sampling makes every reply different; matching the work keeps the comparison fair.
    """
    first_phrase, tokens = utt["phrases"][0], utt["first_phrase_tokens"] or 1
    t = time.perf_counter()
    stream = llm.stream(llm.chat_messages(persona, prompt), max_new_tokens=tokens)
    for _ in stream:
        pass
    next(iter(tts.speak(first_phrase)))
    return time.perf_counter() - t


def _first_sentence_floor(tts: Any, text: str) -> float:
    """Whole-sentence TTS: what first audio would cost without the phrase window."""
    return _floor_verbatim(tts, text.split(". ")[0] + ".")


def run(n: int, config: str | None, peer_lines: int = len(VERBATIM)) -> str:
    cfg = load_config(config, env={"ALLNIGHTER_HOST_TOKEN": "bench-latency-token"})
    srv = LiveServer(cfg).start(ready_timeout=900)
    try:
        ours = measure_allnighter(srv, VERBATIM[:peer_lines], _settle, _say_and_wait)
        models = srv.app[LIVE].models
        assert models is not None  # the server is live
        llm, tts, role = models.llm, models.tts, cfg.roles[0]
        rows: dict[str, dict[str, list[float]]] = {}

        def measure(kind: str, items: list[str], mode: str, floor: Any) -> None:
            pipe, base = [], []
            for text in items:
                _settle(srv)
                u = asyncio.run(_say_and_wait(srv, text, mode))
                if u["text_to_first_audio_ms"] is None:
                    raise RuntimeError(f"no audio for {text!r}: {u}")
                pipe.append(u["text_to_first_audio_ms"])
                _settle(srv)
                base.append(floor(text, u) * 1000)
            rows[kind] = {"pipeline": pipe, "floor": base}
            print(f"{kind}: done ({len(items)})", flush=True)

        verbatim = (VERBATIM * ((n + len(VERBATIM) - 1) // len(VERBATIM)))[:n]
        prompts = (PROMPTS * ((n + len(PROMPTS) - 1) // len(PROMPTS)))[:n]
        measure("verbatim", verbatim, "verbatim", lambda t, _: _floor_verbatim(tts, t))
        measure(
            "chat",
            prompts,
            "chat",
            lambda t, first: _floor_chat(llm, tts, role.persona, t, first),
        )
        measure(
            "long first sentence",
            LONG_FIRST[: max(1, min(n, len(LONG_FIRST)))],
            "verbatim",
            lambda t, _: _first_sentence_floor(tts, t),
        )
    finally:
        srv.stop()
    # the peer on the same lines, with the server gone: it has the machine to itself, as ours had
    peer = first_audio_tables(ours, measure_pipecat(VERBATIM[:peer_lines]))

    table = []
    for kind, r in rows.items():
        p, f = r["pipeline"], r["floor"]
        floor_name = {
            "verbatim": "Piper first chunk",
            "chat": "LLM first phrase + Piper",
            "long first sentence": "whole-sentence Piper",
        }[kind]
        # paired: each line's pipeline against its own floor, measured right after it
        # (Piper's durations are random, so unpaired medians wander by several ms)
        diffs = [a - b for a, b in zip(p, f, strict=True)]
        ratios = [a / b for a, b in zip(p, f, strict=True)]
        table.append(
            [
                kind,
                len(p),
                median(p),
                pct(p, 95),
                floor_name,
                median(f),
                pct(f, 95),
                median(diffs),
                median(ratios),
            ]
        )
    return "\n\n".join(
        [
            peer,
            render(
                "bench latency: text to first audio (ms), pipeline vs floor in the same run",
                [
                    "lines",
                    "n",
                    "pipeline p50",
                    "pipeline p95",
                    "floor",
                    "floor p50",
                    "floor p95",
                    "overhead p50 (paired)",
                    "ratio p50 (paired)",
                ],
                table,
            ),
        ]
    )


def main(args: argparse.Namespace) -> int:
    print(run(args.lines, args.config, min(args.peer_lines, len(VERBATIM))))
    return 0
