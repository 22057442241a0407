"""Transcriber against the real packaged faster-whisper base, fed Piper speech."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from models.asr import HeardWord, Transcriber
from models.catalogue import atomic_dir, default_cache_dir, prepare_whisper_base
from models.tts import PiperSpeaker
from server.show.feedback import word_error_rate

TEXT = "The night is young and the coffee is hot. Tell me what you want to hear next."


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("asr-cache")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)  # 145 MB; pytest would keep 3 runs of it


@pytest.fixture(scope="module")
def transcriber(cache: Path) -> Transcriber:
    return Transcriber(cache_dir=cache, device="cpu")


@pytest.fixture(scope="module")
def speech() -> tuple[np.ndarray, int]:
    speaker = PiperSpeaker(device="cpu")
    chunks = list(speaker.speak(TEXT))
    return np.concatenate([c.audio for c in chunks]), speaker.sample_rate


def test_word_error_rate_counts_words_not_case_or_punctuation() -> None:
    assert word_error_rate("A b, c.", "a B c") == 0
    assert word_error_rate("a b c", "a x c d") == pytest.approx(2 / 3)  # one swap, one extra
    assert word_error_rate("", "") == 0 and word_error_rate("", "words") == 1.0


@pytest.mark.models
def test_whisper_parts_are_joined_once(cache: Path, transcriber: Transcriber) -> None:
    folder = transcriber.model_dir
    assert folder.parent == cache
    assert [p.name for p in cache.iterdir()] == [folder.name]  # no temporary leftovers
    model = folder / "model.bin"
    assert model.stat().st_size == int(folder.name.rsplit("-", 1)[1])
    assert (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file()
    mtime = model.stat().st_mtime_ns
    assert prepare_whisper_base(cache) == folder
    assert model.stat().st_mtime_ns == mtime  # reused, not rewritten


@pytest.mark.models
def test_transcribes_piper_speech(transcriber: Transcriber, speech: tuple[np.ndarray, int]) -> None:
    audio, rate = speech
    words = transcriber.transcribe(audio, rate)
    assert words and all(isinstance(w, HeardWord) for w in words)
    heard = " ".join(w.word for w in words)
    assert word_error_rate(TEXT, heard) <= 0.2, heard
    duration = len(audio) / rate
    starts = [w.start for w in words]
    assert all(b >= a for a, b in zip(starts, starts[1:], strict=False))
    assert starts[-1] > starts[0]
    for word in words:
        assert 0.0 <= word.start <= word.end <= duration + 0.05
        assert 0.0 <= word.probability <= 1.0


@pytest.mark.models
def test_float_input_at_16k_gives_the_same_words(
    transcriber: Transcriber, speech: tuple[np.ndarray, int]
) -> None:
    import soxr

    audio, rate = speech
    as_float = soxr.resample(audio.astype(np.float32) / 32768.0, rate, 16000)
    from_int = [w.word for w in transcriber.transcribe(audio, rate)]
    from_float = [w.word for w in transcriber.transcribe(as_float.astype(np.float32), 16000)]
    assert from_float == from_int


@pytest.mark.models
def test_silence_gives_no_words(transcriber: Transcriber) -> None:
    # Measured: whisper base hears nothing in digital silence or in faint noise.
    assert transcriber.transcribe(np.zeros(16000, dtype=np.float32), 16000) == []
    assert transcriber.transcribe(np.zeros(48000, dtype=np.int16), 48000) == []
    noise = np.random.default_rng(0).normal(0, 0.005, 16000).astype(np.float32)
    assert transcriber.transcribe(noise, 16000) == []
    assert transcriber.transcribe(np.zeros(0, dtype=np.float32), 16000) == []
    transcriber.warm_up()


def test_rejects_stereo(tmp_path: Path) -> None:
    from models.asr import _as_float_mono

    with pytest.raises(ValueError, match="mono"):
        _as_float_mono(np.zeros((100, 2), dtype=np.int16))


def test_atomic_dir_leaves_nothing_when_interrupted(tmp_path: Path) -> None:
    final = tmp_path / "converted"
    with pytest.raises(RuntimeError), atomic_dir(final) as tmp:
        (tmp / "half-written").write_bytes(b"x")
        raise RuntimeError("interrupted")
    assert not final.exists()
    assert list(tmp_path.iterdir()) == []
    with atomic_dir(final) as tmp:
        (tmp / "done").write_bytes(b"x")
    assert (final / "done").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["converted"]


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ALLNIGHTER_CACHE", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("ALLNIGHTER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "allnighter"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "allnighter"
