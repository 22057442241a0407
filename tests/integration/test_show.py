"""The show with real models: what a viewer hears and sees, and what the host can do."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import numpy as np
import pytest

from server.bench.inprocess import say, until_final
from server.bench.viewer import PythonViewer, laid_out
from server.keys import BROADCAST, LIVE
from server.show.feedback import word_error_rate
from server.show.onsets import sound_onsets
from tests.alignment import measure
from tests.harness import wait_for

pytestmark = pytest.mark.models
LINE = "Good evening, night owls. The moon is up, the coffee is hot, and we are live."
OPEN_LINE = "Oh, all right. Every night is a good night. And now, on we go."


async def hear(show, text: str, mode: str = "verbatim"):
    """Say a line to a fresh viewer; return the viewer, the utterance record and its events."""
    v = PythonViewer(show.url)
    await v.connect()
    await asyncio.sleep(0.3)
    status, body = await say(show, text, mode=mode)
    assert status == 202, body
    u = await until_final(show, body["utterance_id"])
    assert u["state"] == "done", u
    await wait_for(lambda: v.frames and v.frames[-1].sample > u["end_sample"] + 9600)
    mine = [d for d in v.named("visemes") if d["utterance_id"] == u["id"]]
    frames = [f for d in mine for f in d["frames"]]
    return v, u, frames


def test_verbatim_line_is_heard_with_visemes_on_the_speech(show):
    async def run():
        v, u, frames = await hear(show, LINE)
        origin = u["start_sample"] - 9600
        heard = v.audio(origin, u["end_sample"] + 9600)
        phrases = [d["text"] for d in v.named("utterance") if d["id"] == u["id"]]
        await v.close()
        return measure(heard, origin, frames), heard, phrases, u

    fig, heard, phrases, u = asyncio.run(run())
    print(f"\nalignment: {fig}")
    assert np.sqrt(np.mean(heard.astype(float) ** 2)) > 300, "the viewer heard silence"
    assert " ".join(phrases) == LINE
    assert fig.voiced_blocks > 100  # over a second of speech
    assert fig.voiced_inside >= 0.9, "voiced audio outside the mouth-moving visemes"
    assert fig.silent_outside >= 0.9, "sound where no viseme was planned"
    assert abs(fig.lag_ms) <= 30, "visemes are shifted against the audio"
    assert u["text_to_first_audio_ms"] < 2000


class Sent:
    """What the broadcast sends, frame by frame, while this is open (a broadcast observer)."""

    def __init__(self, show) -> None:
        self.broadcast = show.app[BROADCAST]
        self.frames: list[tuple[int, np.ndarray]] = []

    def __enter__(self) -> Sent:
        self.broadcast.observe(self._frame)
        return self

    def __exit__(self, *_: object) -> None:
        self.broadcast.unobserve(self._frame)

    def _frame(self, frame) -> None:
        self.frames.append((frame.start, frame.pcm.copy()))

    def audio(self, start: int, end: int) -> np.ndarray:
        return laid_out(self.frames, start, end)


def lag_of(heard: np.ndarray, sent: np.ndarray, most: int) -> int:
    """The shift (samples, positive: heard later) at which `heard` best matches `sent`."""
    a, b = sent.astype(np.float64), heard.astype(np.float64)
    core = a[most : len(a) - most]
    scores = [np.dot(core, b[most + k : len(b) - most + k]) for k in range(-most, most + 1)]
    return int(np.argmax(scores)) - most


def test_the_viewer_hears_sound_start_where_the_server_says_and_the_mouth_opens_there(show):
    async def run():
        with Sent(show) as sent:
            v, u, frames = await hear(show, OPEN_LINE)
        mine = [d for d in v.named("visemes") if d["utterance_id"] == u["id"]]
        span = (u["start_sample"] - 9600, u["end_sample"] + 9600)
        heard = v.audio(*span)
        await v.close()
        return mine, heard, sent.audio(*span), span[0]

    events, heard, sent, origin = asyncio.run(run())
    announced = sorted(o for d in events for o in d["onsets"])
    # every sound after a pause (as the page finds them: 100 ms of quiet) in what the server
    # sent was announced, at its sample
    starts = [origin + o for o in sound_onsets(sent, 48_000, quiet_ms=100)]
    assert len(starts) >= 3, starts  # the line's three sentences at least
    assert set(starts) <= set(announced), (starts, announced)
    # and the viewer hears what was sent at the samples it was sent at, to within half a ms
    # (Opus gave it back 2 samples early). Where a threshold finds a sound's start in what the
    # viewer hears moves with Opus's error on a slow rise (5.2 ms once), so the timing is
    # checked on the whole waveform instead.
    lag, alike = lag_of(heard, sent, most=480), np.corrcoef(heard, sent)[0, 1]
    print(f"\nheard against sent: {lag} samples late, correlation {alike:.3f}")
    assert abs(lag) <= 24 and alike >= 0.9, (lag, alike)
    assert len(sound_onsets(heard, 48_000, quiet_ms=100)) >= 3  # it hears the pauses too
    # a phrase that opens on a vowel opens the mouth within 5 ms of its sound (Piper's alignment
    # had it up to 15 ms late); before a consonant the lips may shape it while it is silent
    opening = [
        (next(f for f in d["frames"] if f["viseme"] != "sil"), d["onsets"][0]) for d in events
    ]
    vowels = [(f, o) for f, o in opening if f["viseme"] in ("aa", "E", "I", "O", "U")]
    assert len(vowels) >= 2, opening
    for voiced, onset in vowels:
        assert abs(voiced["sample"] - onset) <= 240, (voiced, onset)


def test_an_opening_and_the_rest_of_its_sentence_meet_on_the_broadcast_without_a_gap(show):
    """The first words from a synthesis of their own, the rest placed right after them: the
    viewer hears the sentence through, no silence where they meet beyond a word's own."""
    line = "Welcome all of you to our show."  # "all of": voiced through

    async def run():
        v, u, _ = await hear(show, line)
        events = [d for d in v.named("utterance") if d["id"] == u["id"]]
        heard = v.audio(u["start_sample"], u["end_sample"])
        await v.close()
        return u, events, heard

    u, events, heard = asyncio.run(run())
    assert [e["text"] for e in events] == ["Welcome all", "of you to our show."]
    opening, rest = events
    assert rest["start_sample"] == opening["end_sample"], "the rest was not placed right after"
    at = opening["end_sample"] - u["start_sample"]
    span = 80 * 48  # 80 ms either side
    quiet = np.abs(heard[at - span : at + span].astype(np.int32)) <= 100
    assert quiet.sum() / 48 <= 60, f"{quiet.sum() / 48:.0f} ms of silence where they meet"
    steps = u["first_audio_steps_ms"]
    assert steps and all(ms >= 0 for ms in steps.values()), steps
    # the ASR feedback heard the two as one phrase, where they meet, and understood it
    feedback = show.app[LIVE].feedback
    wait_sync(lambda: any(c.utterance_id == u["id"] for c in feedback.results))
    checks = [c for c in feedback.results if c.utterance_id == u["id"]]
    assert [c.text for c in checks] == [line], checks
    assert checks[0].wer <= 0.25, checks


def wait_sync(ready, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_chat_prompt_is_answered_and_spoken(show):
    async def run():
        v, u, frames = await hear(show, "Say hello to the night owls watching.", mode="chat")
        heard = v.audio(u["start_sample"], u["end_sample"])
        await v.close()
        return u, heard, frames

    u, heard, frames = asyncio.run(run())
    assert u["spoken_text"].strip(), "the LLM said nothing"
    assert u["spoken_text"] != "Say hello to the night owls watching."
    assert any(f["viseme"] != "sil" for f in frames)
    # what the viewer heard is the LLM's text: transcribe it
    asr = show.app[LIVE].feedback._asr
    words = asr.transcribe(heard, 48_000)
    wer = word_error_rate(u["spoken_text"], " ".join(w.word for w in words))
    print(f"\nLLM said: {u['spoken_text']!r}; heard WER {wer:.2f}")
    assert wer < 0.5


def test_viewers_joining_at_different_times_hear_identical_sample_positions(show):
    async def run():
        a = PythonViewer(show.url)
        await a.connect()
        status, body = await say(show, LINE + " " + LINE)
        await asyncio.sleep(1.5)  # b joins mid-line
        b = PythonViewer(show.url)
        await b.connect()
        u = await until_final(show, body["utterance_id"])
        await wait_for(lambda: b.frames and b.frames[-1].sample > u["end_sample"])
        lo = b.frames[0].sample + 9600
        by_sample = {f.sample: f.pcm for f in a.frames}
        pairs = [
            (by_sample.get(f.sample), f.pcm) for f in b.frames if lo <= f.sample < u["end_sample"]
        ]
        b_visemes = [f for d in b.named("visemes") for f in d["frames"]]
        a_visemes = [f for d in a.named("visemes") for f in d["frames"]]
        await a.close()
        await b.close()
        return pairs, a_visemes, b_visemes

    pairs, a_vis, b_vis = asyncio.run(run())
    assert max(int(np.abs(pb).max()) for _, pb in pairs) > 3000, "b joined during speech"
    same = [
        pa is not None and int(np.abs(pa.astype(int) - pb.astype(int)).max()) < 50
        for pa, pb in pairs
    ]
    assert np.mean(same) > 0.98
    # the viseme frames b got for later phrases are the same frames a got
    assert b_vis and all(f in a_vis for f in b_vis)


def test_interrupt_stops_the_audio_at_the_interrupt_point(show):
    async def run():
        v = PythonViewer(show.url)
        await v.connect()
        status, body = await say(show, " ".join([LINE] * 4))
        await asyncio.sleep(1.5)
        async with aiohttp.ClientSession() as http:
            r = await http.post(f"{show.url}/api/v1/interrupt", headers=show.headers)
            assert r.status == 200
            at = (await r.json())["at_sample"]
        u = await until_final(show, body["utterance_id"])
        status, body2 = await say(show, "Back to you.")
        u2 = await until_final(show, body2["utterance_id"])
        await wait_for(lambda: v.frames[-1].sample > u2["end_sample"] + 4800)
        before = v.audio(at - 24_000, at)
        gap = v.audio(at + 960, u2["start_sample"])
        tail = v.audio(u2["end_sample"] + 960, u2["end_sample"] + 4800)
        second = v.audio(u2["start_sample"], u2["end_sample"])
        await v.close()
        return u, at, u2, before, gap, tail, second

    u, at, u2, before, gap, tail, second = asyncio.run(run())
    assert u["state"] == "interrupted"
    assert np.abs(before.astype(int)).max() > 3000, "was speaking before the interrupt"
    assert u2["start_sample"] >= at, "the next line overlapped the interrupted one"
    # (on a starved machine the next line can start within 20 ms of the cut: no gap to check)
    assert gap.size == 0 or np.abs(gap.astype(int)).max() < 300, "audio after the interrupt point"
    assert np.abs(tail.astype(int)).max() < 300, "a stale tail after the next line"
    assert np.sqrt(np.mean(second.astype(float) ** 2)) > 300, "the next line was not heard"


def test_metrics_report_latency_viewers_and_asr_feedback(show):
    async def run():
        status, body = await say(show, "Checking the meters.")
        await until_final(show, body["utterance_id"])
        status, body = await say(show, "Tell me a word.", mode="chat")
        await until_final(show, body["utterance_id"])
        # ASR runs beside the path, on each phrase once the broadcast has sent all of it
        feedback = show.app[LIVE].feedback
        for _ in range(300):
            if feedback.counts["checked"] and feedback.drift.bias_s is not None:
                break
            await asyncio.sleep(0.1)
        async with aiohttp.ClientSession() as http:
            shown = await (await http.get(f"{show.url}/api/v1/show", headers=show.headers)).json()
            return await (await http.get(f"{show.url}/metrics")).text(), shown["speech_check"]

    text, check = asyncio.run(run())

    def value(name: str) -> float:
        line = next(ln for ln in text.splitlines() if ln.startswith(name))
        return float(line.rsplit(" ", 1)[1])

    assert value('allnighter_text_to_first_audio_seconds_count{mode="verbatim"}') >= 1
    assert value("allnighter_tts_time_to_first_audio_seconds_count") >= 1
    assert value("allnighter_llm_time_to_first_token_seconds_count") >= 1
    assert value("allnighter_asr_word_error_rate_count") >= 1
    assert "allnighter_viewers" in text and "allnighter_queue_depth" in text
    assert "allnighter_unknown_phonemes_total" in text
    feedback = show.app[LIVE].feedback
    assert feedback.results and min(r.wer for r in feedback.results) <= 0.2
    assert "allnighter_asr_phrases_flagged_total" in text
    assert "allnighter_viseme_correction_seconds" in text
    # the host panel's view: phrases checked, the ASR's own bias on Piper's sound of them
    assert check["checked"] >= 1 and check["asr_bias_ms"] is not None
    assert abs(check["correction_ms"]) <= 50  # the show's own speech needs little or none
    # the sound gathered from the broadcast sits where Piper's own sound of it does
    assert abs(check["drift_ms"]) <= 20, check
