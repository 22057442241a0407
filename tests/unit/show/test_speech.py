"""Where speech starts, and how the LLM yields the CPU to it."""

from __future__ import annotations

import threading
import time

import numpy as np

from models.protocols import SpeechChunk
from server.show.speech import SpeechFirst, trim_lead_in


def test_lead_in_silence_is_trimmed_without_moving_any_phoneme_against_its_audio():
    sr = 22_050
    audio = np.concatenate([np.zeros(800, np.int16), np.full(1000, 5000, np.int16)])
    chunk = SpeechChunk(audio, sr, (("^", 768), ("a", 1032)), "a")
    out = trim_lead_in(chunk)
    cut = len(audio) - len(out.audio)
    assert 700 < cut <= 768  # within '^', a couple of ms before the first loud sample
    assert sum(n for _, n in out.phonemes) == len(out.audio)
    # the sounding phoneme still starts exactly where its audio starts
    start_a = sum(n for p, n in out.phonemes if p == "^")
    assert start_a == 768 - cut and out.audio[800 - cut] == 5000


def test_speech_that_starts_at_once_is_left_alone():
    chunk = SpeechChunk(np.full(500, 3000, np.int16), 22_050, (("^", 100), ("a", 400)), "a")
    assert trim_lead_in(chunk) is chunk


def test_llm_waits_between_tokens_while_a_phrase_is_pending():
    gate = SpeechFirst()
    gate.llm_running = True
    gate.phrase_pending()
    released = []
    llm = threading.Thread(target=lambda: (gate.between_tokens(), released.append(1)))
    llm.start()
    gate.before_synthesis()  # returns once the LLM sits between tokens
    time.sleep(0.05)
    assert not released, "the LLM went on while a phrase waited for speech"
    gate.speech_idle()
    llm.join(1)
    assert released


def test_a_first_sound_that_opens_in_silence_is_trimmed_to_where_it_sounds():
    # "w": the phoneme starts at 768, its sound 20 ms later: the first frame sent must sound
    sr = 22_050
    soft = 768 + sr // 50
    audio = np.concatenate([np.zeros(soft, np.int16), np.full(1000, 5000, np.int16)])
    chunk = SpeechChunk(audio, sr, (("^", 768), ("w", len(audio) - 768)), "w")
    out = trim_lead_in(chunk)
    cut = len(audio) - len(out.audio)
    assert soft - sr // 500 - 1 <= cut < soft  # a couple of ms before the sound
    assert out.phonemes == (("w", len(out.audio)),)  # it ends where it did
    # sound that starts later than that is not looked for: the '^' alone is cut
    late = np.concatenate([np.zeros(768 + sr // 10, np.int16), np.full(1000, 5000, np.int16)])
    out = trim_lead_in(SpeechChunk(late, sr, (("^", 768), ("w", len(late) - 768)), "w"))
    assert len(late) - len(out.audio) == 768 - sr // 500
