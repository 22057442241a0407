"""The night's light voice (espeak-ng through espeakng-loader), against the real library."""

from __future__ import annotations

import numpy as np
import pytest

from models.espeak import PAUSE, EspeakSpeaker, phoneme_counts
from models.protocols import VoiceStyle
from server.show.onsets import sound_onsets
from server.show.resample import resample_int16
from server.show.visemes import visemes_from_alignment
from tests.alignment import measure

pytestmark = pytest.mark.models

TEXT = "Yes, a listener has a question for us. Only the owls know."


@pytest.fixture(scope="module")
def speaker() -> EspeakSpeaker:
    return EspeakSpeaker()


def test_phonemes_share_their_span_among_their_codepoints_and_sum_to_the_audio():
    audio = np.full(1000, 3000, np.int16)
    audio[900:] = 0  # the sentence's end
    counts = phoneme_counts([(100, "j"), (400, "ˈɛ"), (700, "s"), (900, "")], audio)
    assert counts == ((PAUSE, 100), ("j", 300), ("ˈ", 150), ("ɛ", 150), ("s", 200), (PAUSE, 100))
    # a nameless phoneme over sound goes on with the one before it
    counts = phoneme_counts([(0, "ð"), (300, "ɪ"), (500, ""), (700, "s"), (900, "")], audio)
    assert counts == (("ð", 300), ("ɪ", 400), ("s", 200), (PAUSE, 100))
    # two phonemes at one sample keep their order; none may reach past the audio
    counts = phoneme_counts([(0, "l"), (0, "z"), (50, "n"), (80, "oʊ")], audio[:60])
    assert [p for p, _ in counts] == ["l", "z", "n", "o", "ʊ"]
    assert sum(n for _, n in counts) == 60 and all(n >= 0 for _, n in counts)


def test_one_chunk_a_sentence_of_speech_with_its_phonemes_timed(speaker: EspeakSpeaker):
    chunks = list(speaker.speak(TEXT))
    assert [c.text for c in chunks] == [
        "Yes, a listener has a question for us.",
        "Only the owls know.",
    ]
    for chunk in chunks:
        assert chunk.audio.dtype == np.int16 and chunk.sample_rate == speaker.sample_rate
        assert len(chunk.audio) > 0.5 * chunk.sample_rate
        assert np.sqrt(np.mean(chunk.audio.astype(float) ** 2)) > 300, "silence"
        assert sum(n for _, n in chunk.phonemes) == len(chunk.audio)


def test_the_mouth_opens_where_the_light_voice_sounds(speaker: EspeakSpeaker):
    """Its visemes, placed from its own phoneme timings, cover its voiced audio and rest in
    its pauses, and the mouth opens at each sound after a pause (within 30 ms)."""
    for chunk in speaker.speak(TEXT):
        pad = np.zeros(9600, np.int16)  # 200 ms of quiet on either side, as a viewer hears it
        heard = np.concatenate([pad, resample_int16(chunk.audio, chunk.sample_rate, 48_000), pad])
        track = visemes_from_alignment(chunk.phonemes, len(pad), src_rate=chunk.sample_rate)
        assert not track.unknown, track.unknown
        frames = [f.to_json() for f in track.frames]
        fig = measure(heard, 0, frames)
        print(fig)
        assert fig.voiced_inside >= 0.9, "voiced audio outside the mouth-moving visemes"
        assert fig.silent_outside >= 0.9, "sound where no viseme was planned"
        assert abs(fig.lag_ms) <= 30, "visemes shifted against the audio"
        opens = [f["sample"] for f in frames if f["viseme"] != "sil"]
        onsets = sound_onsets(heard, 48_000, quiet_ms=100)
        assert onsets, "no sound after quiet"
        for onset in onsets:  # the comma's pause too
            assert min(abs(onset - o) for o in opens) <= 30 * 48, (onset, opens)


def test_slower_and_quieter_styles(speaker: EspeakSpeaker):
    def spoken(style: VoiceStyle) -> np.ndarray:
        return np.concatenate([c.audio for c in speaker.speak(TEXT, style)]).astype(float)

    normal, slow = spoken(VoiceStyle()), spoken(VoiceStyle(length_scale=1.5))
    assert len(slow) > 1.25 * len(normal)
    quiet = spoken(VoiceStyle(volume=0.25))
    assert np.sqrt(np.mean(quiet**2)) < 0.35 * np.sqrt(np.mean(normal**2))


def test_a_character_pitched_higher_is_higher_in_the_light_voice_too(speaker: EspeakSpeaker):
    from server.bench.pitch import median_f0

    def voice(pitch: float) -> tuple[float, float]:
        chunks = list(speaker.speak(TEXT, VoiceStyle(pitch=pitch)))
        audio, rate = np.concatenate([c.audio for c in chunks]), chunks[0].sample_rate
        assert all(sum(n for _, n in c.phonemes) == len(c.audio) for c in chunks)
        return median_f0(audio, rate), len(audio) / rate

    (f0, seconds), (higher, higher_s) = voice(1.0), voice(1.3)
    assert higher / f0 > 1.15, (f0, higher)
    assert higher_s == pytest.approx(seconds, rel=0.15)


def test_an_unknown_voice_is_refused_by_name():
    with pytest.raises(ValueError, match="no voice 'xx-nowhere'"):
        EspeakSpeaker("xx-nowhere")


def test_speakers_of_other_voices_and_a_refused_one_leave_each_its_own_voice(
    speaker: EspeakSpeaker,
):
    """The library is the process's: a second speaker, and a voice refused between, must not
    take the first one's sound or change its voice. (espeak-ng's voicing wavers from one call
    to the next, so the voices are told apart by their pitch, not sample by sample.)"""
    from server.bench.pitch import median_f0

    def pitch(of: EspeakSpeaker) -> float:
        chunks = list(of.speak(TEXT))
        assert all(len(c.audio) > 0.5 * c.sample_rate for c in chunks), "no speech"
        return median_f0(np.concatenate([c.audio for c in chunks]), chunks[0].sample_rate)

    before = pitch(speaker)
    other = EspeakSpeaker("en-us+f3")  # a woman's voice
    with pytest.raises(ValueError):
        EspeakSpeaker("xx-nowhere")
    theirs, again = pitch(other), pitch(speaker)
    assert theirs / before > 1.3, (before, theirs)
    assert again == pytest.approx(before, rel=0.05)


def test_piper_speaks_the_same_beside_the_light_voice(speaker: EspeakSpeaker):
    """Piper carries an espeak-ng of its own (its phonemizer): the light voice's library, set up
    in the same process, must not change what Piper says."""
    from models.tts import PiperSpeaker

    piper = PiperSpeaker(device="cpu")
    before = piper.phonemize(TEXT)
    list(speaker.speak(TEXT, VoiceStyle(length_scale=1.5)))
    assert piper.phonemize(TEXT) == before
    chunks = list(piper.speak(TEXT))
    assert [c.text for c in chunks] == [c.text for c in speaker.speak(TEXT)]
