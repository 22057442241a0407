"""ASR feedback on real audio: Piper speaks, faster-whisper listens, the visemes follow."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from models.asr import Transcriber
from models.tts import PiperSpeaker
from server.metrics import Metrics
from server.show.feedback import SpeechFeedback
from server.show.resample import resample_int16

pytestmark = pytest.mark.models

SHOW_LINES = (
    "Tonight we talk about the stars above the city.",
    "I never thought a robot could sing so well.",
    "Music makes the long night feel a little shorter.",
    "Always remember to drink water and rest your eyes.",
    "Open the window and let the fresh air in.",
    "The moon is bright over the quiet harbour tonight.",
    "Somebody in the chat asked for a happy song.",
    "Let us hear what the next caller has to say.",
    "Our band will play one more tune before midnight.",
    "Thank you all for staying up with us so late.",
)
SHIFT_MS = 80


@pytest.fixture(scope="module")
def speaker() -> PiperSpeaker:
    return PiperSpeaker(device="cpu")


@pytest.fixture(scope="module")
def transcriber() -> Transcriber:
    return Transcriber(device="cpu")


def phrases(speaker: PiperSpeaker, lines, shift_ms: int = 0, hiss: int = 0):
    """(text, 48 kHz pcm, chunk) per chunk; the sound `shift_ms` later than its alignments,
    with white noise of `hiss` (int16 σ) over it."""
    rng = np.random.default_rng(1)
    for line in lines:
        for chunk in speaker.speak(line):
            pcm = resample_int16(chunk.audio, chunk.sample_rate, 48_000)
            pcm = np.concatenate([np.zeros(48 * shift_ms, np.int16), pcm])
            if hiss:
                noisy = pcm + rng.normal(0, hiss, len(pcm))
                pcm = np.clip(noisy, -32768, 32767).astype(np.int16)
            yield chunk.text, pcm, chunk


def listen(speaker, transcriber, items, feedback=None):
    """Feed phrases through a started SpeechFeedback one by one; its correction after each."""

    async def run():
        fb = feedback or SpeechFeedback(transcriber, Metrics(), queue_size=8)
        fb.start()
        corrections = []
        try:
            for n, (text, pcm, chunk) in enumerate(items):
                fb.check(f"u{n}", text, pcm, 0, chunk)
                while not fb.idle:
                    await asyncio.sleep(0.05)
                corrections.append(fb.drift.correction_s)
        finally:
            await fb.stop()
        return fb, corrections

    return asyncio.run(run())


def test_sound_80_ms_late_is_found_and_the_visemes_follow_it(speaker, transcriber):
    fb, corrections = listen(speaker, transcriber, phrases(speaker, SHOW_LINES, SHIFT_MS))
    assert fb.drift.bias_s is not None, "the ASR's own bias was not learned"
    assert fb.counts["checked"] == len(corrections) and fb.counts["flagged"] == 0
    drift_ms = fb.drift.drift_s * 1000
    assert drift_ms > 50, f"an {SHIFT_MS} ms shift was heard as {drift_ms:.0f} ms"
    assert corrections[0] == 0.0
    assert all(b >= a for a, b in zip(corrections, corrections[1:], strict=False)), corrections
    # within a few phrases most of the drift is closed: visemes planned that much later
    assert corrections[-1] * 1000 >= 0.6 * drift_ms, corrections
    assert abs(drift_ms - corrections[-1] * 1000) <= 25, (drift_ms, corrections)
    assert fb.correction_samples() == round(corrections[-1] * 48_000)


def test_sound_on_its_alignments_moves_nothing(speaker, transcriber):
    # not Piper's samples (a hiss 45 dB down is over them), so each is heard twice: the word
    # times of the two must agree wherever the phrase is, whatever its words
    items = phrases(speaker, SHOW_LINES[:5], hiss=100)
    fb, corrections = listen(speaker, transcriber, items)
    assert abs(fb.drift.drift_s) < 0.040, fb.drift.drift_s
    assert max(abs(c) for c in corrections) <= 0.015, corrections


def test_the_wrong_audio_for_a_phrase_is_flagged(speaker, transcriber):
    (_, pcm, chunk), *_ = phrases(speaker, ["Somebody in the chat asked for a happy song."])
    wrong = [("The weather will be cold and rainy tomorrow morning.", pcm, chunk)]
    fb, _ = listen(speaker, transcriber, wrong)
    assert fb.counts["flagged"] == 1
    (flagged,) = fb.summary()["flagged_recent"]
    assert flagged["wer"] > 0.5 and "happy" in flagged["heard"].lower()
