"""A Python viewer: receives the broadcast over WebRTC and the timelines over socket.io.

It places every decoded audio frame on the broadcast clock with the answer's RTP mapping, the
way the browser page does, so tests can check what a viewer hears against what was planned.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import numpy as np
import socketio
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError

from server.media.mediaclock import unwrap_rtp
from server.transport import rtp


@dataclass
class HeardFrame:
    sample: int  # broadcast sample of the frame's first sample
    pcm: np.ndarray  # int16 mono, 48 kHz
    arrived: float  # monotonic time of decoding


@dataclass
class Tally:
    """What a long run needs of each frame heard, without the frame: where it falls on the
    broadcast clock and when it came, in two flat arrays (16 bytes a frame, no object each).
    Kept whole, an hour of twenty viewers' frames is 3.6 million objects and about 7 GB."""

    samples: array = field(default_factory=lambda: array("q"))
    arrived: array = field(default_factory=lambda: array("d"))

    def add(self, sample: int, arrived: float) -> None:
        self.samples.append(sample)
        self.arrived.append(arrived)

    def clear(self) -> None:
        del self.samples[:]
        del self.arrived[:]


@dataclass
class PythonViewer:
    base_url: str
    listen_socket: bool = True
    tally: Tally | None = None  # given, each frame heard is tallied there, not kept in frames
    frames: list[HeardFrame] = field(default_factory=list)
    events: list[tuple[str, dict, float]] = field(default_factory=list)
    rtp_base: int | None = None
    epoch_ms: float | None = None  # fused time of broadcast sample 0, from the answer
    session_id: str | None = None

    async def connect(self, timeout: float = 15.0) -> None:
        rtp.use_ice_addresses(["127.0.0.1"])  # tests and benches stay on loopback
        self.pc = RTCPeerConnection()
        self.pc.addTransceiver("audio", direction="recvonly")
        self._got_track = asyncio.Event()
        self._reader: asyncio.Task | None = None

        @self.pc.on("track")
        def on_track(track: Any) -> None:
            self._reader = asyncio.get_running_loop().create_task(self._read(track))
            self._got_track.set()

        await self.pc.setLocalDescription(await self.pc.createOffer())
        async with aiohttp.ClientSession() as http:
            r = await http.post(
                f"{self.base_url}/api/v1/offer",
                json={"sdp": self.pc.localDescription.sdp, "type": "offer"},
            )
            answer = await r.json()
            if r.status != 200:
                raise RuntimeError(f"offer refused: {r.status} {answer}")
        self.rtp_base = answer["clock"]["rtp_base"]
        self.epoch_ms = answer["clock"].get("epoch_ms")
        self.session_id = answer["session_id"]
        await self.pc.setRemoteDescription(RTCSessionDescription(answer["sdp"], answer["type"]))
        if self.listen_socket:
            self.sio = socketio.AsyncClient()
            for name in ("utterance", "visemes", "interrupt", "state", "chat"):
                self.sio.on(name, self._recorder(name))
            await self.sio.connect(self.base_url, transports=["websocket"])
        await asyncio.wait_for(self._got_track.wait(), timeout)

    def _recorder(self, name: str) -> Any:
        async def record(data: dict) -> None:
            self.events.append((name, data, time.monotonic()))

        return record

    async def _read(self, track: Any) -> None:
        receiver = next(r for r in self.pc.getReceivers() if r.track is track)
        # aiortc keeps the first RTP timestamp here, name-mangled
        mapper = getattr(receiver, "_RTCRtpReceiver__timestamp_mapper")  # noqa: B009
        base = self.rtp_base
        if base is None:
            raise RuntimeError("the answer gave no rtp_base")
        near = 0
        with contextlib.suppress(MediaStreamError):
            while True:
                frame = await track.recv()
                # aiortc's pts counts from the first packet it received; add that packet's RTP
                # timestamp back to get the raw RTP timestamp, then map it to the broadcast clock
                rtp_ts = (frame.pts + mapper._origin) % (1 << 32)
                near = unwrap_rtp(rtp_ts, base, near)
                if self.tally is not None:
                    self.tally.add(near, time.monotonic())
                    continue
                pcm = frame.to_ndarray().reshape(-1, len(frame.layout.channels))[:, 0]
                self.frames.append(HeardFrame(near, pcm.astype(np.int16), time.monotonic()))

    def audio(self, start: int, end: int) -> np.ndarray:
        """What this viewer heard over [start, end) on the broadcast clock (zeros where nothing)."""
        return laid_out(((f.sample, f.pcm) for f in self.frames), start, end)

    def named(self, name: str) -> list[dict]:
        return [d for n, d, _ in self.events if n == name]

    async def close(self) -> None:
        if self.listen_socket:
            with contextlib.suppress(Exception):
                await self.sio.disconnect()
        await self.pc.close()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)


def laid_out(frames: Iterable[tuple[int, np.ndarray]], start: int, end: int) -> np.ndarray:
    """Frames (first broadcast sample, int16 pcm) laid out over [start, end); zeros between."""
    out = np.zeros(end - start, dtype=np.int16)
    for at, pcm in frames:
        lo, hi = max(start, at), min(end, at + len(pcm))
        if lo < hi:
            out[lo - start : hi - start] = pcm[lo - at : hi - at]
    return out
