"""Every bad input gets its refusal, the server stays up, and nothing accepted is lost."""

from __future__ import annotations

import asyncio

import pytest
import socketio

from server.bench.inprocess import request, until_final

pytestmark = pytest.mark.models


@pytest.mark.parametrize(
    "path, body, token, status, message",
    [
        ("/api/v1/say", {"text": "hi"}, None, 401, "token"),
        ("/api/v1/say", {"text": "hi"}, "wrong-token", 401, "token"),
        ("/api/v1/interrupt", {}, None, 401, "token"),
        ("/api/v1/say", {"text": ""}, "good", 400, "empty"),
        ("/api/v1/say", {"text": "   "}, "good", 400, "empty"),
        ("/api/v1/say", {"text": 5}, "good", 400, "string"),
        ("/api/v1/say", {"text": "x" * 2001}, "good", 413, "2000"),
        ("/api/v1/say", {"text": "hi", "mode": "sing"}, "good", 400, "mode"),
        ("/api/v1/say", {"text": "hi", "cache": "yes"}, "good", 400, "true or false"),
        ("/api/v1/say", {"text": "hi", "mode": "chat", "cache": True}, "good", 400, "verbatim"),
        ("/api/v1/say", {"text": "hi", "role": "nobody"}, "good", 404, "nobody"),
        ("/api/v1/interrupt", {"role": "nobody"}, "good", 404, "nobody"),
        ("/api/v1/say", [1, 2], "good", 400, "object"),
        ("/api/v1/scene", {"lines": [{"role": "nova", "text": "hi"}]}, None, 401, "token"),
        ("/api/v1/scene", {"lines": [{"role": "nobody", "text": "hi"}]}, "good", 404, "nobody"),
        ("/api/v1/scene", {"lines": [{"text": "hi"}] * 40}, "good", 413, "at most"),
        ("/api/v1/scene", {"conversation": {"roles": ["nova"]}}, "good", 400, "two roles"),
        ("/api/v1/offer", {"sdp": "v=0\r\nnonsense", "type": "offer"}, None, 400, "offer"),
        ("/api/v1/offer", {"sdp": "m=audio " + "x" * 40_000, "type": "offer"}, None, 400, "SDP"),
        ("/api/v1/offer", {"sdp": 12, "type": "offer"}, None, 400, "sdp"),
        ("/api/v1/offer", {"sdp": "v=0", "type": "answer"}, None, 400, "offer"),
    ],
)
def test_bad_requests_are_refused_with_a_message(show, path, body, token, status, message):
    got, answer = asyncio.run(request(show, "POST", path, body, token))
    assert got == status, answer
    assert message.lower() in answer["error"].lower()


def test_garbage_bodies_and_oversized_bodies_are_refused(show):
    got, answer = asyncio.run(request(show, "POST", "/api/v1/say", raw=b"{not json"))
    assert got == 400 and "JSON" in answer["error"]
    got, answer = asyncio.run(
        request(show, "POST", "/api/v1/say", raw=b'{"text": "' + b"a" * 70_000 + b'"}')
    )
    assert got == 413


def test_full_queue_answers_429_and_keeps_every_accepted_utterance(show):
    async def run():
        accepted, refused = [], []
        for i in range(show.cfg.stage.queue_size + 4):
            got, answer = await request(show, "POST", "/api/v1/say", {"text": f"Number {i}."})
            (accepted if got == 202 else refused).append((got, answer))
        finals = [await until_final(show, a["utterance_id"], timeout=120) for _, a in accepted]
        return accepted, refused, finals

    accepted, refused, finals = asyncio.run(run())
    assert refused and all(g == 429 and "full" in a["error"] for g, a in refused)
    # every accepted utterance was spoken (none dropped silently)
    assert [f["state"] for f in finals] == ["done"] * len(accepted)


def test_socket_events_with_a_wrong_shape_get_error_acks(show):
    async def run():
        sio = socketio.AsyncClient()
        await sio.connect(show.url, transports=["websocket"])
        acks = {
            "chat_string": await sio.call("chat", "hello"),
            "chat_no_text": await sio.call("chat", {"txt": "hello"}),
            "chat_long": await sio.call("chat", {"text": "x" * 301}),
            "timesync_bad": await sio.call("timesync", {"t0": "soon"}),
            "stats_bad": await sio.call("client_stats", [1, 2, 3]),
            "timesync_ok": await sio.call("timesync", {"t0": 1.5}),
            "chat_ok": await sio.call("chat", {"text": "hello <b>owls</b>"}),
        }
        flood = [await sio.call("chat", {"text": f"spam {i}"}) for i in range(5)]
        await sio.disconnect()
        return acks, flood

    acks, flood = asyncio.run(run())
    for name in ("chat_string", "chat_no_text", "chat_long", "timesync_bad", "stats_bad"):
        assert acks[name]["ok"] is False and acks[name]["error"], name
    assert (
        acks["timesync_ok"]["t0"] == 1.5 and acks["timesync_ok"]["t2"] >= acks["timesync_ok"]["t1"]
    )
    assert acks["chat_ok"]["ok"] is True
    assert any(not a["ok"] and "slow down" in a["error"] for a in flood), "no flood limit"


def test_server_is_still_up_after_all_that(show):
    status, body = asyncio.run(request(show, "GET", "/healthz", token=None))
    assert status == 200 and body["status"] == "ok"
