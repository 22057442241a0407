"""ASR feedback's logic: the drift correction's steps, flagging, and what the host sees."""

from __future__ import annotations

import pytest

from server.config import load_config
from server.metrics import Metrics
from server.show.feedback import DriftCorrection, PhraseCheck, SpeechFeedback

ASR_BIAS = -0.090  # Whisper hears Piper's words about this early


def test_a_phrase_without_a_timed_reference_does_not_steer():
    fb = SpeechFeedback(object(), Metrics())
    for _ in range(5):
        fb.fold(check("Good evening.", "Good evening.", 0.0, 0.2), None)
    assert fb.summary()["checked"] == 5 and fb.drift.correction_s == 0.0
    assert fb.drift.drift_s is None


def test_a_steady_shift_is_closed_step_by_step_from_the_third_phrase():
    drift = DriftCorrection()
    steps = []
    for _ in range(10):
        drift.observe(ASR_BIAS + 0.080, ASR_BIAS)  # every phrase 80 ms later than Piper's
        steps.append(drift.correction_s)
    assert steps[:2] == [0.0, 0.0]  # one or two phrases are no systematic bias
    assert steps[2] == pytest.approx(0.3 * 0.080)
    assert all(b >= a for a, b in zip(steps, steps[1:], strict=False))
    # followed until inside the narrower release band, never past the drift
    assert 0.080 - drift.release_band_s <= steps[-1] <= 0.080


def test_each_step_is_clamped_to_50_ms_and_the_whole_to_250():
    drift = DriftCorrection()
    for _ in range(3):
        drift.observe(ASR_BIAS + 1.0, ASR_BIAS)
    assert drift.correction_s == pytest.approx(0.050)
    for _ in range(20):
        drift.observe(ASR_BIAS + 1.0, ASR_BIAS)
    assert drift.correction_s == pytest.approx(0.250)


def test_scatter_inside_the_dead_band_moves_nothing():
    drift = DriftCorrection()
    for offset in (0.012, -0.015, 0.018, -0.008, 0.010, -0.019):
        assert not drift.observe(ASR_BIAS + offset, ASR_BIAS)
    assert drift.correction_s == 0.0


def check(text: str, heard: str, wer: float, offset: float | None) -> PhraseCheck:
    return PhraseCheck("u1", text, wer, offset, heard, wer > 0.5)


def test_a_flagged_phrase_is_counted_listed_and_does_not_steer_the_visemes():
    metrics = Metrics()
    fb = SpeechFeedback(object(), metrics)
    for _ in range(2):
        fb.fold(check("Good evening.", "Good evening.", 0.0, ASR_BIAS + 0.1), ASR_BIAS)
    fb.fold(check("The weather is fine.", "Our next guest.", 1.0, ASR_BIAS + 0.1), ASR_BIAS)
    summary = fb.summary()
    assert summary["checked"] == 3 and summary["flagged"] == 1
    assert summary["correction_ms"] == 0.0  # the garbled phrase did not count as a third
    (flagged,) = summary["flagged_recent"]
    assert flagged["text"] == "The weather is fine." and flagged["heard"] == "Our next guest."
    assert flagged["wer"] == 1.0
    fb.fold(check("Good evening.", "Good evening.", 0.0, ASR_BIAS + 0.1), ASR_BIAS)
    assert fb.summary()["correction_ms"] == pytest.approx(30.0)
    assert fb.summary()["asr_bias_ms"] == pytest.approx(-90.0)
    assert fb.correction_samples() == round(0.030 * 48_000)
    assert metrics.asr_flagged._value.get() == 1


def test_correction_off_plans_visemes_as_aligned():
    fb = SpeechFeedback(object(), Metrics(), correct_visemes=False)
    for _ in range(5):
        fb.fold(check("Good evening.", "Good evening.", 0.0, 0.1), 0.0)
    assert fb.drift.correction_s > 0 and fb.correction_samples() == 0
    assert fb.summary()["correction_ms"] == 0.0


@pytest.mark.parametrize("value", [-0.1, "high", True])
def test_a_bad_flag_threshold_is_refused_at_start(tmp_path, value):
    path = tmp_path / "bad.toml"
    path.write_text(f"[feedback]\nflag_wer = {value!r}\n".replace("'", '"').replace("True", "true"))
    with pytest.raises(ValueError, match="flag_wer"):
        load_config(path, env={})
