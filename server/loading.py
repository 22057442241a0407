"""The models, loaded: the LLM, the TTS and the ASR, each warmed up once before showtime."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from models.protocols import ASR, LLM, TTS

from .config import Config
from .show.feedback import checker_thread
from .show.inference import ModelThread

log = logging.getLogger(__name__)


class Models:
    """The loaded model adapters (LLM, TTS, ASR)."""

    def __init__(
        self,
        llm: LLM,
        tts: TTS,
        asr: ASR | None,
        asr_thread: ModelThread | None = None,
        light: TTS | None = None,
        dubbing: Sequence[TTS] = (),
    ) -> None:
        self.llm, self.tts, self.asr = llm, tts, asr
        self.asr_thread = asr_thread  # the low-priority thread the ASR was built on
        self.light = light  # the night's light voice (fallback level 2)
        self.dubbing = list(dubbing)  # the dubbing desk's other workers' voices


def load_models(cfg: Config, progress: Callable[[str], None] | None = None) -> Models:
    """Blocking: load (and on first use convert) every model, then warm each up once."""
    from models.asr import Transcriber
    from models.espeak import EspeakSpeaker
    from models.llm import ChatLLM
    from models.tts import PiperSpeaker

    say = progress or (lambda msg: log.info("%s", msg))
    mc = cfg.models
    cache = Path(mc.cache_dir) if mc.cache_dir else None
    t = time.perf_counter()
    say("loading TTS (Piper)")
    tts = PiperSpeaker(mc.tts_voice, device=mc.device)
    tts.warm_up()
    light = EspeakSpeaker(cfg.night.light_voice)  # the night's: milliseconds a sentence
    light.warm_up()
    # each dubbing worker past the first speaks the same voice on a thread of its own
    dubbing = [tts.sibling() for _ in range(cfg.dub.workers - 1)]
    say(f"TTS ready in {time.perf_counter() - t:.1f} s; loading LLM")
    t = time.perf_counter()
    llm = ChatLLM(
        mc.llm_gguf,
        cache_dir=cache,
        device=mc.device,
        threads=mc.llm_threads,
        dtype=mc.llm_dtype,
        progress=say,
    )
    llm.warm_up()
    say(f"LLM ready in {time.perf_counter() - t:.1f} s")
    asr, asr_thread = None, None
    if cfg.load_asr:
        t = time.perf_counter()
        say("loading ASR (faster-whisper base)")
        # built on its own low-priority thread, so CTranslate2's workers are low-priority too
        asr_thread = checker_thread()
        asr = asr_thread.run_sync(Transcriber, mc.asr_model, cache, mc.device)
        asr_thread.run_sync(asr.warm_up)
        say(f"ASR ready in {time.perf_counter() - t:.1f} s")
    return Models(llm, tts, asr, asr_thread, light, dubbing)
