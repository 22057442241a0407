"""The night's light voice: espeak-ng's formant synthesis, with the phonemes it speaks timed.

At fallback level 2 the show speaks through this voice instead of Piper: a sentence costs a few
milliseconds of CPU instead of a large share of its length (`allnighter bench nights` measures
both). It sounds robotic, which is the price. espeak-ng is the phonemizer Piper itself runs, so
its IPA phonemes are those the viseme table (server/show/visemes.py) already maps; each PHONEME
event says at which sample of the sentence's audio it starts.

The library comes with the `espeakng-loader` package (libespeak-ng 1.52 and its data) and is
driven through ctypes in synchronous mode: `espeak_Synth` returns when the text is spoken, the
audio and the events having come through the callback on the calling thread. Its state is
global to the process: it is initialised once, and called by one speaker at a time.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator

import numpy as np

from models.protocols import TTS, SpeechChunk, VoiceStyle
from models.sentences import split_sentences

AUDIO_OUTPUT_SYNCHRONOUS = 2
PHONEME_EVENTS, PHONEME_IPA = 0x1, 0x2
POS_CHARACTER, CHARS_UTF8 = 1, 1
EVENT_LIST_TERMINATED, EVENT_PHONEME = 0, 7
PARAM_RATE = 1
DEFAULT_RATE = 175  # words a minute: espeak-ng's own default, at length_scale 1
PAUSE = "_"  # a phoneme with no name over quiet audio: a span of silence for the visemes
QUIET_RMS = 300.0  # about −40 dBFS: below it a nameless phoneme is a pause


class _Event(ctypes.Structure):
    """espeak_EVENT (speak_lib.h): `sample` is where the event falls in the audio."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_char * 8),  # the union: with PHONEME_IPA, the phoneme in UTF-8
    ]


_Callback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event)
)


class _Library:
    """The process's one espeak-ng. Its state is global: it is initialised once, never again
    (a second `espeak_Initialize` reloads the phoneme tables under the voice already chosen,
    whose pointers into the old ones dangle until a voice is chosen again), its one callback
    is set once, and every speaker chooses its voice before each sentence, under the lock."""

    def __init__(self) -> None:
        import espeakng_loader

        self._lib = lib = ctypes.CDLL(espeakng_loader.get_library_path())
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
            ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
        ]  # fmt: skip
        data = espeakng_loader.get_data_path().encode()
        rate = lib.espeak_Initialize(
            AUDIO_OUTPUT_SYNCHRONOUS, 0, data, PHONEME_EVENTS | PHONEME_IPA
        )
        if rate <= 0:
            raise RuntimeError("espeak-ng did not start (its data folder is missing?)")
        self.sample_rate: int = rate
        self.voice = ""  # none chosen yet
        self._audio: list[np.ndarray] = []
        self._starts: list[tuple[int, str]] = []
        self._callback = _Callback(self._heard)  # kept: the library holds a pointer to it
        lib.espeak_SetSynthCallback(self._callback)

    def choose(self, voice: str) -> None:
        """Speak in `voice` from now on (the lock held); an unknown one is refused by name and
        leaves the voice that was chosen."""
        if voice == self.voice:
            return
        if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
            if self.voice:
                self._lib.espeak_SetVoiceByName(self.voice.encode())
            raise ValueError(f"espeak-ng has no voice {voice!r}")
        self.voice = voice

    def synth(self, sentence: str, rate: int) -> tuple[int, np.ndarray, list[tuple[int, str]]]:
        """`sentence` spoken at `rate` words a minute (the lock held): the library's error
        code, the audio and the samples its phonemes start at."""
        raw = sentence.encode()
        self._audio, self._starts = [], []
        self._lib.espeak_SetParameter(PARAM_RATE, rate, 0)
        failed = self._lib.espeak_Synth(
            raw, len(raw) + 1, 0, POS_CHARACTER, 0, CHARS_UTF8, None, None
        )
        audio = np.concatenate(self._audio) if self._audio else np.zeros(0, np.int16)
        return failed, audio, self._starts

    def _heard(self, wav, count: int, events) -> int:
        """The library's callback: a buffer of audio and the events in it."""
        if wav and count > 0:
            self._audio.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        i = 0
        while events[i].type != EVENT_LIST_TERMINATED:
            event = events[i]
            if event.type == EVENT_PHONEME:
                self._starts.append((event.sample, event.id.decode("utf-8", "replace")))
            i += 1
        return 0  # go on


_LOCK = threading.Lock()  # one caller of the library at a time, whichever speaker
_library: _Library | None = None


def _the_library() -> _Library:
    """The library, initialised on first use (the lock held)."""
    global _library
    if _library is None:
        _library = _Library()
    return _library


def phoneme_counts(starts: list[tuple[int, str]], audio: np.ndarray) -> tuple[tuple[str, int], ...]:
    """Per-codepoint sample counts from phonemes and the samples they start at, summing to the
    audio's length: a phoneme spelled with several codepoints ("tʃ", "ˈɛ", "oʊ") shares its
    span among them, as Piper hands them to the viseme table one at a time. A phoneme with no
    IPA name is a pause where its audio is quiet (a comma's, the sentence's end) and the sound
    before it going on where it is not (espeak-ng names some links between words so); audio
    before the first phoneme is a pause."""
    total = len(audio)
    marks = sorted(((min(max(0, s), total), p) for s, p in starts), key=lambda m: m[0])
    if not marks or marks[0][0] > 0:
        marks.insert(0, (0, ""))
    out: list[tuple[str, int]] = []
    for (start, phoneme), (end, _) in zip(marks, [*marks[1:], (total, "")], strict=True):
        if not phoneme:
            span = audio[start:end].astype(np.float64)
            loud = span.size and np.sqrt(np.mean(span**2)) > QUIET_RMS
            if loud and out:
                out[-1] = (out[-1][0], out[-1][1] + end - start)
                continue
        symbols = list(phoneme) or [PAUSE]
        share, rest = divmod(end - start, len(symbols))
        out += [(s, share + (i < rest)) for i, s in enumerate(symbols)]
    return tuple(out)


class EspeakSpeaker(TTS):
    """espeak-ng's voice `voice` ("en-us", or a variant such as "en-us+m3"), one chunk a
    sentence with its phonemes timed."""

    def __init__(self, voice: str = "en-us") -> None:
        self.voice = voice
        with _LOCK:
            library = _the_library()
            library.choose(voice)  # refused here, by name, if the library has no such voice
        self.sample_rate: int = library.sample_rate

    def speak(
        self, text: str, style: VoiceStyle | None = None, urgent: bool = False
    ) -> Iterator[SpeechChunk]:
        """Each sentence of `text` spoken, as soon as it is (blocking). `urgent` changes
        nothing: a sentence takes milliseconds."""
        style = style or VoiceStyle()
        for sentence in split_sentences(text):
            yield self._sentence(sentence, style)

    def _sentence(self, sentence: str, style: VoiceStyle) -> SpeechChunk:
        with _LOCK:
            library = _the_library()
            library.choose(self.voice)  # another speaker may have chosen another
            rate = round(DEFAULT_RATE / (style.length_scale * style.pitch))
            failed, audio, starts = library.synth(sentence, rate)
        if failed:
            raise RuntimeError(f"espeak-ng could not speak {sentence!r} (error {failed})")
        if style.volume != 1.0:
            audio = np.clip(audio * style.volume, -32768, 32767)
        audio = audio.astype(np.int16)
        rate = round(self.sample_rate * style.pitch)  # played faster: higher (VoiceStyle)
        return SpeechChunk(audio, rate, phoneme_counts(starts, audio), sentence)

    def warm_up(self) -> None:
        for _ in self.speak("Hello."):
            pass
