"""An utterance's opening with the real Piper voice: the first words come from a short synthesis
and the rest of the sentence from the whole one, and the viewer hears no gap or click where they
meet (server/show/opening.py)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from server.show.opening import opening_words, split_at_word, spoken

pytestmark = pytest.mark.models

LINES = [
    "Good evening, night owls.",  # a comma's pause
    "Welcome back to the show that never sleeps.",  # running speech
    "The moon is up and so are we.",
    "Let me read a few of your messages.",
    "Somebody asked about comets again.",
    "It is quiet out there, isn't it?",
]
SILENT = 100  # int16 peak at or below which a sample is silence (the broadcast's VOICED_PEAK)


def _quiet_ms(audio: np.ndarray, at: int, rate: int, span_ms: float = 80) -> float:
    """How much (ms) of the span_ms either side of sample `at` is silence."""
    span = int(rate * span_ms / 1000)
    window = np.abs(audio[max(0, at - span) : at + span].astype(np.int32))
    return float((window <= SILENT).sum() * 1000 / rate)


def _step_at(audio: np.ndarray, at: int) -> float:
    """The largest step between neighbouring samples where two pieces meet at `at`: a click
    is a step (two waveforms cut at random points meet at random values)."""
    window = audio[max(0, at - 2) : at + 2].astype(np.int32)
    return float(np.abs(np.diff(window)).max())


@pytest.fixture(scope="module")
def speaker():
    from models.tts import PiperSpeaker

    return PiperSpeaker(device="cpu")


def _spoken(speaker, phrase: str) -> list[tuple[str, object]]:
    async def synthesize(text: str, urgent: bool):
        for chunk in speaker.speak(text, urgent=urgent):
            yield chunk

    async def run():
        return [(text, chunk) async for text, chunk, _ in spoken(phrase, synthesize, True)]

    return asyncio.run(run())


def test_an_opening_joins_the_rest_with_no_gap_or_click(speaker):
    """Each line's opening and rest, against the whole sentence synthesized on its own at the
    same word boundary: the silence around the join (Piper's renderings differ from one
    another there by -12 to +23 ms), and the largest step between samples (a click)."""
    added = []
    for line in LINES:
        k = opening_words(line)
        assert k is not None
        got = _spoken(speaker, line)
        words = line.split()
        assert [text for text, _ in got] == [" ".join(words[:k]), " ".join(words[k:])]
        head, tail = got[0][1], got[1][1]
        rate = head.sample_rate
        joined = np.concatenate([head.audio, tail.audio])
        at = len(head.audio)
        whole = next(iter(speaker.speak(line)))
        whole_at = len(split_at_word(whole, k)[0].audio)
        more = _quiet_ms(joined, at, rate) - _quiet_ms(whole.audio, whole_at, rate)
        print(f"{line!r}: {more:+.0f} ms of silence at the join against the whole sentence")
        added.append(more)
        assert more <= 50, f"{line!r}: a gap of {more:.0f} ms more silence than the whole"
        # no click: the step where they meet is no larger than most of the sentence's own
        voiced = np.abs(whole.audio.astype(np.int32)) > SILENT
        steps = np.abs(np.diff(whole.audio.astype(np.int32)))[voiced[1:]]
        assert _step_at(joined, at) <= np.percentile(steps, 90), (line, _step_at(joined, at))
        # every word once: the two parts last about as long as the whole sentence
        assert abs(len(joined) - len(whole.audio)) < 0.25 * len(whole.audio), line
    assert np.median(added) <= 15, added
