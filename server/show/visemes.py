"""Phoneme alignments from Piper TTS -> Oculus viseme frames on the broadcast clock.

Piper (espeak-ng, en-us) emits one IPA codepoint per alignment entry together with the
number of 22,050 Hz samples it lasts. The avatar is animated with the 15 Oculus /
Ready Player Me visemes, and the web client schedules them against the 48 kHz clock of
the WebRTC audio, so every frame carries a 48 kHz ``sample`` position and ``duration``.

Not every codepoint is a mouth shape of its own:

* modifiers (length ``ː``, combining diacritics, ``ʰ`` ``ʲ`` ``˞`` ...) lengthen the
  PREVIOUS sound, so their samples are folded backwards;
* stress marks ``ˈ`` ``ˌ`` precede the vowel they stress, so their samples are folded
  FORWARDS into the next sound (its start moves earlier);
* ``h`` (and the other throat fricatives) has no lip position of its own: an animator
  pre-shapes the mouth for the following vowel while the breath is audible ("hat" opens
  into ``aa`` from the very start), so ``h`` is folded forwards too;
* ``ʔ`` (glottal stop, e.g. "button" bˈʌʔn̩, "uh-oh") closes the throat, not the lips:
  the mouth simply holds what it had, so it is folded backwards like a modifier.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..media.mediaclock import SAMPLE_RATE

VISEMES: tuple[str, ...] = (
    "sil", "PP", "FF", "TH", "DD", "kk", "CH", "SS", "nn", "RR", "aa", "E", "I", "O", "U",
)  # fmt: skip


def _table(**groups: str) -> dict[str, str]:
    """Expand ``viseme="symbols"`` groups (one codepoint each) into symbol -> viseme."""
    return {sym: viseme for viseme, symbols in groups.items() for sym in symbols}


# Everything Piper's phoneme_id_map knows (the superset of what espeak-ng en-us emits),
# by the lip/jaw shape an animator would use, not by strict articulatory class.
PHONEME_VISEMES: dict[str, str] = {
    **_table(
        # Silence: sentence markers, pad, word space, punctuation. The tone digits,
        # modifiers, stress marks, h-like and glottal sounds after them are listed only
        # for their out-of-context value: in a track they fold into a neighbour (_FOLD_*).
        sil=" !\"#$'(),-.:;?^_"
        + "0123456789↓"
        + "ˈˌːˑ˞ˤʰʲ\u0303\u0327\u0329\u032a\u032f"
        + "hɦħʜʕʢʔʡ",
        PP="pbmɓʙʘβɸ",  # bilabials: the lips close (ɸ β nearly so)
        FF="fvɱʋⱱ",  # lower lip to upper teeth
        TH="θðǀ",  # tongue between the teeth
        DD="tdɾɖɗʈɽɺǃǂ",  # alveolar/retroflex stops and flaps, mouth slightly open
        kk="kɡgqcɟʄɠʛɢɰxχɣʀʁɴŋ",  # velar/uvular/palatal: the lips do nothing special
        CH="ʃʒɕʑʂʐɧç",  # post-alveolar fricatives: lips pushed forward
        SS="sz",
        nn="nlɫɬɮɭʎʟɲɳǁ",  # nasals and laterals: tongue up, teeth nearly together
        RR="rɹɻ",
        aa="aɐɑɒæʌɶ",  # open vowels
        E="eɛəɜɚɘεɤɝ",  # mid vowels (ɚ: American r-coloured schwa, a relaxed mid mouth)
        I="iɪᵻɨɯjʝ",  # close unrounded vowels: spread lips (j is a short i)
        O="oɔøœɵɞ",  # mid rounded vowels
        U="uʊʉyʏwʍɥ",  # close rounded vowels: protruded lips (w is a short u)
    ),
    # Multi-codepoint symbols a caller might pass (Piper itself sends single codepoints).
    "tʃ": "CH",
    "dʒ": "CH",
}

# Symbols that get no span of their own: their samples join the previous span ...
_FOLD_BACK = frozenset("0123456789↓ːˑ˞ˤʰʲ\u0303\u0327\u0329\u032a\u032fʔʡ")
# ... or the next span (stress marks, and h-like sounds shaped by the following vowel).
_FOLD_FORWARD = frozenset("ˈˌhɦħʜʕʢ")

# Unicode-name endings of letters that are vowels (for unknown symbols only).
_VOWEL_NAMES = frozenset("A E I O U Y SCHWA ALPHA EPSILON IOTA OMICRON UPSILON OMEGA".split())

Fold = Literal["back", "forward", "split"] | None


@dataclass(frozen=True)
class VisemeFrame:
    """One viseme held from ``sample`` for ``duration`` samples (48 kHz broadcast clock)."""

    sample: int
    viseme: str
    duration: int
    weight: float = 1.0

    def to_json(self) -> dict:
        """Plain dict for the socket.io viseme timeline."""
        return {
            "sample": self.sample,
            "viseme": self.viseme,
            "duration": self.duration,
            "weight": self.weight,
        }


@dataclass
class VisemeTrack:
    """Frames tiling one TTS chunk, plus how often each unknown symbol was seen."""

    frames: list[VisemeFrame]
    unknown: dict[str, int]


def _fold_of(symbol: str) -> Fold:
    """Which neighbour a no-shape-of-its-own symbol joins (None: it is its own span)."""
    if symbol == " ":
        return "split"
    if symbol in _FOLD_BACK:
        return "back"
    if symbol in _FOLD_FORWARD:
        return "forward"
    return None


def _guess(symbol: str) -> tuple[str, Fold]:
    """Nearest class for one codepoint that is not in the table."""
    # Precomposed letters with diacritics ('ã', 'ẽ'): the base letter sets the shape.
    base = "".join(c for c in unicodedata.normalize("NFD", symbol) if not unicodedata.combining(c))
    for candidate in (base, base.lower()):
        if candidate in PHONEME_VISEMES:
            return PHONEME_VISEMES[candidate], _fold_of(candidate)
    category = unicodedata.category(symbol)
    if not base or category in ("Lm", "Sk", "Mn", "Me"):
        return "sil", "back"  # a bare diacritic / modifier letter: lengthens what came before
    if category[0] in "PZC":
        return "sil", None  # punctuation, separators, control: a pause
    name = unicodedata.name(base[0], "")
    if "VOWEL" in name or name.rsplit(" ", 1)[-1] in _VOWEL_NAMES:
        return "E", None  # a relaxed mid mouth is the least wrong guess for a vowel
    return "DD", None  # neutral consonant: slightly open, no lip gesture


def _classify(symbol: str) -> tuple[str, Fold, bool]:
    """(viseme, fold direction, known) for one alignment symbol."""
    if symbol in PHONEME_VISEMES:
        return PHONEME_VISEMES[symbol], _fold_of(symbol), True
    if len(symbol) == 1:
        return *_guess(symbol), False
    # A multi-codepoint symbol ('oʊ', 'iː'): shaped by its first sound of its own.
    parts = [_classify(c) for c in symbol]
    known = all(k for _, _, k in parts)
    sounding = [(v, f) for v, f, _ in parts if f is None]
    viseme, fold = sounding[0] if sounding else (parts[0][:2] if parts else ("sil", None))
    return viseme, fold, known


def viseme_for(phoneme: str) -> tuple[str, bool]:
    """Out-of-context viseme for ``phoneme`` and whether it is in the table.

    Folding symbols (stress, length, diacritics, h, ʔ) report ``'sil'`` here, which is
    what they become only when nothing is around to fold into; in a track they take the
    neighbouring viseme (see :func:`visemes_from_alignment`).
    """
    viseme, _, known = _classify(phoneme)
    return viseme, known


def visemes_from_alignment(
    phonemes: Sequence[tuple[str, int]],
    start_sample: int,
    src_rate: int = 22050,
    dst_rate: int = SAMPLE_RATE,
) -> VisemeTrack:
    """Convert one chunk's ``(phoneme, num_samples)`` alignment into broadcast-clock frames.

    The frames tile ``[start_sample, start_sample + round(total * dst / src))`` exactly:
    each CUMULATIVE source boundary is scaled and rounded (the same formula the resampler
    uses for its output length), so per-phoneme rounding errors never accumulate.
    """
    unknown: dict[str, int] = {}
    spans: list[list] = []  # [viseme, src_start, src_end], contiguous in source samples
    pending_from: int | None = None  # start of samples waiting for the next span
    pos = 0
    for i, (symbol, count) in enumerate(phonemes):
        count = int(count)  # Piper gives numpy integers
        if count < 0:
            raise ValueError(f"negative sample count {count} for {symbol!r}")
        viseme, fold, known = _classify(symbol)
        if symbol in ("t", "d") and i + 1 < len(phonemes) and phonemes[i + 1][0] in ("ʃ", "ʒ"):
            viseme = "CH"  # espeak spells tʃ/dʒ as two codepoints; the lips round from the t
        if not known:
            unknown[symbol] = unknown.get(symbol, 0) + 1
        end = pos + count
        if fold == "split":
            # A word space is no pause in running speech: Piper gives it a duration, but the
            # sound there is the coarticulation of the two words. Half goes to each side; a
            # real pause comes from punctuation, which stays 'sil', and a space after it is
            # more of the pause (given to the next word, it opened the mouth 60-80 ms before
            # the word after a comma sounded).
            if spans and pending_from is None and spans[-1][0] != "sil":
                spans[-1][2] = pos + count // 2
                pending_from = pos + count // 2
            elif spans and pending_from is None:
                spans[-1][2] = end
            elif pending_from is None:
                pending_from = pos
        elif fold == "back" and spans and pending_from is None:
            spans[-1][2] = end
        elif fold is not None:  # forward, or backward with nothing (yet) behind it
            pending_from = pos if pending_from is None else pending_from
        else:
            spans.append([viseme, pos if pending_from is None else pending_from, end])
            pending_from = None
        pos = end
    if pending_from is not None:  # trailing stress/h: nothing follows, lengthen the last
        if spans:
            spans[-1][2] = pos
        else:
            spans.append(["sil", pending_from, pos])

    frames: list[VisemeFrame] = []
    for viseme, src_start, src_end in spans:
        begin = start_sample + round(src_start * dst_rate / src_rate)
        stop = start_sample + round(src_end * dst_rate / src_rate)
        if stop <= begin:
            continue  # zero-length after scaling: neighbours already tile the gap-free clock
        if frames and frames[-1].viseme == viseme:  # merge runs (also across dropped frames)
            last = frames.pop()
            begin = last.sample
        frames.append(VisemeFrame(sample=begin, viseme=viseme, duration=stop - begin))
    return VisemeTrack(frames=frames, unknown=unknown)
