"""`allnighter bench nights`: what the night's fallback levels save, measured on the real models.

Level 1 condenses a viewer's long message before the LLM reads it and answers on a tighter
token budget; level 2 speaks in the light voice (espeak-ng) instead of Piper. Each is measured
against level 0 in the same run, on the same lines:

- the voices: CPU milliseconds per second of speech made (the process's CPU time, so every thread
  a voice runs on counts), per line, and its median; the goal is at most a third of Piper's;
- the LLM: long chat messages (several sentences and a question) answered at level 0 (the
  message whole, the show's token budget) and at level 1 (condensed, the night's budget): the
  share of the message's words kept (the compression ratio the server exports), the tokens
  of each reply, and the CPU they cost.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from models.protocols import LLM, TTS

from ..config import Config, load_config
from ..show.condensing import condense
from .lipsync import lines
from .nightsim import DOWN_S, RESTART_S, Night, simulate
from .table import median, render

# Long messages as a chat brings them at night: news of the viewer's evening, then a question
CHAT = [
    "Good evening from the night shift at the bakery. The ovens are warm and the radio is on. "
    "We listen to you every night while the dough rises. What do you like to eat at 3 a.m.?",
    "I cannot sleep again and the city is very quiet tonight. The neighbours' dog barked at a "
    "fox an hour ago. My tea is cold. Do you think foxes are afraid of dogs?",
    "Hello from a train crossing the mountains. The carriage is nearly empty and the lights "
    "are dim. Snow is falling outside the window. Have you ever seen snow at night?",
    "My daughter was born two hours ago and I am watching you from the hospital corridor. "
    "Everyone is asleep but me. What should I tell her about the night she was born?",
    "It is raining hard here and the power went out twice. I am on my phone with the battery "
    "at twelve percent. The candles smell of vanilla. Can you tell a very short story?",
    "We are three friends on a rooftop with a telescope. Jupiter was bright an hour ago but "
    "the clouds came. Now we only see the city glow. Which planet should we look for next?",
]


def cpu_per_speech_second(tts: TTS, texts: list[str]) -> list[float]:
    """For each text: the process's CPU milliseconds spent making it, per second of its
    speech."""
    out = []
    for text in texts:
        cpu = time.process_time()
        chunks = list(tts.speak(text))
        spent = time.process_time() - cpu
        seconds = sum(len(c.audio) / c.sample_rate for c in chunks)
        out.append(1000 * spent / seconds)
    return out


def reply(llm: LLM, persona: str, message: str, budget: int) -> tuple[int, float]:
    """The reply's tokens and the CPU seconds it took."""
    cpu = time.process_time()
    tokens = sum(1 for _ in llm.stream(llm.chat_messages(persona, message), budget))
    return tokens, time.process_time() - cpu


def levels_table(cfg: Config, llm: LLM, piper: TTS, light: TTS, n: int) -> str:
    texts = lines(n)
    for tts in (piper, light):  # their first calls set up caches and threads
        tts.warm_up()
    normal, lighter = cpu_per_speech_second(piper, texts), cpu_per_speech_second(light, texts)
    ratio = median(lighter) / median(normal)
    night, budget = cfg.night, cfg.models.max_new_tokens
    persona = cfg.roles[0].persona
    kept = [condense(m, night.compressed_words)[1] for m in CHAT]
    full = [reply(llm, persona, m, budget) for m in CHAT]
    tight = min(budget, night.compressed_tokens)  # as the show answers at level 1
    short = [reply(llm, persona, condense(m, night.compressed_words)[0], tight) for m in CHAT]
    rows: list[list[object]] = [
        ["Piper, CPU ms per s of speech", 0, len(texts), median(normal), "baseline", "—"],
        ["espeak-ng, CPU ms per s of speech", 2, len(texts), median(lighter), ratio,
         "holds" if ratio <= 1 / 3 else "fails"],
        ["chat message, share of words kept", 1, len(CHAT), median(kept), median(kept), "—"],
    ]  # fmt: skip
    for figure, k in (("reply tokens", 0), ("reply CPU s", 1)):
        for level, name, figures in ((0, "message whole", full), (1, "condensed", short)):
            ratio_k = _ratio(figures, full, k)
            rows.append([f"{figure}, {name}", level, len(CHAT),
                         median([f[k] for f in figures]), ratio_k, "—"])  # fmt: skip
    return render(
        "bench nights: what each fallback level costs, against level 0 in the same run "
        f"(medians; goal for the light voice: CPU ≤ 1/3 of Piper's; {_cores()})",
        ["figure", "level", "n", "median", "÷ level 0", "goal"],
        rows,
    )


def nights_table(nights: list[Night]) -> str:
    def spread(values: list[float]) -> list[object]:
        return [median(values), min(values), max(values)]

    def at_two(night: Night, variant: str, minutes: int) -> float:
        """The busiest `minutes` of the 02:00 hour against the busiest of any other hour."""
        per = [
            sum(night.made[variant][m : m + minutes])
            for m in range(0, len(night.made[variant]), minutes)
        ]
        two = RESTART_S // 60 // minutes
        hour = 60 // minutes
        inside = max(per[two : two + hour])
        outside = max(p for k, p in enumerate(per) if not two <= k < two + hour)
        return inside / max(1, outside)

    shipped = [at_two(n, "shipped", 60) for n in nights]
    aligned = [at_two(n, "aligned", 60) for n in nights]
    incidents = sum(n.incidents for n in nights)
    per_viewer = [n.back_peak / max(1, n.viewers_at_restart) for n in nights]
    rows: list[list[object]] = [
        ["incidents a night (all kinds)", *spread([n.incidents for n in nights]), "0",
         "holds" if incidents == 0 else "fails"],
        ["  accepted lines lost at the 02:00 restart", *spread([n.lost for n in nights]), "0", "—"],
        ["  the clock going backwards", *spread([n.clock_backwards for n in nights]), "0", "—"],
        ["  reads outside the clock's bound %", *spread([100 * n.bound_missed for n in nights]),
         "0", "—"],
        ["  (s from the step to the first reading that shows it, not counted)",
         *spread([n.unknowable_s for n in nights]), "—", "—"],
        ["  cache or logbook past its bound", *spread([n.grew for n in nights]), "0", "—"],
        ["  silences longer than the autopilot's gap (and a second)",
         *spread([n.silences_over for n in nights]), "0", "—"],
        ["longest silence s, the restart's aside", *spread([n.longest_silence_s for n in nights]),
         "—", "—"],
        ["  the restart's, to its first line after", *spread([n.restart_silence_s for n in nights]),
         "—", "—"],
        ["syntheses, 02:00 hour ÷ worst other (cache as shipped)", *spread(shipped), "≤ 1.2",
         "holds" if max(shipped) <= 1.2 else "fails"],
        ["syntheses, 02:00 hour ÷ worst other (aligned lifetimes, baseline)", *spread(aligned),
         "—", "—"],
        ["  busiest minute, 02:00 hour ÷ any other (cache as shipped)",
         *spread([at_two(n, "shipped", 1) for n in nights]), "—", "—"],
        ["  busiest minute, 02:00 hour ÷ any other (aligned, baseline)",
         *spread([at_two(n, "aligned", 1) for n in nights]), "—", "—"],
        ["viewers at the restart", *spread([n.viewers_at_restart for n in nights]), "—", "—"],
        ["pages back in the busiest second after it", *spread([n.back_peak for n in nights]),
         "—", "—"],
        ["  ÷ viewers", *spread(per_viewer), "—", "—"],
        ["viewers at the peak", *spread([n.viewers_peak for n in nights]), "—", "—"],
        ["ladder switches a night", *spread([n.switches for n in nights]), "—", "—"],
    ]  # fmt: skip
    levels = sorted(set().union(*(n.levels for n in nights)))
    return render(
        f"bench nights: {len(nights)} simulated nights, 20:00 to 08:00 (a restart at 02:00, "
        f"down {DOWN_S:.0f} s; the NTP server steps 50 ms at 03:30); levels reached: {levels}",
        ["figure", "median", "best", "worst", "goal", ""],
        rows,
    )


def _ratio(figures: list[tuple[int, float]], base: list[tuple[int, float]], k: int) -> float:
    return median([f[k] for f in figures]) / median([b[k] for b in base])


def _cores() -> str:
    import os

    return f"{len(os.sched_getaffinity(0))} cores"


def main(args: argparse.Namespace, load: Callable | None = None) -> int:
    from ..loading import load_models

    cfg = load_config(args.config)
    cfg.load_asr = False
    if args.nights > 0:
        print(f"{args.nights} simulated nights…", flush=True)
        print(
            nights_table(simulate(args.nights, cfg.cache, cfg.night, cfg.autopilot)) + "\n",
            flush=True,
        )
    models = (load or load_models)(cfg)
    assert models.light is not None  # load_models loads it
    print(levels_table(cfg, models.llm, models.tts, models.light, args.lines) + "\n", flush=True)
    del models  # the real run's server loads its own
    if args.live_minutes > 0:
        from .nightlive import main_live

        main_live(args)
    return 0
