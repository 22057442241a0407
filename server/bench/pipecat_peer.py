"""pipecat's in-process Piper path, timed the way `bench latency` times Allnighter's.

Run by the Python of a virtual environment of its own, where pipecat-ai[piper] is installed
(scripts/setup-pipecat.sh); Allnighter never imports it. It reads {"voice_dir", "voice",
"lines", "sample_rate"} as JSON on standard input, speaks each line with pipecat's
PiperTTSService (the same Piper voice, loaded from `voice_dir`, nothing downloaded) through a
pipeline whose last processor notes when audio reaches it, and writes one JSON object a line:
{"text", "first_frame_ms": text in → its first audio frame out, "lead_in_ms": the silence that
frame opens with (Piper's), "first_voiced_ms": the two added, when its first voiced sample would
be heard}.
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


async def speak_all(job: dict) -> list[dict]:
    rate = int(job["sample_rate"])
    tts = PiperTTSService(
        settings=PiperTTSService.Settings(voice=job["voice"]), download_dir=Path(job["voice_dir"])
    )
    sink = FirstAudio()
    task = PipelineTask(Pipeline([tts, sink]), params=PipelineParams(audio_out_sample_rate=rate))
    runner = asyncio.create_task(PipelineRunner(handle_sigint=False).run(task))
    await asyncio.sleep(1.0)  # the pipeline starts
    results = []
    for text in ["Hello.", *job["lines"]]:  # a first line warms the voice, as Allnighter's is
        sink.ask()
        await task.queue_frame(TTSSpeakFrame(text))
        await asyncio.wait_for(sink.done.wait(), 60)
        audio = np.concatenate(sink.audio) if sink.audio else np.zeros(0, np.int16)
        voiced = np.flatnonzero(np.abs(audio.astype(np.int32)) > VOICED_PEAK)
        first = (sink.first_at - sink.asked_at) * 1000
        lead = (voiced[0] if len(voiced) else 0) * 1000 / rate
        timed = {"first_frame_ms": first, "lead_in_ms": lead, "first_voiced_ms": first + lead}
        results.append({"text": text, **timed})
        await asyncio.sleep(0.3)
    await task.queue_frame(EndFrame())
    await runner
    return results[1:]


def main() -> None:
    for result in asyncio.run(speak_all(json.load(sys.stdin))):
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
