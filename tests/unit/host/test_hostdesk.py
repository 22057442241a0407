"""The host desk's API against a live server with test-double models: the show snapshot and
answering a viewer's chat message."""

from __future__ import annotations

import asyncio
import json

import pytest
import socketio

from server.bench.inprocess import request, say, until_final
from server.keys import LIVE, SIGNALS
from tests.harness import page_text, wait_for


async def viewer_chat(srv, text: str) -> tuple[socketio.AsyncClient, str]:
    c = socketio.AsyncClient()
    await c.connect(srv.url)
    ack = await c.call("chat", {"text": text})
    assert ack["ok"], ack
    return c, ack["id"]


@pytest.mark.parametrize("method, path", [("GET", "/api/v1/show"), ("POST", "/api/v1/chat/answer")])
@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_host_desk_needs_the_host_token(tone_server, method, path, token):
    status, body = asyncio.run(request(tone_server, method, path, {"id": "x"}, token=token))
    assert status == 401
    assert "token" in body["error"]


def test_show_snapshot_has_stage_viewers_chat_and_health(tone_server):
    async def run():
        c, chat_id = await viewer_chat(tone_server, "hello from the <b>chat</b>")
        await c.emit("client_stats", {"fps": 58.0, "lipsync_offset_ms": -12.0, "dropped_frames": 2})
        status, sent = await say(tone_server, "snapshot line")
        assert status == 202
        await until_final(tone_server, sent["utterance_id"], timeout=20)
        await wait_for(lambda: tone_server.app[SIGNALS].client_stats, timeout=5)
        got = await request(tone_server, "GET", "/api/v1/show")
        await c.disconnect()
        return got, chat_id, sent["utterance_id"]

    (status, show), chat_id, utt_id = asyncio.run(run())
    assert status == 200
    assert {"queue", "current", "recent", "queue_max", "viewers", "chat", "health", "roles"} <= set(
        show
    )
    assert show["queue_max"] == tone_server.cfg.stage.queue_size
    assert show["roles"] == [r.name for r in tone_server.cfg.roles]
    said = next(u for u in show["recent"] if u["id"] == utt_id)
    assert said["state"] == "done" and said["text"] == "snapshot line"
    assert said["text_to_first_audio_ms"] > 0
    assert show["health"]["status"] == "ok"
    assert show["health"]["current_sample"] > 0 and show["health"]["sample_rate"] == 48_000
    v = show["viewers"]
    assert v["sockets"] >= 1 and v["reporting"] >= 1 and v["webrtc"] >= 0
    assert v["fps_median"] == 58.0 and v["lipsync_offset_ms_median"] == -12.0
    assert v["dropped_frames"] == 2
    assert show["speech_check"] is None  # this server has no ASR: the panel says "off"
    msg = next(m for m in show["chat"] if m["id"] == chat_id)
    assert msg["text"] == "hello from the <b>chat</b>"  # kept as text; the panel never makes HTML
    assert msg["from"].startswith("viewer-") and msg["time"] > 1.6e12
    assert msg["answered"] is False and msg["utterance_id"] is None


def test_answering_a_viewer_message_speaks_it_in_chat_mode_once(tone_server):
    async def run():
        c, chat_id = await viewer_chat(tone_server, "what time is it where you are?")
        first = await request(tone_server, "POST", "/api/v1/chat/answer", {"id": chat_id})
        assert first[0] == 202, first
        utt_id = first[1]["utterance_id"]
        again = await request(tone_server, "POST", "/api/v1/chat/answer", {"id": chat_id})
        final = await until_final(tone_server, utt_id, timeout=30)
        show = (await request(tone_server, "GET", "/api/v1/show"))[1]
        await c.disconnect()
        return chat_id, utt_id, again, final, show

    chat_id, utt_id, again, final, show = asyncio.run(run())
    assert final["state"] == "done"
    assert final["mode"] == "chat"
    assert final["role"] == tone_server.cfg.roles[0].name  # the default role
    assert "what time is it where you are?" in final["text"]
    assert final["spoken_text"]  # the character's reply (the fake LLM's words) was spoken
    assert again[0] == 409 and "already" in again[1]["error"]
    msg = next(m for m in show["chat"] if m["id"] == chat_id)
    assert msg["answered"] is True and msg["utterance_id"] == utt_id


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"id": "000000000000"}, 404, "no recent chat message"),
        ({}, 400, "id"),
        ({"id": 12}, 400, "id"),
        ({"id": "  "}, 400, "id"),
        ({"id": "000000000000", "role": 5}, 400, "role"),
        ({"id": "000000000000", "role": "nobody"}, 404, "nobody"),
        ([1, 2], 400, "object"),
    ],
)
def test_bad_answers_are_refused_with_a_message(tone_server, body, status, message):
    got, answer = asyncio.run(request(tone_server, "POST", "/api/v1/chat/answer", body))
    assert got == status, answer
    assert message.lower() in answer["error"].lower()


def test_answer_with_garbage_body_is_400(tone_server):
    got, answer = asyncio.run(request(tone_server, "POST", "/api/v1/chat/answer", raw=b"{nope"))
    assert got == 400 and "JSON" in answer["error"]


def test_answer_when_the_queue_is_full_is_429_and_stays_answerable(tone_server):
    async def run():
        c, chat_id = await viewer_chat(tone_server, "one more question")
        long_line = " ".join(["word"] * 30)  # 9 s of tones
        # Synthesis waits, so the worker takes no more lines off the queue once it has one (how
        # many it has taken by then depends on timing): say lines until the stage refuses one.
        tts = tone_server.app[LIVE].models.tts
        tts.running.clear()
        accepted, status = [], 202
        try:
            for _ in range(tone_server.cfg.stage.queue_size + 6):
                status, body = await say(tone_server, long_line)
                if status != 202:
                    break
                accepted.append(body["utterance_id"])
            refused = await request(tone_server, "POST", "/api/v1/chat/answer", {"id": chat_id})
            show = (await request(tone_server, "GET", "/api/v1/show"))[1]
        finally:
            tts.running.set()
        await request(tone_server, "POST", "/api/v1/interrupt", {})
        finals = [await until_final(tone_server, u, timeout=30) for u in accepted]
        retry = await request(tone_server, "POST", "/api/v1/chat/answer", {"id": chat_id})
        if retry[0] == 202:
            await until_final(tone_server, retry[1]["utterance_id"], timeout=30)
        await c.disconnect()
        return status, refused, show, finals, retry, chat_id, accepted

    status, refused, show, finals, retry, chat_id, accepted = asyncio.run(run())
    assert status == 429, "the stage never refused a line"
    assert refused[0] == 429 and "full" in refused[1]["error"]
    # the queue is still full, the lines waiting in order
    waiting = [q["id"] for q in show["queue"]]
    assert len(waiting) == show["queue_max"]
    assert waiting == [u for u in accepted if u in waiting]
    assert all(f["state"] in ("done", "interrupted") for f in finals)
    assert not next(m for m in show["chat"] if m["id"] == chat_id)["answered"]
    assert retry[0] == 202  # a refused answer can be tried again


def test_recent_chat_is_bounded(tone_server):
    from server.transport.signals import RECENT_CHAT

    signals = tone_server.app[SIGNALS]
    assert signals.recent_chat.maxlen == RECENT_CHAT == 50


def test_pages_lipsync_onsets_reach_the_histograms_and_the_desk(tone_server):
    onsets = [-30.0, -12.0, -5.0, 0.0, 4.0, 9.0, 14.0, 20.0, -50.0, 2.0]

    async def run():
        c = socketio.AsyncClient()
        await c.connect(tone_server.url)
        sid = c.get_sid()
        ok = await c.call(
            "client_stats", {"fps": 50.0, "frame_jitter_ms": 6.5, "lipsync_onsets_ms": onsets}
        )
        bad = await c.call("client_stats", {"lipsync_onsets_ms": [0.0] * 500})
        show = (await request(tone_server, "GET", "/api/v1/show"))[1]
        metrics = await page_text(tone_server, "/metrics")
        await c.disconnect()
        await wait_for(lambda: sid not in tone_server.app[SIGNALS].onsets, timeout=5)
        after = await page_text(tone_server, "/metrics")
        return sid, ok, bad, show, metrics, after

    sid, ok, bad, show, metrics, after = asyncio.run(run())
    assert ok == {"ok": True}
    assert not bad["ok"] and "at most" in bad["error"]
    v = show["viewers"]
    assert v["lipsync_drawn_ms_p50"] == 1.0  # the median of the ten
    assert v["lipsync_drawn_ms_p95_abs"] == 50.0
    assert v["lipsync_drawn_in_atsc"] == 0.8  # 20 ms late and 50 ms early fall outside
    assert v["lipsync_drawn_in_r37"] == 1.0  # but inside EBU R37's wider window
    assert v["frame_jitter_ms_worst"] == 6.5
    assert 'allnighter_lipsync_offset_ms_bucket{le="15.0"}' in metrics
    assert f'allnighter_viewer_lipsync_offset_ms_count{{viewer="{sid}"}} 10.0' in metrics
    assert f'viewer="{sid}"' not in after  # a viewer who left is no longer a series
    assert "allnighter_frame_jitter_ms_count" in metrics


def test_each_roles_own_lipsync_is_kept_apart_and_made_up_roles_are_not(tone_server):
    onsets = [3.0, 5.0, -4.0, 7.0, 1.0]
    roles = ["nova", "orion", "orion", "<nobody>", None]

    async def run():
        c = socketio.AsyncClient()
        await c.connect(tone_server.url)
        ok = await c.call(
            "client_stats", {"lipsync_onsets_ms": onsets, "lipsync_onset_roles": roles}
        )
        short = await c.call(
            "client_stats", {"lipsync_onsets_ms": onsets, "lipsync_onset_roles": roles[:2]}
        )
        await c.disconnect()
        return ok, short, await page_text(tone_server, "/metrics")

    ok, short, metrics = asyncio.run(run())
    assert ok == {"ok": True}
    assert not short["ok"] and "as long as" in short["error"]
    assert 'allnighter_role_lipsync_offset_ms_count{role="nova"} 1.0' in metrics
    assert 'allnighter_role_lipsync_offset_ms_count{role="orion"} 2.0' in metrics
    assert "nobody" not in metrics


def test_pages_output_latency_reaches_the_desk_and_nonsense_is_dropped(tone_server):
    """Three pages: two know their device's latency (42 and 746 ms), one cannot; a fourth sends
    figures no device has, and they are not kept."""
    reports = [
        {"output_latency_ms": 42.0, "output_latency_source": "reported"},
        {"output_latency_ms": 746.0, "output_latency_source": "timestamp"},
        {"output_latency_source": "none"},
        {"output_latency_ms": 1e308, "output_latency_source": "<script>"},
    ]

    async def run():
        clients = []
        for report in reports:
            c = socketio.AsyncClient()
            await c.connect(tone_server.url)
            assert await c.call("client_stats", report) == {"ok": True}
            clients.append(c)
        show = (await request(tone_server, "GET", "/api/v1/show"))[1]
        kept = dict(tone_server.app[SIGNALS].client_stats)
        for c in clients:
            await c.disconnect()
        return show, kept

    show, kept = asyncio.run(run())
    v = show["viewers"]
    assert v["output_latency_ms_median"] == 394.0
    assert v["output_latency_ms_max"] == 746.0
    assert v["output_latency_unknown"] == 1
    junk = [s for s in kept.values() if "output_latency_ms" not in s]
    assert all(s.get("output_latency_source") in (None, "none") for s in junk), junk


def strict_json(text: str):
    """JSON as a browser's JSON.parse reads it: a literal NaN or Infinity is an error."""

    def refuse(name: str):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_figures_no_page_measures_are_dropped_and_the_desk_stays_strict_json(tone_server):
    """Two viewers report 1e308 frames dropped (their sum overflowed into a 500) and onsets of
    ±1e308 (the medians became Infinity, which the panel could not parse); every figure
    outside what a page plausibly measures is dropped, and the desk answers strict JSON."""
    huge = {
        "dropped_frames": 1e308,
        "fps": 1e308,
        "lipsync_offset_ms": -1e308,
        "frame_jitter_ms": 1e308,
        "clock_offset_ms": 1e308,
        "visemes_seen_share": 2.0,
        "lipsync_onsets_ms": [1e308, -1e308, 5.0],
    }

    async def run():
        clients = []
        for _ in range(2):
            c = socketio.AsyncClient()
            await c.connect(tone_server.url)
            assert await c.call("client_stats", {**huge, "fps": 50.0 + len(clients)}) == {
                "ok": True
            }
            clients.append(c)
        show = await request_raw(tone_server, "/api/v1/show")
        said = await request_raw(tone_server, "/api/v1/utterances")
        for c in clients:
            await c.disconnect()
        return show, said

    (status, text), (said_status, said) = asyncio.run(run())
    assert status == 200, text
    v = strict_json(text)["viewers"]
    assert v["fps_median"] == 50.5  # the plausible figure of each page is kept
    assert v["dropped_frames"] is None and v["frame_jitter_ms_worst"] is None
    assert v["lipsync_offset_ms_median"] is None and v["clock_offset_ms_median"] is None
    assert v["lipsync_drawn_ms_p50"] == 5.0 and v["lipsync_drawn_ms_p95_abs"] == 5.0
    assert said_status == 200 and isinstance(strict_json(said), dict)


async def request_raw(srv, path: str) -> tuple[int, str]:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        async with http.get(srv.url + path, headers=srv.headers) as r:
            return r.status, await r.text()
