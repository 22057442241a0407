"""Viewer peers: one aiortc connection per viewer, each sending the shared broadcast track."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass

import av
from aiortc import (
    RTCConfiguration,
    RTCIceServer,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
from aiortc.sdp import SessionDescription

from ..config import WebRTCConfig
from ..media.broadcast import Broadcast, Listener
from . import rtp
from .ratelimit import PerAddress

log = logging.getLogger(__name__)


class OfferError(ValueError):
    """The offer cannot be answered; the message says why, sent back with `status`: 400 for
    an offer that is wrong, 429 for one address asking too much, 503 for a full house."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


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

    async def recv(self) -> av.Packet:
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
    address: str = ""


class ViewerPeers:
    """All connected viewers; closes the peers that go away, or never connect.

    A slot is taken when an offer is accepted, before the awaits that answer it, so a burst
    of offers cannot pass the limit together; a peer whose ICE never completes (blocked UDP,
    or a script that never meant to connect) is closed after `connect_timeout_s`, and aiortc
    sets no such limit itself."""

    def __init__(self, broadcast: Broadcast, limits: WebRTCConfig) -> None:
        self._broadcast = broadcast
        self.limits = limits
        self.viewers: dict[str, Viewer] = {}
        self._pending: dict[str, str] = {}  # slots taken by offers being answered: id → address
        self._offers = PerAddress(limits.offers_per_minute, limits.offer_burst)
        self._reapers: set[asyncio.Task] = set()

    def __len__(self) -> int:
        return len(self.viewers)

    def _held_by(self, address: str) -> int:
        pending = sum(a == address for a in self._pending.values())
        return pending + sum(v.address == address for v in self.viewers.values())

    def connecting(self) -> int:
        """Peers answered or being answered that have not connected yet."""
        waiting = sum(v.pc.connectionState != "connected" for v in self.viewers.values())
        return len(self._pending) + waiting

    def _take_slot(self, address: str) -> str:
        """Count an offer against the limits at once (no await before this returns)."""
        lim = self.limits
        if len(self.viewers) + len(self._pending) >= lim.max_viewers:
            raise OfferError(f"viewer limit of {lim.max_viewers} reached", 503)
        if self.connecting() >= lim.max_connecting:
            # a peer that has not connected costs the most for the least: its ICE checks run
            # and its objects wait for the collector. 500 offers that never connected held 170
            # at once, and the full collection that freed them held the loop for 170 ms.
            raise OfferError(
                f"{lim.max_connecting} viewers are connecting: try again in a few seconds", 503
            )
        if self._held_by(address) >= lim.max_viewers_per_address:
            raise OfferError(f"{lim.max_viewers_per_address} viewers from one address at most", 429)
        if not self._offers.allow(address):
            raise OfferError(
                f"too many offers from one address: {lim.offers_per_minute} a minute", 429
            )
        slot = uuid.uuid4().hex
        self._pending[slot] = address
        return slot

    async def answer(
        self, sdp: object, kind: object, address: str = ""
    ) -> tuple[RTCSessionDescription, Viewer]:
        """Answer a viewer's offer (its body's "sdp" and "type", checked here) with one
        send-only audio track of the broadcast."""
        if kind != "offer":
            raise OfferError('"type" must be "offer"')
        if not isinstance(sdp, str) or not sdp.strip():
            raise OfferError('"sdp" must be a non-empty string')
        if len(sdp.encode("utf-8", "surrogatepass")) > self.limits.max_sdp_bytes:
            raise OfferError(f"SDP larger than {self.limits.max_sdp_bytes} bytes")
        check_offer(sdp)
        slot = self._take_slot(address)
        try:
            viewer = await self._connect(sdp, address)
        finally:
            del self._pending[slot]
        self.viewers[viewer.session_id] = viewer
        reaper = asyncio.get_running_loop().create_task(self._reap(viewer))
        self._reapers.add(reaper)
        reaper.add_done_callback(self._reapers.discard)
        return viewer.pc.localDescription, viewer

    async def _connect(self, sdp: str, address: str) -> Viewer:
        ice = [RTCIceServer(urls=url) for url in self.limits.ice_servers]
        # no STUN unless configured: aiortc's default asks a public server on every offer
        pc = RTCPeerConnection(RTCConfiguration(iceServers=ice))
        track = BroadcastTrack(self._broadcast)
        try:
            sender = pc.addTrack(track)
            rtp_base = rtp.assign_origin(sender)
            await pc.setRemoteDescription(
                RTCSessionDescription(sdp=rtp.strip_mdns_candidates(sdp), type="offer")
            )
            # the broadcast goes out on the first audio section; nothing comes in on it or on
            # any other (received media would pile up decoded, unread)
            for transceiver in pc.getTransceivers():
                ours = transceiver.sender.track is track
                transceiver.direction = "sendonly" if ours else "inactive"
            answer = await pc.createAnswer()
            await pc.setLocalDescription(answer)
        except Exception as exc:  # aiortc raises many types on malformed SDP
            track.stop()
            await pc.close()
            log.info("offer not answered: %r", exc)  # not echoed: it describes the server
            raise OfferError("malformed offer: it could not be answered") from exc
        viewer = Viewer(uuid.uuid4().hex, pc, track, rtp_base, address)

        @pc.on("connectionstatechange")
        async def _on_state() -> None:
            if pc.connectionState in ("failed", "closed", "disconnected"):
                await self.close(viewer.session_id)

        return viewer

    async def _reap(self, viewer: Viewer) -> None:
        """Close the peer if it has not connected within the limit."""
        await asyncio.sleep(self.limits.connect_timeout_s)
        if viewer.pc.connectionState != "connected":
            log.info("viewer %s did not connect in time: closed", viewer.session_id[:8])
            await self.close(viewer.session_id)

    async def close(self, session_id: str) -> None:
        viewer = self.viewers.pop(session_id, None)
        if viewer is not None:
            viewer.track.stop()
            await viewer.pc.close()

    async def close_all(self) -> None:
        for reaper in list(self._reapers):
            reaper.cancel()
        await asyncio.gather(*(self.close(s) for s in list(self.viewers)), return_exceptions=True)


def check_offer(sdp: str) -> None:
    """An OfferError unless the offer's first audio section can receive the broadcast
    (recvonly or sendrecv) and none is a data channel (aiortc cannot decline one, and would
    take what it carries)."""
    try:
        parsed = SessionDescription.parse(sdp)
    except Exception as exc:  # aiortc's parser raises what the text leads it to
        log.info("offer not parsed: %r", exc)
        raise OfferError("malformed offer: its SDP could not be parsed") from exc
    sections = [(m.kind, m.direction or "sendrecv") for m in parsed.media]
    if any(k == "application" for k, _ in sections):
        raise OfferError("the offer has a data channel section: only audio is answered")
    audio = [d for k, d in sections if k == "audio"]
    if not audio:
        raise OfferError("the offer has no audio section")
    if audio[0] not in ("recvonly", "sendrecv"):
        raise OfferError(f"the offer's audio section is {audio[0]}: it must be able to receive")
