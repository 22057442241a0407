"""A fuzz pass over everything the public and the host can send: every HTTP body and every
socket.io event, shaped like their schemas and not. No answer is a 5xx, nothing unhandled is
logged, and the show is healthy after. Each test prints how many cases it ran."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.error
import urllib.request

import pytest
import socketio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.bench.inprocess import LiveServer
from server.config import load_config
from server.loading import Models
from server.transport import signals
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM

EXAMPLES = 150
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# any JSON value; numbers at the edges (1e308, huge ints), text with odd characters
numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 1e308, -1e308, 2**53, 10**30]),
)
texts = st.text(max_size=60) | st.sampled_from(["", " ", "\u202e", "v=0\r\nm=audio 9", "<b>"])
json_values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(texts, inner, max_size=5),
    max_leaves=20,
)


def shaped(*keys: str):
    """Objects with the schema's keys holding any JSON value (and other keys besides)."""
    return st.fixed_dictionaries({}, optional={k: json_values for k in keys}).flatmap(
        lambda d: st.dictionaries(texts, json_values, max_size=3).map(lambda extra: {**extra, **d})
    )


class Unhandled(logging.Handler):
    """Every record logged with an exception attached (an unhandled one, or one caught and
    logged as unexpected)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


@pytest.fixture(scope="module")
def show():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    # the limits would refuse most cases before their bodies are read: lift them here
    w = cfg.webrtc
    w.offers_per_minute, w.offer_burst, w.max_viewers_per_address = 100_000, 100_000, 1000
    c = cfg.chat
    c.per_minute = c.per_minute_per_address = c.per_minute_total = 100_000
    c.burst = c.burst_per_address = c.burst_total = 100_000
    rates = dict(signals.EVENT_RATES)
    signals.EVENT_RATES.update({event: (100_000, 100_000) for event in rates})
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(), None)).start()
    handler = Unhandled()
    logging.getLogger().addHandler(handler)
    srv.unhandled = handler
    yield srv
    logging.getLogger().removeHandler(handler)
    signals.EVENT_RATES.update(rates)
    srv.stop()


def post(srv, path: str, body: bytes, token: bool) -> int:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {TOKEN}"
    req = urllib.request.Request(srv.url + path, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


BODIES = {
    "/api/v1/say": shaped("text", "mode", "role"),
    "/api/v1/interrupt": shaped("role"),
    "/api/v1/offer": shaped("sdp", "type"),
    "/api/v1/chat/answer": shaped("id", "role"),
    "/api/v1/scene": shaped("lines", "conversation"),
    "/api/v1/dub": shaped("lines", "format"),
}


@pytest.mark.parametrize("path", list(BODIES))
def test_http_bodies(show, path):
    ran = []

    @FUZZ
    @given(
        body=BODIES[path] | json_values,
        raw=st.none() | st.binary(max_size=200),
        token=st.booleans(),
    )
    def case(body, raw, token):
        data = raw if raw is not None else json.dumps(body).encode()
        status = post(show, path, data, token)
        ran.append(status)
        assert status < 500, (path, data[:200], status)

    case()
    print(f"{path}: {len(ran)} cases, statuses {sorted(set(ran))}")
    assert len(ran) >= EXAMPLES // 2
    assert not show.unhandled.records, [r.getMessage() for r in show.unhandled.records]


EVENTS = {
    "chat": shaped("text"),
    "timesync": shaped("t0"),
    "client_stats": shaped(
        "fps",
        "dropped_frames",
        "lipsync_offset_ms",
        "output_latency_ms",
        "output_latency_source",
        "lipsync_onsets_ms",
        "lipsync_onset_roles",
        "utterance_onsets",
    ),
    "no_such_event": json_values,
}


@pytest.mark.parametrize("event", list(EVENTS))
def test_socket_events(show, event):
    client = socketio.AsyncClient(reconnection=False)
    show.call(client.connect(show.url, transports=["websocket"]))
    ran = []

    async def send(data):
        if event == "no_such_event":
            await client.emit(event, data)
            return None
        return await client.call(event, data, timeout=10)

    @FUZZ
    @given(data=EVENTS[event] | json_values)
    def case(data):
        ack = show.call(send(data))
        ran.append(ack)
        assert client.connected, (event, data)
        assert ack is None or isinstance(ack, dict), ack

    try:
        case()
    finally:
        show.call(client.disconnect())
    print(f"{event}: {len(ran)} cases")
    assert len(ran) >= EXAMPLES // 2
    assert not show.unhandled.records, [r.getMessage() for r in show.unhandled.records]


def test_the_show_is_healthy_after_it_all(show):
    with urllib.request.urlopen(show.url + "/healthz", timeout=10) as r:
        assert r.status == 200 and json.load(r)["status"] == "ok"
    assert not show.unhandled.records, [r.getMessage() for r in show.unhandled.records]
    asyncio.run(asyncio.sleep(0))
