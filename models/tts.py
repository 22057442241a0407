"""Piper text-to-speech with per-phoneme sample counts (for lip-sync visemes).

Piper's voice models do not output alignments by themselves; PiperVoice.load(...,
include_alignments=True) patches the ONNX graph in memory (needs the `onnx` package,
pulled in by piper-tts[alignment]) so every synthesized sentence comes with how many
audio samples each phoneme covers.

Blocking API, meant to be driven from an executor thread; no asyncio here.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import onnx
import onnxruntime
from piper import PiperVoice, SynthesisConfig
from piper.patch_voice_with_alignment import add_alignment_output
from piper.voice import AudioChunk

from models.catalogue import existing_file, packaged_piper_voice
from models.device import lower_priority, onnx_cuda, resolve
from models.protocols import TTS, SpeechChunk, VoiceStyle
from models.sentences import split_sentences


def _fit(phonemes: list[tuple[str, int]], total: int) -> tuple[tuple[str, int], ...]:
    """Make the per-phoneme counts sum exactly to `total` (the audio length).

    Piper's counts already do for the voices we ship; this is only a guard so that
    downstream timing never drifts: the difference goes to the last phoneme.
    """
    if not phonemes:
        return (("", total),)
    gap = total - sum(n for _, n in phonemes)
    if gap:
        last, count = phonemes[-1]
        phonemes[-1] = (last, max(0, count + gap))
        if sum(n for _, n in phonemes) != total:  # a negative gap larger than the tail
            share, rest = divmod(total, len(phonemes))
            phonemes = [(p, share + (i < rest)) for i, (p, _) in enumerate(phonemes)]
    return tuple(phonemes)


def _centred_on_pads(chunk: AudioChunk) -> list[tuple[str, int]]:
    """Per-phoneme spans with each inter-phoneme pad split between its two neighbours.

    Piper groups every phoneme id with the pad id that follows it ([p, 0]), so a phoneme's
    reported span ends with the transition into the next one. Measured against the audio's
    loudness, sound arrives about 20 ms before those spans (the median over a paragraph);
    giving the first half of each pad to the phoneme before it and the second half to the
    one after brings the median to about 5 ms.
    """
    alignments = chunk.phoneme_alignments or []
    ids = chunk.phoneme_id_samples
    per_id = [] if ids is None else [int(n) for n in ids]
    if len(per_id) != sum(len(a.phoneme_ids) for a in alignments):
        return [(a.phoneme, int(a.num_samples)) for a in alignments]
    timed: list[tuple[str, int]] = []
    carry, k = 0, 0
    for a in alignments:
        samples = per_id[k : k + len(a.phoneme_ids)]
        k += len(a.phoneme_ids)
        own, pad = samples[0], sum(samples[1:])
        timed.append((a.phoneme, carry + own + pad - pad // 2))
        carry = pad // 2
    if timed:
        timed[-1] = (timed[-1][0], timed[-1][1] + carry)
    return timed


def _session(
    path: Path, loaded: onnxruntime.InferenceSession, threads: int = 1
) -> onnxruntime.InferenceSession:
    """Piper's model with its alignment output, run by threads that sleep when idle.

    onnxruntime's worker threads spin between operators by default. On a small machine that
    spinning took the cores from the event loop while a sentence was synthesized: it stalled
    for over half a second several times a run, and the broadcast skipped a second of audio.
    Without spinning a sentence's first chunk takes about 5 ms longer (61 → 66 ms here).
    """
    model = onnx.load(str(path))
    add_alignment_output(model)  # the phoneme timings the visemes come from
    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # onnxruntime's own arena keeps every block it ever took, and takes more when a sentence
    # of a new length needs a shape it has no room for: 80 sentences of 3-40 words grew the
    # process from 438 to 818 MB, none of it given back. Without it the blocks go back to
    # malloc (and the show's trim hands them back): 348 to 352 MB, for 1-8 % more time a
    # sentence (156-165 ms against 152-155 here)
    options.enable_cpu_mem_arena = False
    # by default one thread, the caller's: it runs on the thread that asks (the show's TTS
    # thread, which yields the CPU to the audio path); a pool is started by the thread that
    # builds the session, and takes its priority
    options.intra_op_num_threads = threads
    providers = loaded.get_providers()  # Piper's choice (CUDA with its options, or CPU)
    settings = loaded.get_provider_options()
    return onnxruntime.InferenceSession(
        model.SerializeToString(),
        sess_options=options,
        providers=providers,
        provider_options=[settings.get(p, {}) for p in providers],
    )


def _built_lower(build, step: int):
    """`build()` on a thread of its own `step` nice values below the caller (Linux keeps nice
    values per thread, and a thread pool started there inherits it)."""
    out: list = []

    def run() -> None:
        lower_priority(step)
        out.append(build())

    thread = threading.Thread(target=run, name="piper-urgent-build")
    thread.start()
    thread.join()
    if not out:
        raise RuntimeError("building Piper's urgent session failed")
    return out[0]


class PiperSpeaker(TTS):
    """A Piper voice that yields one audio chunk, with phoneme timings, per sentence."""

    # An urgent synthesis (an utterance's opening words, which first audio waits for) runs on
    # two threads: 62 against 83 ms for three words here. Its second thread runs 10 nice values
    # below the loading thread, as the show's TTS thread does; a sentence synthesized while
    # speech plays keeps to one thread, the caller's.
    URGENT_THREADS = 2
    URGENT_NICE = 10

    def __init__(self, voice_path: str | Path | None = None, device: str = "auto") -> None:
        """Load the voice (~0.5 s); `voice_path` is an .onnx with its .onnx.json beside it."""
        path = (
            packaged_piper_voice()
            if voice_path is None
            else existing_file(voice_path, "Piper voice model")
        )
        self.device = resolve(device, lambda: "cuda" if onnx_cuda() else "cpu")
        self.voice_path = path
        self.voice = PiperVoice.load(path, use_cuda=self.device == "cuda")
        loaded = self.voice.session
        self._calm = self.voice.session = _session(path, loaded)
        self._urgent = self._calm
        if self.device == "cpu" and (os.cpu_count() or 1) > 1:
            build = lambda: _session(path, loaded, self.URGENT_THREADS)  # noqa: E731
            self._urgent = _built_lower(build, self.URGENT_NICE)
        self.sample_rate: int = self.voice.config.sample_rate

    def sibling(self) -> PiperSpeaker:
        """A speaker of the same voice on this one's one-thread session, for another thread
        (a dubbing worker's): onnxruntime runs a session from several threads at once, so the
        weights are not loaded twice (a second load took 140 MB more). Each has its own
        PiperVoice, whose session it sets per call; espeak-ng's phonemizer holds the GIL."""
        twin = copy.copy(self)
        twin.voice = copy.copy(self.voice)
        twin.voice.session = twin._urgent = self._calm
        return twin

    def speak(
        self, text: str, style: VoiceStyle | None = None, urgent: bool = False
    ) -> Iterator[SpeechChunk]:
        """Synthesize `text`, yielding each sentence as soon as Piper has it (blocking);
        `urgent`: on two threads (see URGENT_THREADS), for what first audio waits for.

        The text is split into sentences here and each is synthesized on its own, so every
        chunk knows which text it voices (Piper itself reports only phonemes). When Piper
        splits one of our sentences further (an abbreviation such as "Dr."), the first
        chunk carries the sentence text and the rest carry "".
        """
        style = style or VoiceStyle()
        config = SynthesisConfig(
            length_scale=style.length_scale * style.pitch,
            noise_scale=style.noise_scale,
            noise_w_scale=style.noise_w_scale,
            volume=style.volume,
        )
        session = self._urgent if urgent else self._calm
        for sentence in split_sentences(text):
            label = sentence
            self.voice.session = session  # one caller at a time (the show's TTS thread)
            for chunk in self.voice.synthesize(
                sentence, syn_config=config, include_alignments=True
            ):
                yield self._chunk(chunk, label, style.pitch)
                label = ""

    @staticmethod
    def _chunk(chunk: AudioChunk, text: str, pitch: float = 1.0) -> SpeechChunk:
        audio = chunk.audio_int16_array
        if chunk.phoneme_alignments is not None:
            timed = _centred_on_pads(chunk)
        else:
            # Alignment can fail for odd input; spread the audio evenly rather than
            # dropping the chunk, so the avatar still moves its mouth.
            share, rest = divmod(len(audio), max(1, len(chunk.phonemes)))
            timed = [(p, share + (i < rest)) for i, p in enumerate(chunk.phonemes)]
        return SpeechChunk(
            audio=audio,
            sample_rate=round(chunk.sample_rate * pitch),  # played faster: higher
            phonemes=_fit(timed, len(audio)),
            text=text,
        )

    def phonemize(self, text: str) -> list[list[str]]:
        """Phonemes per sentence, as espeak-ng hands them to the voice."""
        return self.voice.phonemize(text)

    def warm_up(self) -> None:
        """Synthesize a word so onnxruntime and espeak-ng are initialised before showtime."""
        for urgent in (False, True):
            for _ in self.speak("Hello.", urgent=urgent):
                pass
