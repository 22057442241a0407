"""What anonymous viewers and foreign pages send cannot take the show down or act for the host:
bodies are read whole and only as JSON, and only the stage's own pages open its socket."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import socketio

from server.bench.attacks import silent_socket
from server.bench.inprocess import LiveServer, request, say, until_final
from server.config import load_config
from server.keys import LIVE, SIGNALS
from server.loading import Models
from server.transport.signals import same_origin_or
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM
from tests.harness import wait_for


async def post_in_pieces(srv, path: str, body: bytes, pause: float = 0.3) -> tuple[int, dict]:
    """POST `body` in two TCP segments, a pause between them, as a browser's large offer can
    arrive; the status and the JSON answer."""
    host, port = srv.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {srv.cfg.host_token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    half = len(body) // 2
    writer.write(head + body[:half])
    await writer.drain()
    await asyncio.sleep(pause)
    writer.write(body[half:])
    await writer.drain()
    answer = await reader.read()
    writer.close()
    status = int(answer.split(b" ", 2)[1])
    return status, json.loads(answer.split(b"\r\n\r\n", 1)[1])


def test_a_body_that_arrives_in_pieces_is_read_whole(tone_server):
    async def run():
        status, body = await post_in_pieces(
            tone_server, "/api/v1/say", json.dumps({"text": "arrived in two parts"}).encode()
        )
        assert status == 202, body
        return await until_final(tone_server, body["utterance_id"], timeout=20)

    assert asyncio.run(run())["state"] == "done"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
@pytest.mark.parametrize("path", ["/api/v1/say", "/api/v1/offer", "/api/v1/chat/answer"])
def test_a_body_not_sent_as_json_is_refused_with_415(tone_server, path, content_type):
    """What a cross-site form posts without asking: never read, whatever it holds."""
    body = json.dumps({"text": "forged", "sdp": "v=0", "type": "offer", "id": "x"}).encode()
    status, answer = asyncio.run(
        request(tone_server, "POST", path, raw=body, content_type=content_type)
    )
    assert status == 415, answer
    assert "Content-Type: application/json" in answer["error"]


async def connect(srv, origin: str | None) -> bool:
    c = socketio.AsyncClient(reconnection=False)
    headers = {"Origin": origin} if origin else {}
    try:
        await c.connect(srv.url, headers=headers, transports=["websocket"], wait_timeout=5)
    except socketio.exceptions.ConnectionError:
        return False
    await c.disconnect()
    return True


def test_only_the_stages_own_pages_open_its_socket(tone_server):
    own = tone_server.url  # http://127.0.0.1:port, as the stage page's origin is

    async def run():
        return {
            origin: await connect(tone_server, origin)
            for origin in [own, None, "https://evil.example", own + ".evil.example", "null"]
        }

    assert asyncio.run(run()) == {
        own: True,
        None: True,  # no browser: Origin is a browser's guard, and other clients are viewers
        "https://evil.example": False,
        own + ".evil.example": False,
        "null": False,
    }


def test_origins_allowed_by_the_config_and_behind_a_proxy():
    check = same_origin_or(["https://embed.example"])
    proxied = {"HTTP_HOST": "show.example", "wsgi.url_scheme": "http"}
    assert check("https://show.example", proxied)  # TLS ended at the proxy
    assert check("http://show.example", proxied)
    assert check("https://embed.example", proxied)
    assert not check("https://embed.example.evil", proxied)
    assert not check("ftp://show.example", proxied)
    forged = {**proxied, "HTTP_X_FORWARDED_HOST": "evil.example"}
    assert not check("https://evil.example", forged)


async def headers_of(srv, path: str) -> dict[str, str]:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        async with http.get(srv.url + path, headers=srv.headers) as r:
            return dict(r.headers)


@pytest.mark.parametrize(
    "path", ["/", "/host", "/api/v1/show", "/api/v1/roles", "/healthz", "/static/stage/main.js"]
)
def test_every_answer_carries_the_security_headers(tone_server, path):
    h = asyncio.run(headers_of(tone_server, path))
    assert h["X-Content-Type-Options"] == "nosniff"
    assert h["Referrer-Policy"] == "no-referrer"
    csp = h.get("Content-Security-Policy", "")
    if path == "/host":  # never framed by another site's page
        assert "frame-ancestors 'none'" in csp and h["X-Frame-Options"] == "DENY"
    if path == "/":
        assert "frame-ancestors 'self'" in csp
    if path in ("/host", "/api/v1/show", "/api/v1/roles"):
        assert h["Cache-Control"] == "no-store"


@pytest.fixture(scope="module")
def quick_server():
    """Tones of 20 ms a word: 500 phrases play in about half a minute."""
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(word_s=0.02, gap_s=0.01), None)).start()
    yield srv
    srv.stop()


def test_announced_speech_is_forgotten_as_it_plays_with_nobody_joining(quick_server):
    """The events replayed to viewers who join stay as few as the phrases still to play: over
    500 phrases, one line in three interrupted while it plays, with no one joining."""
    stage = quick_server.app[LIVE].stage
    held: list[int] = []
    sentences = " ".join(f"Word{k}." for k in range(50))

    async def watch(done: asyncio.Event) -> None:
        while not done.is_set():
            held.append(len(stage.pipeline.announcer))
            await asyncio.sleep(0.02)

    async def run() -> int:
        done = asyncio.Event()
        watcher = asyncio.create_task(watch(done))
        spoken = 0
        for i in range(15):  # ten lines whole, five interrupted
            _, body = await say(quick_server, sentences)
            uid = body["utterance_id"]
            if i % 3 == 2:
                await wait_for(lambda: len(stage.pipeline.announcer) > 0)
                await asyncio.sleep(0.5)
                await request(quick_server, "POST", "/api/v1/interrupt", {})
            final = await until_final(quick_server, uid, timeout=60)
            spoken += len(final["phrases"])
        await asyncio.sleep(0.2)
        done.set()
        await watcher
        return spoken

    spoken = asyncio.run(run())
    assert spoken >= 500, spoken
    # never more than one line's phrases (50) ahead, and nothing left once all has played
    assert max(held) <= 51, max(held)
    assert held[-1] == 0, held[-10:]


async def raw_request(srv, head: str, body: bytes = b"", extra: bytes = b"") -> tuple[int, bytes]:
    """One request written byte for byte (headers no client library would send): its status
    and body."""
    host, port = srv.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    lines = f"{head}\r\nHost: {host}:{port}\r\nConnection: close\r\n".encode() + extra
    if body:
        lines += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n".encode()
    writer.write(lines + b"\r\n" + body)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    return int(answer.split(b" ", 2)[1]), answer.split(b"\r\n\r\n", 1)[1]


def test_odd_bytes_get_clean_refusals(tone_server):
    token = f"Authorization: Bearer {tone_server.cfg.host_token}\r\n".encode()

    async def run():
        return [
            # invalid UTF-8 where the token goes
            await raw_request(
                tone_server,
                "GET /api/v1/show HTTP/1.1",
                extra=b"Authorization: Bearer \xff\xfe\x80\r\n",
            ),
            # half a surrogate pair in a line to speak, and in an offer
            await raw_request(
                tone_server, "POST /api/v1/say HTTP/1.1", b'{"text": "hi \\ud800"}', token
            ),
            await raw_request(
                tone_server,
                "POST /api/v1/offer HTTP/1.1",
                b'{"sdp": "v=0\\r\\nm=audio \\udfff", "type": "offer"}',
            ),
            await raw_request(
                tone_server,
                "POST /api/v1/offer HTTP/1.1",
                b'{"sdp": "m=audio 9 RTP/AVP 0\\r\\na=%%%", "type": "offer"}',
            ),
        ]

    (auth, say_half, offer_half, offer_bad) = asyncio.run(run())
    assert auth[0] == 401 and b"token" in auth[1]
    assert say_half[0] == 400 and b"surrogate" in say_half[1]
    assert offer_half[0] == 400 and b"surrogate" in offer_half[1]
    # a refusal says what was wrong with the offer, not what the parser raised
    assert offer_bad[0] == 400 and json.loads(offer_bad[1])["error"].startswith("malformed offer")
    assert b"Error" not in offer_bad[1] and b"Traceback" not in offer_bad[1]


def test_a_viewers_chat_has_no_control_or_bidi_characters(tone_server):
    async def run():
        c = socketio.AsyncClient()
        await c.connect(tone_server.url)
        ack = await c.call("chat", {"text": "hi\u202e\u2066 there\n\x07\x1b[31m \ud83d"})
        await c.disconnect()
        return ack

    ack = asyncio.run(run())
    assert ack["ok"], ack
    said = next(m for m in tone_server.app[SIGNALS].recent_chat if m["id"] == ack["id"])
    assert said["text"] == "hi there[31m"


def test_a_short_host_token_is_refused_at_start():
    from server.config import load_config

    with pytest.raises(ValueError, match="at least 16 characters"):
        load_config(None, env={"ALLNIGHTER_HOST_TOKEN": "hunter2"})
    assert len(load_config(None, env={}).host_token) >= 16  # a generated one


def test_reconnecting_does_not_refill_the_chat_budget(tone_server):
    """Ten sockets from one address, one after another, each with its own fresh burst of 3:
    the address's budget of 10 holds them all."""
    chat = tone_server.cfg.chat

    async def run():
        accepted = 0
        for k in range(10):
            c = socketio.AsyncClient()
            await c.connect(tone_server.url)
            for i in range(chat.burst):
                accepted += (await c.call("chat", {"text": f"again {k}.{i}"}))["ok"]
            await c.disconnect()
        return accepted

    accepted = asyncio.run(run())
    # without it, 30; a message or two more may be earned while the test runs (30 a minute),
    # and other tests here spent some of the address's budget
    assert chat.burst <= accepted <= chat.burst_per_address + 3, accepted


def test_a_socket_sending_too_much_is_refused_and_then_let_go(tone_server):
    async def too_big():
        c = socketio.AsyncClient(reconnection=False)
        await c.connect(tone_server.url, transports=["websocket"])
        try:  # 200 KB against a 32 KB cap: the server closes the socket without an answer
            await c.call("client_stats", {"fps": 50.0, "pad": "x" * 200_000}, timeout=5)
            answered = True
        except socketio.exceptions.TimeoutError:
            answered = False
        await asyncio.sleep(0.5)
        still = c.connected
        await c.disconnect()
        return answered, still

    async def flood():
        c = socketio.AsyncClient(reconnection=False)
        await c.connect(tone_server.url, transports=["websocket"])
        acks = []
        for _ in range(60):
            if not c.connected:
                break
            try:
                acks.append(await c.call("timesync", {"t0": 1.0}, timeout=2))
            except socketio.exceptions.TimeoutError:
                break
        await asyncio.sleep(0.5)
        gone = not c.connected
        await c.disconnect()
        return acks, gone

    assert asyncio.run(too_big()) == (False, False), "a 200 KB message was taken"
    acks, gone = asyncio.run(flood())
    ok = [a for a in acks if "t1" in a]
    refused = [a for a in acks if a.get("ok") is False]
    assert len(ok) <= 12, len(ok)  # a burst of 10, and what refills meanwhile
    assert refused and "too many timesync" in refused[0]["error"]
    assert gone and len(refused) <= 20, (len(refused), gone)


def test_a_socket_that_stops_reading_is_dropped_before_its_queue_grows(tone_server):
    from server.transport.signals import MAX_QUEUED

    signals = tone_server.app[SIGNALS]
    eio = signals.sio.eio
    before, viewers = set(eio.sockets), set(signals._limits)
    host, port = tone_server.url.removeprefix("http://").split(":")
    silent = silent_socket(host, int(port))
    deadline = time.monotonic() + 5
    while set(signals._limits) == viewers and time.monotonic() < deadline:
        time.sleep(0.05)  # until socket.io has connected it as a viewer
    (sid,) = set(eio.sockets) - before
    most = 0

    async def flood():
        nonlocal most
        for i in range(3000):  # about 24 MB: more than any TCP buffers hold
            await signals.emit("chat", {"from": "test", "text": "x" * 8000, "id": str(i)})
            sock = eio.sockets.get(sid)
            if sock is None or sock.closed:
                return i
            most = max(most, sock.queue.qsize())
        return None

    dropped_at = tone_server.call(flood(), timeout=120)
    silent.close()
    assert dropped_at is not None, "the socket that never reads was kept"
    assert most <= MAX_QUEUED + 1, most
    status, health = asyncio.run(request(tone_server, "GET", "/healthz", token=None))
    assert status == 200, health
