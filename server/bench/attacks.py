"""The attacker of `bench abuse`, a process of its own: offers that never connect, sockets that
flood every event, sockets that never read, spread over 50 loopback addresses (127.0.1.x) so
the per-address limits meet many clients, as on the internet, not one.

    python -m server.bench.attacks URL ATTACK SECONDS OUT.json
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import sys
import time
from pathlib import Path

import aiohttp

ADDRESSES = [f"127.0.1.{i}" for i in range(1, 51)]
ATTACKS = ("none", "500 offers never connecting", "50 sockets flooding", "20 sockets never reading")


async def _offer_sdp() -> str:
    from aiortc import RTCPeerConnection

    from server.transport import rtp

    rtp.use_ice_addresses(["127.0.0.1"])
    pc = RTCPeerConnection()
    pc.addTransceiver("audio", direction="recvonly")
    await pc.setLocalDescription(await pc.createOffer())
    sdp = pc.localDescription.sdp
    await pc.close()
    return sdp


def _session(address: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(address, 0)))


async def _offers(url: str, n: int, seconds: float) -> dict:
    sdp = await _offer_sdp()
    statuses: dict[int, int] = {}
    gap = seconds / n
    sessions = [_session(a) for a in ADDRESSES]
    try:
        for i in range(n):
            http = sessions[i % len(sessions)]
            r = await http.post(f"{url}/api/v1/offer", json={"sdp": sdp, "type": "offer"})
            statuses[r.status] = statuses.get(r.status, 0) + 1
            await asyncio.sleep(gap)
    finally:
        await asyncio.gather(*(s.close() for s in sessions))
    return {"statuses": statuses}


async def _flood(url: str, n: int, seconds: float, rate: float = 100.0) -> dict:
    import socketio

    clients, sessions = [], []
    for i in range(n):
        http = _session(ADDRESSES[i % len(ADDRESSES)])
        c = socketio.AsyncClient(reconnection=False, http_session=http)
        await c.connect(url, transports=["websocket"])
        clients.append(c)
        sessions.append(http)
    sent = 0
    stats = {"fps": 60.0, "lipsync_onsets_ms": [1.0] * 200}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        tick = time.monotonic()
        for c in clients:
            if c.connected:
                await c.emit("chat", {"text": "flood"})
                await c.emit("timesync", {"t0": 1.0})
                await c.emit("client_stats", stats)
                sent += 3
        await asyncio.sleep(max(0.0, 1 / rate - (time.monotonic() - tick)))
    left = sum(c.connected for c in clients)
    for c in clients:
        await c.disconnect()
    await asyncio.gather(*(s.close() for s in sessions))
    return {"sent": sent, "still connected": left}


def silent_socket(host: str, port: int, address: str = "127.0.0.1") -> socket.socket:
    """A socket.io client on a raw WebSocket from `address` that connects as a viewer, then
    never reads again (its receive buffer kept small)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((address, 0))
    s.connect((host, port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(
        f"GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(4096)
    if not got.startswith(b"HTTP/1.1 101"):
        raise ConnectionError(f"no WebSocket: {got[:200]!r}")
    mask = os.urandom(4)  # socket.io's "40": connect to the default namespace
    s.sendall(bytes([0x81, 0x82]) + mask + bytes(b ^ mask[i] for i, b in enumerate(b"40")))
    return s


async def _silent(url: str, n: int, seconds: float) -> dict:
    host, port = url.removeprefix("http://").split(":")
    held = [silent_socket(host, int(port), ADDRESSES[i % len(ADDRESSES)]) for i in range(n)]
    await asyncio.sleep(seconds)
    for s in held:
        s.close()
    return {"sockets": n}


def _attack(url: str, attack: str, seconds: float) -> dict:
    if attack == ATTACKS[1]:
        return asyncio.run(_offers(url, 500, seconds))
    if attack == ATTACKS[2]:
        return asyncio.run(_flood(url, 50, seconds))
    if attack == ATTACKS[3]:
        return asyncio.run(_silent(url, 20, seconds))
    time.sleep(seconds)
    return {}


if __name__ == "__main__":
    _, url, attack, seconds, out = sys.argv
    Path(out).write_text(json.dumps(_attack(url, attack, float(seconds))))
