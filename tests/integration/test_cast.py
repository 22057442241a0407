"""The cast with real models: a scene of three roles, one line overlapping another, heard by a
viewer; each role's mouth moves over its own voice only; one role interrupted, the others go on."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from server.bench.inprocess import request, until_final
from server.bench.viewer import PythonViewer
from tests.alignment import BLOCK, block_rms, measure
from tests.harness import wait_for

pytestmark = pytest.mark.models
SCENE = {
    "lines": [
        {"role": "nova", "text": "Good evening, night owls. The moon is up tonight. Pour a cup."},
        {
            "role": "orion",
            "text": "And it is a bright one, too. Bright enough to read by, out on the roof.",
            "overlap_ms": 600,
        },
        {"role": "lyra", "text": "Silver light on every roof, and every window in town awake."},
    ]
}


async def perform(show, scene: dict) -> tuple[PythonViewer, list[dict]]:
    """Play `scene` to a fresh viewer; the utterances' records, once all are final and heard."""
    v = PythonViewer(show.url)
    await v.connect()
    await asyncio.sleep(0.3)
    status, body = await request(show, "POST", "/api/v1/scene", scene)
    assert status == 202, body
    records = [await until_final(show, i, timeout=120) for i in body["utterance_ids"]]
    last = max(r["end_sample"] or 0 for r in records)
    await wait_for(lambda: v.frames and v.frames[-1].sample > last + 9600, timeout=30)
    return v, records


def spans(v: PythonViewer, utt_id: str) -> list[tuple[int, int]]:
    return [(d["start_sample"], d["end_sample"]) for d in v.named("utterance") if d["id"] == utt_id]


def frames_of(v: PythonViewer, utt_id: str) -> list[dict]:
    return [f for d in v.named("visemes") if d["utterance_id"] == utt_id for f in d["frames"]]


def test_a_scene_of_three_roles_with_one_overlap_each_mouth_on_its_own_voice(show):
    async def run():
        v, records = await perform(show, SCENE)
        origin = min(r["start_sample"] for r in records) - 9600
        heard = v.audio(origin, max(r["end_sample"] for r in records) + 9600)
        await v.close()
        return v, records, origin, heard

    v, records, origin, heard = asyncio.run(run())
    nova, orion, lyra = records
    assert [r["state"] for r in records] == ["done"] * 3, records
    assert [r["role"] for r in records] == ["nova", "orion", "lyra"]
    # orion comes in 600 ms before nova ends; lyra waits for orion to finish (the phrases'
    # spans: a record's start_sample is its first voiced 20 ms frame's)
    (nova_at, nova_end), (orion_at, orion_end), (lyra_at, _) = (
        (spans(v, r["id"])[0][0], spans(v, r["id"])[-1][1]) for r in records
    )
    assert orion_at == nova_end - 28_800
    assert lyra_at >= orion_end
    voiced = block_rms(heard) > 300
    n = len(voiced)

    def blocks(span_list: list[tuple[int, int]]) -> np.ndarray:
        mask = np.zeros(n, dtype=bool)
        for a, b in span_list:
            mask[max(0, (a - origin) // BLOCK) : max(0, (b - origin) // BLOCK)] = True
        return mask

    own = {r["id"]: blocks(spans(v, r["id"])) for r in records}
    for r in records:
        frames = frames_of(v, r["id"])
        mouth = [f for f in frames if f["viseme"] != "sil"]
        # the mouth opens only over its own speech
        lo, hi = spans(v, r["id"])[0][0], r["end_sample"]
        assert mouth and all(lo <= f["sample"] < hi for f in mouth), r["role"]
        # where its voice is heard alone, it is on its own mouth's open visemes
        alone = own[r["id"]] & ~np.any([m for k, m in own.items() if k != r["id"]], axis=0)
        only_it = heard.copy()
        for k in np.nonzero(~alone)[0]:
            only_it[k * BLOCK : (k + 1) * BLOCK] = 0
        fig = measure(only_it, origin, frames)
        print(f"\n{r['role']}: {fig}")
        assert fig.voiced_blocks > 50, r["role"]
        assert fig.voiced_inside >= 0.9, (r["role"], fig)
        assert abs(fig.lag_ms) <= 30, (r["role"], fig)
    # the overlap is heard, and both mouths move in it
    both = own[nova["id"]] & own[orion["id"]]
    assert both.sum() >= 40 and voiced[both].mean() > 0.5
    for r in (nova, orion):
        assert any(
            f["viseme"] != "sil" and both[min(n - 1, max(0, (f["sample"] - origin) // BLOCK))]
            for f in frames_of(v, r["id"])
        ), r["role"]


def test_interrupting_one_role_of_a_scene_leaves_the_others_speaking(show):
    long_line = "The night is long and the stars are many. " * 4
    scene = {
        "lines": [
            {"role": "nova", "text": long_line},
            {"role": "orion", "text": "I have counted them all, twice.", "overlap_ms": 5000},
            {"role": "lyra", "text": "And named each one."},
        ]
    }

    async def run():
        v = PythonViewer(show.url)
        await v.connect()
        status, body = await request(show, "POST", "/api/v1/scene", scene)
        assert status == 202, body
        nova_id, orion_id, lyra_id = body["utterance_ids"]

        async def on_air(utt_id: str) -> bool:
            got = await request(show, "GET", "/api/v1/utterances")
            rows = [got[1]["current"], *got[1]["recent"]]
            return any(r and r["id"] == utt_id and r["start_sample"] for r in rows)

        for _ in range(600):  # orion's line placed (nova is still heard)
            if await on_air(orion_id):
                break
            await asyncio.sleep(0.1)
        status, _ = await request(show, "POST", "/api/v1/interrupt", {"role": "nova"})
        assert status == 200
        records = [await until_final(show, i, timeout=120) for i in body["utterance_ids"]]
        await wait_for(lambda: v.frames[-1].sample > records[2]["end_sample"] + 4800, timeout=30)
        heard = {r["role"]: v.audio(r["start_sample"], r["end_sample"]) for r in records[1:]}
        await v.close()
        return records, heard

    records, heard = asyncio.run(run())
    assert [r["state"] for r in records] == ["interrupted", "done", "done"], records
    for role, pcm in heard.items():  # the others were heard to their end
        assert (block_rms(pcm) > 300).mean() > 0.3, role


def test_a_dubbing_request_of_ten_lines_and_three_roles_streams_them_in_order_lined_up(show):
    from server.bench.dubclient import audio_of, dub
    from server.bench.pitch import median_f0
    from tests.conftest import TOKEN

    roles = ["nova", "orion", "lyra"]
    texts = [
        "Good evening.", "The moon is up.", "Coffee is hot.", "We are live all night.",
        "Who is calling?", "A listener from the coast.", "Welcome, friend.",
        "The stars are out.", "Count them with us.", "Until morning.",
    ]  # fmt: skip
    body = {"lines": [{"role": roles[n % 3], "text": t} for n, t in enumerate(texts)]}
    answer = asyncio.run(dub(show.url, TOKEN, {**body, "format": "opus"}))
    assert answer.status == 200, answer.objects
    lines = answer.lines
    assert [x["index"] for x in lines] == list(range(10)) and answer.objects[-1]["done"]
    heard: dict[str, list[np.ndarray]] = {r: [] for r in roles}
    lags = []
    for line in lines:
        pcm = audio_of(line)
        fig = measure(pcm, 0, line["visemes"])
        print(f"\n{line['role']}: {line['text']!r} {fig}")
        assert fig.voiced_blocks > 20, line["text"]
        assert fig.voiced_inside >= 0.85, (line["text"], fig)
        lags.append(fig.lag_ms)
        heard[line["role"]].append(pcm)
    # the loudness-against-openness lag of one short line varies by ±30 ms with Piper's noise
    # (a second of speech is few syllables to correlate): their median is the shift
    assert abs(float(np.median(lags))) <= 15, lags
    # each role with its own voice: lower to higher, as their pitch settings go (over all of a
    # role's lines: one short line has few voiced frames, and Piper's intonation varies; that
    # the cast's voices are 15 % apart is tests/models/test_tts.py's, on longer speech)
    medians = {r: median_f0(np.concatenate(v), 48_000) for r, v in heard.items()}
    print(f"\nmedian F0 by role: {medians}")
    assert medians["orion"] < medians["nova"] < medians["lyra"], medians
