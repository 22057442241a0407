"""Viewer slots cannot be held for good: a burst of offers stays within the limit, a peer that
never connects is closed, one address holds a bounded share, and the server takes no media in."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time

import pytest
from aiortc import RTCPeerConnection

from server.bench.inprocess import LiveServer, request
from server.config import WebRTCConfig, load_config
from server.keys import BROADCAST, PEERS
from server.loading import Models
from server.transport import rtp
from server.transport.peers import OfferError, ViewerPeers
from tests.conftest import TOKEN
from tests.fakes import ToneTTS, WordsLLM
from tests.harness import wait_for

CAP = 4
REAP_S = 1.5


@pytest.fixture(scope="module")
def small_show():
    cfg = load_config(None, env={"ALLNIGHTER_HOST_TOKEN": TOKEN})
    w = cfg.webrtc
    w.max_viewers, w.connect_timeout_s = CAP, REAP_S
    w.max_viewers_per_address, w.offers_per_minute, w.offer_burst = 100, 1000, 1000
    srv = LiveServer(cfg, Models(WordsLLM(), ToneTTS(), None)).start()
    yield srv
    srv.stop()


async def offer_sdp(*kinds: tuple[str, str], channel: bool = False) -> str:
    """An offer as a browser would make it (audio to receive, by default), never answered:
    the peer that made it goes away, so the server's side never connects."""
    rtp.use_ice_addresses(["127.0.0.1"])  # loopback only, as the server's own
    pc = RTCPeerConnection()
    for kind, direction in kinds or [("audio", "recvonly")]:
        pc.addTransceiver(kind, direction=direction)
    if channel:
        pc.createDataChannel("chat")
    await pc.setLocalDescription(await pc.createOffer())
    sdp = pc.localDescription.sdp
    await pc.close()
    return sdp


def test_a_burst_of_offers_takes_no_more_than_the_cap_and_unconnected_peers_are_reaped(
    small_show,
):
    peers = small_show.app[PEERS]

    async def run():
        offers = [await offer_sdp() for _ in range(3 * CAP)]
        body = [{"sdp": sdp, "type": "offer"} for sdp in offers]
        answers = await asyncio.gather(
            *(request(small_show, "POST", "/api/v1/offer", b, token=None) for b in body)
        )
        held = len(peers)
        await asyncio.sleep(REAP_S + 1.0)
        after = len(peers)
        again = await request(
            small_show, "POST", "/api/v1/offer", {"sdp": offers[0], "type": "offer"}, token=None
        )
        return answers, held, after, again

    answers, held, after, again = asyncio.run(run())
    accepted = [a for status, a in answers if status == 200]
    refused = [a for status, a in answers if status != 200]
    assert len(accepted) == CAP and held == CAP, answers
    # a full house: the browser is told to come back (503), with the reason
    assert all(s == 503 for s, _ in answers if s != 200), answers
    assert all(f"viewer limit of {CAP}" in a["error"] for a in refused), refused
    assert after == 0, "peers that never connected still hold their slots"
    assert again[0] == 200, again  # the slots are free again


def test_the_answer_sends_audio_only_and_takes_nothing_in(small_show):
    async def run():
        both = await offer_sdp(("audio", "sendrecv"), ("video", "sendrecv"))
        got = await request(
            small_show, "POST", "/api/v1/offer", {"sdp": both, "type": "offer"}, token=None
        )
        channel = await offer_sdp(channel=True)
        refused = await request(
            small_show, "POST", "/api/v1/offer", {"sdp": channel, "type": "offer"}, token=None
        )
        sending = await offer_sdp(("audio", "sendonly"))
        refused_too = await request(
            small_show, "POST", "/api/v1/offer", {"sdp": sending, "type": "offer"}, token=None
        )
        return got, refused, refused_too

    (status, answer), refused, refused_too = asyncio.run(run())
    assert status == 200, answer
    sections = answer["sdp"].split("\r\nm=")[1:]
    audio = next(s for s in sections if s.startswith("audio"))
    video = next(s for s in sections if s.startswith("video"))
    assert "a=sendonly" in audio and "a=sendrecv" not in audio
    assert "a=inactive" in video or video.split()[1] == "0"
    assert refused[0] == 400 and "data channel" in refused[1]["error"]
    assert refused_too[0] == 400 and "sendonly" in refused_too[1]["error"]


async def offers_from(peers: ViewerPeers, addresses: list[str], sdp: str) -> list[str]:
    """Each address's offer in turn: "ok", or the refusal's status and message."""
    results = []
    for address in addresses:
        try:
            await peers.answer(sdp, "offer", address)
            results.append("ok")
        except OfferError as exc:
            results.append(f"{exc.status} {exc}")
    return results


def test_one_address_holds_a_bounded_share_of_the_slots():
    limits = WebRTCConfig(max_viewers=100, max_viewers_per_address=2)
    peers = ViewerPeers(None, limits)  # type: ignore[arg-type]  # nothing is broadcast here

    async def run():
        sdp = await offer_sdp()
        results = await offers_from(peers, ["192.0.2.1"] * 3 + ["192.0.2.2"], sdp)
        await peers.close(next(iter(peers.viewers)))  # one of the first address's leaves
        results += await offers_from(peers, ["192.0.2.1"], sdp)
        await peers.close_all()
        return results

    results = asyncio.run(run())
    assert results[:2] == ["ok", "ok"]
    assert results[2] == "429 2 viewers from one address at most"
    assert results[3:] == ["ok", "ok"]  # another address, and the slot given back


def test_one_address_offers_at_a_bounded_rate():
    limits = WebRTCConfig(max_viewers=100, offers_per_minute=1, offer_burst=2)
    peers = ViewerPeers(None, limits)  # type: ignore[arg-type]

    async def run():
        sdp = await offer_sdp()
        results = await offers_from(peers, ["192.0.2.3"] * 3 + ["192.0.2.4"], sdp)
        await peers.close_all()
        return results

    results = asyncio.run(run())
    assert results[:2] == ["ok", "ok"]
    assert results[2] == "429 too many offers from one address: 1 a minute"
    assert results[3] == "ok"


def test_peers_that_have_not_connected_are_bounded_apart_from_the_viewer_limit():
    """What costs the most for the least (ICE checks, objects the collector must walk) is
    bounded on its own: past `max_connecting`, a 503 the page retries after."""
    limits = WebRTCConfig(max_viewers=100, max_connecting=3, max_viewers_per_address=100)
    peers = ViewerPeers(None, limits)  # type: ignore[arg-type]

    async def run():
        sdp = await offer_sdp()
        results = await offers_from(peers, [f"192.0.2.{i}" for i in range(10, 14)], sdp)
        await peers.close(next(iter(peers.viewers)))  # one gives up: a place to connect is free
        results += await offers_from(peers, ["192.0.2.20"], sdp)
        await peers.close_all()
        return results

    results = asyncio.run(run())
    assert results[:3] == ["ok"] * 3
    assert results[3] == "503 3 viewers are connecting: try again in a few seconds"
    assert results[4] == "ok"


# two viewers in a process of their own, which the test kills: gone as a machine that loses
# its network goes, with no goodbye (no RTCP BYE, no DTLS close, no socket.io disconnect)
VANISHING = """
import asyncio, sys
from server.bench.viewer import PythonViewer

async def main():
    for _ in range(2):
        await PythonViewer(sys.argv[1], listen_socket=False).connect()
    print("connected", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""
# RFC 7675: aioice asks the viewer's consent every 4-6 s and gives up after 6 unanswered
CONSENT_EXPIRES_S = 6 * 6


def test_viewers_gone_without_a_goodbye_are_let_go(small_show):
    """A viewer that vanishes stops costing the server: its consent to send expires, its peer
    is closed, its slot is free and the broadcast no longer queues frames for it."""
    peers, broadcast = small_show.app[PEERS], small_show.app[BROADCAST]
    # the tests before leave peers that never connected, closed within REAP_S
    asyncio.run(wait_for(lambda: len(peers) == 0 and broadcast.listening == 0, REAP_S + 5))
    client = subprocess.Popen(
        [sys.executable, "-c", VANISHING, small_show.url], stdout=subprocess.PIPE, text=True
    )
    try:
        assert client.stdout is not None and "connected" in client.stdout.readline()
        # each track listens from its first packet out, just after the viewer says it hears
        asyncio.run(wait_for(lambda: broadcast.listening == 2, 5.0))
        held = len(peers)
    finally:
        client.kill()
        client.wait()
    gone_at = time.monotonic()
    with contextlib.suppress(AssertionError):  # the assertions below say what was left
        asyncio.run(wait_for(lambda: len(peers) == 0, CONSENT_EXPIRES_S + 10))
    took = time.monotonic() - gone_at
    assert held == 2
    assert len(peers) == 0, f"{len(peers)} peers still held {took:.0f} s after"
    assert broadcast.listening == 0
