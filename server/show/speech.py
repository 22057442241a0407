"""Speech before text: how the TTS and the LLM share the CPU, and where speech starts.

On a small machine the LLM and Piper want the same cores. The audio is the critical path (a
viewer hears a gap) while the LLM runs far ahead of playback, so the LLM yields: it pauses
between tokens while a phrase waits for or is in synthesis.
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np

from models.protocols import SpeechChunk

SILENT_SYMBOLS = {"^", "_", " ", "$"}
LEAD_IN_PEAK = 100
SOFT_START_MS = 30  # a first phoneme may open this long in silence ("w", "h"): cut too


class SpeechFirst:
    """The gate between the LLM's thread and the TTS's thread.

    After each token the LLM waits (a few ms at most) until the stage has read that token,
    so that when the token completes a phrase the LLM pauses before computing the next one:
    a token in flight beside Piper would slow the phrase's synthesis by a token's time.
    """

    SEEN_TIMEOUT = 0.005

    def __init__(self) -> None:
        self._speech_idle = threading.Event()  # no phrase waiting for or in synthesis
        self._speech_idle.set()
        self._llm_waiting = threading.Event()  # the LLM sits between tokens, yielding
        self._tokens = threading.Condition()
        self._produced = 0
        self._seen = 0
        self.llm_running = False

    def start_generation(self) -> None:
        with self._tokens:
            self._produced = self._seen = 0

    def token_seen(self) -> None:
        """The stage has read one more token (and cut a phrase if it completed one)."""
        with self._tokens:
            self._seen += 1
            self._tokens.notify_all()

    def phrase_pending(self) -> None:
        """A phrase was cut: the LLM pauses at its next token boundary."""
        self._speech_idle.clear()

    def speech_idle(self) -> None:
        """No phrase waits for synthesis any more: the LLM goes on."""
        self._speech_idle.set()

    def between_tokens(self) -> None:
        """Called on the LLM's thread between tokens (bounded, so it can never stall)."""
        with self._tokens:
            self._produced += 1
            if not self._tokens.wait_for(lambda: self._seen >= self._produced, self.SEEN_TIMEOUT):
                self._seen = self._produced  # a token the stage never sees (a special one)
        if not self._speech_idle.is_set():
            self._llm_waiting.set()
            self._speech_idle.wait(1.0)
            self._llm_waiting.clear()

    def before_synthesis(self) -> None:
        """Called on the TTS's thread: let the LLM finish the token it is computing first.

        Two models sharing two cores each run at half speed, so the token in flight when a
        phrase is cut would slow its synthesis by about as long as the token takes; waiting
        for it costs at most one token's time and then Piper has the cores to itself.
        """
        if self.llm_running:
            self._llm_waiting.wait(0.05)


def trim_lead_in(chunk: SpeechChunk) -> SpeechChunk:
    """Drop the near-silent start of a chunk: its leading silent phonemes, and the silence a
    soft first sound opens with.

    Piper opens every chunk with ~35 ms of silence ('^'); on an utterance's first chunk that is
    pure latency. A first "w" or "h" may be silent for 20 ms more: cut within SOFT_START_MS, the
    first frame sent carried no sound and first audio waited a frame longer. Every phoneme still
    ends where it did, so the alignment stays true (the first starts where its sound does).
    """
    silent = 0
    for symbol, samples in chunk.phonemes:
        if symbol not in SILENT_SYMBOLS:
            break
        silent += int(samples)
    soft = chunk.sample_rate * SOFT_START_MS // 1000
    loud = np.flatnonzero(np.abs(chunk.audio[: silent + soft].astype(np.int32)) > LEAD_IN_PEAK)
    cut = int(loud[0]) if len(loud) else silent
    # keep a couple of milliseconds so the onset is not clipped
    cut = max(0, cut - chunk.sample_rate // 500)
    if cut == 0:
        return chunk
    phonemes, left = [], cut
    for symbol, samples in chunk.phonemes:
        take = min(left, int(samples))
        left -= take
        if int(samples) - take > 0:
            phonemes.append((symbol, int(samples) - take))
    return dataclasses.replace(chunk, audio=chunk.audio[cut:], phonemes=tuple(phonemes))
