"""pipecat's in-process Piper path, timed the way `bench latency` times Allnighter's.

Run by the Python of a virtual environment of its own, where pipecat-ai[piper] is installed
(scripts/setup-pipecat.sh); Allnighter never imports it. It reads {"voice_dir", "voice",
"lines", "sample_rate"} as JSON on standard input, speaks each line with pipecat's
PiperTTSService (the same Piper voice, loaded from `voice_dir`, nothing downloaded) through a
pipeline that notes when audio reaches its end, and writes one JSON object a line: {"text",
"first_frame_ms": text in → its first audio frame out, "lead_in_ms": the silence that frame
opens with (Piper's), "first_voiced_ms": the two added, when its first voiced sample would be
heard, "viewer_ms": text in → the first voiced audio a WebRTC viewer decoded}.

The viewer: the pipeline ends in pipecat's own WebRTC transport (SmallWebRTCTransport), and an
aiortc peer in this process and loop receives it, as Allnighter's bench viewer receives its
broadcast (aiortc, in the bench's process); null where pipecat-ai[webrtc] is not installed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import numpy as np
from pipecat.frames.frames import EndFrame, TTSAudioRawFrame, TTSSpeakFrame, TTSStoppedFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.runner import PipelineRunner
from pipecat.pipeline.task import PipelineParams, PipelineTask
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.piper.tts import PiperTTSService

VOICED_PEAK = 100  # int16: the peak above which Allnighter's broadcast counts a frame as voiced


class FirstAudio(FrameProcessor):
    """Notes when the first audio frame of each spoken line arrives, and its lead-in."""

    def __init__(self) -> None:
        super().__init__()
        self.asked_at = 0.0
        self.first_at: float | None = None
        self.audio: list[np.ndarray] = []
        self.done = asyncio.Event()

    def ask(self) -> None:
        self.asked_at, self.first_at, self.audio = time.perf_counter(), None, []
        self.done.clear()

    async def process_frame(self, frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSAudioRawFrame):
            if self.first_at is None:
                self.first_at = time.perf_counter()
            self.audio.append(np.frombuffer(frame.audio, dtype=np.int16))
        elif isinstance(frame, TTSStoppedFrame):
            self.done.set()
        await self.push_frame(frame, direction)


class Viewer:
    """An aiortc peer watching pipecat's WebRTC transport: when (perf_counter) it decoded each
    frame of voiced audio."""

    def __init__(self) -> None:
        from aiortc import RTCPeerConnection

        self.pc = RTCPeerConnection()
        self.pc.addTransceiver("audio", direction="recvonly")
        self.voiced: list[float] = []
        self.listening: asyncio.Task | None = None
        self.pc.on("track", self._track)

    def _track(self, track) -> None:
        if track.kind == "audio":
            self.listening = asyncio.ensure_future(self._listen(track))

    async def _listen(self, track) -> None:
        while True:
            frame = await track.recv()
            if np.abs(frame.to_ndarray().astype(np.int32)).max(initial=0) > VOICED_PEAK:
                self.voiced.append(time.perf_counter())

    async def join(self, connection) -> None:
        """Offer to pipecat's `connection`, as a browser client of its transport does."""
        from aiortc import RTCSessionDescription

        await self.pc.setLocalDescription(await self.pc.createOffer())
        await connection.initialize(sdp=self.pc.localDescription.sdp, type="offer")
        answer = connection.get_answer()
        await self.pc.setRemoteDescription(RTCSessionDescription(answer["sdp"], answer["type"]))

    def heard_after(self, t: float) -> float | None:
        return next((v for v in self.voiced if v >= t), None)

    async def close(self) -> None:
        if self.listening:
            self.listening.cancel()
        await self.pc.close()


def webrtc_output(rate: int):
    """pipecat's WebRTC transport and its connection, or (None, None) without pipecat-ai[webrtc]."""
    try:
        from pipecat.transports.base_transport import TransportParams
        from pipecat.transports.smallwebrtc.connection import SmallWebRTCConnection
        from pipecat.transports.smallwebrtc.transport import SmallWebRTCTransport
    except Exception:
        return None, None
    connection = SmallWebRTCConnection()
    params = TransportParams(audio_out_enabled=True, audio_out_sample_rate=rate)
    return SmallWebRTCTransport(webrtc_connection=connection, params=params), connection


async def speak_all(job: dict) -> list[dict]:
    rate = int(job["sample_rate"])
    tts = PiperTTSService(
        settings=PiperTTSService.Settings(voice=job["voice"]), download_dir=Path(job["voice_dir"])
    )
    sink = FirstAudio()
    transport, connection = webrtc_output(rate)
    stages = [tts, sink] if transport is None else [tts, sink, transport.output()]
    task = PipelineTask(Pipeline(stages), params=PipelineParams(audio_out_sample_rate=rate))
    runner = asyncio.create_task(PipelineRunner(handle_sigint=False).run(task))
    await asyncio.sleep(1.0)  # the pipeline starts
    viewer = None
    if connection is not None:
        viewer = Viewer()
        await viewer.join(connection)  # the viewer arrives once the pipeline is up
        await asyncio.sleep(2.0)  # connected, the transport's silence flowing
    results = []
    for text in ["Hello.", *job["lines"]]:  # a first line warms the voice, as Allnighter's is
        sink.ask()
        await task.queue_frame(TTSSpeakFrame(text))
        await asyncio.wait_for(sink.done.wait(), 60)
        audio = np.concatenate(sink.audio) if sink.audio else np.zeros(0, np.int16)
        voiced = np.flatnonzero(np.abs(audio.astype(np.int32)) > VOICED_PEAK)
        if sink.first_at is None:
            raise RuntimeError(f"pipecat sent no audio for {text!r}")
        first = (sink.first_at - sink.asked_at) * 1000
        lead = (voiced[0] if len(voiced) else 0) * 1000 / rate
        timed = {"first_frame_ms": first, "lead_in_ms": lead, "first_voiced_ms": first + lead}
        # the line plays out in real time: its end, and a pause, before the next is asked
        await asyncio.sleep(len(audio) / rate + 0.3)
        heard = viewer.heard_after(sink.asked_at) if viewer else None
        timed["viewer_ms"] = None if heard is None else (heard - sink.asked_at) * 1000
        results.append({"text": text, **timed})
    if viewer:
        await viewer.close()
    await task.queue_frame(EndFrame())
    await runner
    return results[1:]


def main() -> None:
    for result in asyncio.run(speak_all(json.load(sys.stdin))):
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
