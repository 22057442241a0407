"""The one place the server reaches into aiortc: the RTP timestamp origin of each viewer's
sender, chosen when the offer is answered so the answer can tell the page how RTP maps to
broadcast samples (server/transport/rtp.py). aiortc has no public seam for it; if an upgrade
moves where the origin is drawn, these fail by name instead of every viewer's clock drifting."""

from __future__ import annotations

import asyncio
import inspect

import aiortc.rtcrtpsender as sender_module
from aiortc import RTCPeerConnection

from server.transport import rtp


def test_aiortc_still_draws_the_origin_where_the_hook_answers():
    source = inspect.getsource(sender_module.RTCRtpSender._run_rtp)
    assert "random32()" in source, "aiortc no longer draws the RTP origin in _run_rtp"
    rtp.install()
    assert sender_module.random32 is rtp._origin_aware_random32


def test_a_sender_starts_at_the_origin_it_was_given():
    """What _run_rtp draws, called as aiortc calls it: the origin chosen at the answer."""

    async def run() -> tuple[int, int]:
        pc = RTCPeerConnection()
        try:
            sender = pc.addTransceiver("audio", direction="sendonly").sender
            chosen = rtp.assign_origin(sender)

            async def _run_rtp(self: object) -> int:  # the name aiortc's task runs under
                return sender_module.random32()

            _run_rtp.__qualname__ = "RTCRtpSender._run_rtp"
            drawn = await asyncio.get_running_loop().create_task(_run_rtp(sender))
            return chosen, drawn
        finally:
            await pc.close()

    chosen, drawn = asyncio.run(run())
    assert drawn == chosen
