"""PiperSpeaker against the real packaged Piper voice."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from models.catalogue import ModelNotFound
from models.tts import PiperSpeaker, SpeechChunk, VoiceStyle

TEXT = "Hello there. How are you tonight?"


@pytest.fixture(scope="module")
def speaker() -> PiperSpeaker:
    return PiperSpeaker(device="cpu")


def rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(audio.astype(np.float64) ** 2)))


@pytest.mark.models
def test_one_chunk_per_sentence_with_exact_alignments(speaker: PiperSpeaker) -> None:
    chunks = list(speaker.speak(TEXT))
    assert len(chunks) == 2
    assert [c.text for c in chunks] == ["Hello there.", "How are you tonight?"]
    assert speaker.sample_rate == 22050
    for chunk in chunks:
        assert isinstance(chunk, SpeechChunk)
        assert chunk.audio.dtype == np.int16 and chunk.audio.ndim == 1
        assert chunk.sample_rate == 22050
        assert len(chunk.audio) > 0.5 * 22050
        assert rms(chunk.audio) > 1000  # Piper peak-normalizes, so speech is loud
        assert sum(n for _, n in chunk.phonemes) == len(chunk.audio)
        assert all(n >= 0 for _, n in chunk.phonemes)
        names = [p for p, _ in chunk.phonemes]
        assert names[0] == "^" and names[-1] == "$"  # Piper's sentence start/end markers


@pytest.mark.models
def test_slower_style_gives_longer_audio(speaker: PiperSpeaker) -> None:
    def length(style: VoiceStyle) -> int:
        return sum(len(c.audio) for c in speaker.speak(TEXT, style))

    # With duration noise off the lengths are deterministic (measured 38144 vs 51200
    # samples: x1.34, not x1.5, since the chunk's fixed padding does not stretch).
    assert length(VoiceStyle(length_scale=1.5, noise_w_scale=0.0)) > 1.25 * length(
        VoiceStyle(length_scale=1.0, noise_w_scale=0.0)
    )
    # With the voice's default noise the lengths wobble by a few percent.
    assert length(VoiceStyle(length_scale=1.5)) > 1.1 * length(VoiceStyle(length_scale=1.0))


@pytest.mark.models
def test_a_higher_pitch_is_measurably_higher_at_the_same_length(speaker: PiperSpeaker) -> None:
    from server.bench.pitch import median_f0

    line = "Good evening, night owls, and welcome back to the show that never sleeps."

    def voice(pitch: float) -> tuple[float, float, list[SpeechChunk]]:
        style = VoiceStyle(noise_scale=0.0, noise_w_scale=0.0, pitch=pitch)
        chunks = list(speaker.speak(line, style))
        audio = np.concatenate([c.audio for c in chunks])
        rate = chunks[0].sample_rate
        return median_f0(audio, rate), len(audio) / rate, chunks

    f0, seconds, _ = voice(1.0)
    higher, higher_s, chunks = voice(1.3)
    lower, lower_s, _ = voice(0.8)
    assert 70 < f0 < 250, f0  # a man's speaking voice, measured as one
    assert higher / f0 > 1.15 and f0 / lower > 1.15, (f0, higher, lower)
    # about as long (measured 3.50 s and 4.30 s against 3.84 s): Piper's pauses do not stretch
    for length in (higher_s, lower_s):
        assert length == pytest.approx(seconds, rel=0.15)
    for chunk in chunks:  # played faster, and every phoneme still covers its samples
        assert chunk.sample_rate == round(22050 * 1.3)
        assert sum(n for _, n in chunk.phonemes) == len(chunk.audio)


@pytest.mark.models
def test_volume_scales_the_audio(speaker: PiperSpeaker) -> None:
    style = VoiceStyle(noise_scale=0.0, noise_w_scale=0.0)
    quiet = VoiceStyle(noise_scale=0.0, noise_w_scale=0.0, volume=0.25)
    loud_rms = rms(next(iter(speaker.speak("Hello.", style))).audio)
    quiet_rms = rms(next(iter(speaker.speak("Hello.", quiet))).audio)
    assert quiet_rms == pytest.approx(loud_rms / 4, rel=0.05)


@pytest.mark.models
def test_phonemize_groups_by_sentence(speaker: PiperSpeaker) -> None:
    sentences = speaker.phonemize(TEXT)
    assert len(sentences) == 2
    assert all(isinstance(p, str) for p in sentences[0])


@pytest.mark.models
def test_empty_text_gives_no_chunks(speaker: PiperSpeaker) -> None:
    assert list(speaker.speak("   ")) == []
    speaker.warm_up()


def test_missing_explicit_voice_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match="Piper voice"):
        PiperSpeaker(voice_path=tmp_path / "nope.onnx")


@pytest.mark.models
def test_urgent_synthesis_speaks_the_same_with_exact_alignments(speaker: PiperSpeaker) -> None:
    calm = list(speaker.speak("Welcome back to", urgent=False))
    urgent = list(speaker.speak("Welcome back to", urgent=True))
    assert len(calm) == len(urgent) == 1
    assert [p for p, _ in urgent[0].phonemes] == [p for p, _ in calm[0].phonemes]
    assert sum(n for _, n in urgent[0].phonemes) == len(urgent[0].audio)
    assert rms(urgent[0].audio) > 300


@pytest.mark.models
def test_the_default_casts_voices_are_told_apart_by_their_pitch(speaker: PiperSpeaker) -> None:
    """Each pair of the embedded cast's voices, as the show speaks them (noise and all), are
    at least 15 % apart in median F0."""
    from itertools import combinations

    from server.bench.pitch import median_f0
    from server.config import Config
    from server.show.speaking import voice_of

    # a few lines each: Piper's intonation varies from one telling to the next (noise), and
    # one line's median F0 with it, by up to 5 %
    lines = (
        "Good evening, night owls. The moon is up and the coffee is hot.",
        "Tonight we talk about the stars and the people who watch them.",
        "Always on the air.",
    )
    cast = Config().roles
    assert len(cast) >= 2
    f0 = {}
    for role in cast:
        chunks = [c for line in lines for c in speaker.speak(line, voice_of(role))]
        f0[role.name] = median_f0(np.concatenate([c.audio for c in chunks]), chunks[0].sample_rate)
    print(f"\nmedian F0 of the cast: {f0}")
    for a, b in combinations(f0, 2):
        low, high = sorted((f0[a], f0[b]))
        assert high / low >= 1.15, f0


@pytest.mark.models
def test_a_sibling_speaks_the_same_voice_from_another_thread_at_once(
    speaker: PiperSpeaker,
) -> None:
    twin = speaker.sibling()
    texts = ["Good evening, and welcome back.", "Who is on the line?", "Count the stars."] * 2
    steady = VoiceStyle(noise_scale=0.0, noise_w_scale=0.0)  # no noise: the same samples

    def say(voice: PiperSpeaker, out: list[np.ndarray]) -> None:
        for text in texts:
            out.append(np.concatenate([c.audio for c in voice.speak(text, steady)]))

    alone: list[np.ndarray] = []
    say(speaker, alone)
    ours: list[np.ndarray] = []
    theirs: list[np.ndarray] = []
    other = threading.Thread(target=say, args=(twin, theirs))
    other.start()
    say(speaker, ours)
    other.join()
    assert len(ours) == len(theirs) == len(texts)
    for a, b, c in zip(alone, ours, theirs, strict=True):
        assert np.array_equal(a, b) and np.array_equal(a, c)
