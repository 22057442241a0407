"""Exact RTP ↔ broadcast-sample mapping for aiortc senders, and loopback-friendly ICE.

aiortc draws a sender's RTP timestamp origin with `random32()` when RTP starts (after DTLS),
long after the answer is sent. For pre-encoded packets it then sends RTP = origin + pts. We
choose each sender's origin ourselves when the offer is answered (still random, but known), so
the answer can tell the viewer exactly: broadcast sample = (RTP − rtp_base) mod 2³².
"""

from __future__ import annotations

import asyncio
import os
import struct
import weakref

import aioice.ice
import aiortc.rtcrtpsender as _sender_mod
from aiortc import RTCRtpSender

_origins: weakref.WeakKeyDictionary[RTCRtpSender, int] = weakref.WeakKeyDictionary()
_installed = False
_ice_addresses: list[str] | None = None
_default_host_addresses = aioice.ice.get_host_addresses


def _random32() -> int:
    return struct.unpack("!L", os.urandom(4))[0]


def _origin_aware_random32() -> int:
    """Return the chosen origin when called from a sender's `_run_rtp`, else a random value."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    coro = task.get_coro() if task is not None else None
    if getattr(coro, "__qualname__", "") == "RTCRtpSender._run_rtp":
        frame = getattr(coro, "cr_frame", None)
        sender = frame.f_locals.get("self") if frame is not None else None
        if isinstance(sender, RTCRtpSender) and sender in _origins:
            return _origins[sender]
    return _random32()


def install() -> None:
    """Hook aiortc once per process (idempotent)."""
    global _installed
    if not _installed:
        _sender_mod.random32 = _origin_aware_random32
        aioice.ice.get_host_addresses = _host_addresses
        _installed = True


def assign_origin(sender: RTCRtpSender) -> int:
    """Pick the RTP timestamp origin this sender will use; returns it (the answer's rtp_base)."""
    install()
    origin = _random32()
    _origins[sender] = origin
    return origin


def use_ice_addresses(addresses: list[str] | None) -> None:
    """Restrict ICE host candidates to these addresses (None: every interface).

    aioice leaves out 127.0.0.1; a server bound to loopback must offer it, and tests must never
    send media to any other address.
    """
    global _ice_addresses
    install()
    _ice_addresses = list(addresses) if addresses else None


def _host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
    if _ice_addresses is None:
        return _default_host_addresses(use_ipv4, use_ipv6)
    return [a for a in _ice_addresses if (":" in a and use_ipv6) or (":" not in a and use_ipv4)]


def strip_mdns_candidates(sdp: str) -> str:
    """Drop `.local` (mDNS) ICE candidates: resolving them costs aioice a 1 s stall."""
    lines = sdp.splitlines()
    kept = [ln for ln in lines if not (ln.startswith("a=candidate") and ".local" in ln)]
    return "\r\n".join(kept) + "\r\n"
