"""Viewer peers: one aiortc connection per viewer, each sending the shared broadcast track."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass

import av
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from . import rtp
from .broadcast import Broadcast, Listener

log = logging.getLogger(__name__)


class OfferError(ValueError):
    """The offer cannot be answered; the message says why (sent back as a 400)."""


class BroadcastTrack(MediaStreamTrack):
    """An audio track whose packets come ready-encoded from the broadcast.

    It subscribes on the first `recv()` (when RTP starts, after ICE and DTLS), so a new viewer
    starts at the live edge instead of with a backlog queued during connection set-up.
    """

    kind = "audio"

    def __init__(self, broadcast: Broadcast) -> None:
        super().__init__()
        self._broadcast = broadcast
        self._listener: Listener | None = None

    async def recv(self) -> av.Packet:  # type: ignore[override]
        if self.readyState != "live":
            raise MediaStreamError
        if self._listener is None:
            self._listener = self._broadcast.listen()
        return await self._listener.get()

    @property
    def dropped(self) -> int:
        return self._listener.dropped if self._listener else 0

    def stop(self) -> None:
        super().stop()
        if self._listener is not None:
            self._broadcast.unlisten(self._listener)
            self._listener = None


@dataclass
class Viewer:
    session_id: str
    pc: RTCPeerConnection
    track: BroadcastTrack
    rtp_base: int


class ViewerPeers:
    """All connected viewers; closes the peers that go away."""

    def __init__(self, broadcast: Broadcast, max_viewers: int, max_sdp_bytes: int) -> None:
        self._broadcast = broadcast
        self.max_viewers = max_viewers
        self.max_sdp_bytes = max_sdp_bytes
        self.viewers: dict[str, Viewer] = {}

    def __len__(self) -> int:
        return len(self.viewers)

    async def answer(self, sdp: str, kind: str) -> tuple[RTCSessionDescription, Viewer]:
        """Answer a viewer's offer with one send-only audio track of the broadcast."""
        if kind != "offer":
            raise OfferError('"type" must be "offer"')
        if not isinstance(sdp, str) or not sdp.strip():
            raise OfferError('"sdp" must be a non-empty string')
        if len(sdp.encode()) > self.max_sdp_bytes:
            raise OfferError(f"SDP larger than {self.max_sdp_bytes} bytes")
        if "m=audio" not in sdp:
            raise OfferError("the offer has no audio section")
        if len(self.viewers) >= self.max_viewers:
            raise OfferError(f"viewer limit of {self.max_viewers} reached")

        pc = RTCPeerConnection()
        track = BroadcastTrack(self._broadcast)
        try:
            sender = pc.addTrack(track)
            rtp_base = rtp.assign_origin(sender)
            await pc.setRemoteDescription(
                RTCSessionDescription(sdp=rtp.strip_mdns_candidates(sdp), type="offer")
            )
            answer = await pc.createAnswer()
            await pc.setLocalDescription(answer)
        except Exception as exc:  # aiortc raises many types on malformed SDP
            track.stop()
            await pc.close()
            raise OfferError(f"malformed offer: {exc}") from exc

        viewer = Viewer(uuid.uuid4().hex, pc, track, rtp_base)
        self.viewers[viewer.session_id] = viewer

        @pc.on("connectionstatechange")
        async def _on_state() -> None:
            if pc.connectionState in ("failed", "closed", "disconnected"):
                await self.close(viewer.session_id)

        return pc.localDescription, viewer

    async def close(self, session_id: str) -> None:
        viewer = self.viewers.pop(session_id, None)
        if viewer is not None:
            viewer.track.stop()
            await viewer.pc.close()

    async def close_all(self) -> None:
        await asyncio.gather(*(self.close(s) for s in list(self.viewers)), return_exceptions=True)
