"""The broadcast: 20 ms frames read from the speech timeline, Opus-encoded once, fanned out.

One producer paces frames on the media clock. Each frame is encoded a single time and the
same packet goes to every listener, so every viewer hears the same sample at the same RTP
timestamp (RTP = the viewer's origin + the packet's pts) and the encoder costs nothing per viewer.
Silence between utterances keeps the clock running.
"""

from __future__ import annotations

import asyncio
import fractions
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import av
import numpy as np

from ..tasks import cancel_and_wait, supervised
from .mediaclock import SAMPLE_RATE, MediaClock
from .timeline import SpeechTimeline

log = logging.getLogger(__name__)

TIME_BASE = fractions.Fraction(1, SAMPLE_RATE)
# A viewer that falls this many packets behind (a stalled socket) loses the oldest ones.
LISTENER_QUEUE_PACKETS = 10
# Peak level below which a frame counts as silence (−50 dBFS): resampler ringing and dither
# before an onset are not "audio" to a listener.
VOICED_PEAK = 100
# After a stall the producer catches up at most this many frames in one go, then skips ahead.
MAX_CATCH_UP_FRAMES = 50


@dataclass(frozen=True)
class EmittedFrame:
    """What one broadcast frame carried; given to observers after it left."""

    start: int  # first broadcast sample of the frame
    samples: int
    voiced: bool
    utterances: frozenset[str]
    left_at: float  # monotonic time the packet was handed to listeners
    pcm: np.ndarray  # the samples it carried (observers must not change them)


def is_voiced(pcm: np.ndarray) -> bool:
    return bool(len(pcm)) and int(np.abs(pcm.astype(np.int32)).max()) > VOICED_PEAK


class Listener:
    """A bounded packet queue for one viewer; drops the oldest packets when full."""

    def __init__(self, maxlen: int = LISTENER_QUEUE_PACKETS) -> None:
        self._queue: asyncio.Queue[av.Packet] = asyncio.Queue(maxlen)
        self.dropped = 0

    def put(self, packet: av.Packet) -> None:
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
        self._queue.put_nowait(packet)

    async def get(self) -> av.Packet:
        return await self._queue.get()


class OpusEncoder:
    """libopus via PyAV. Packet pts are broadcast samples (shifted back by the codec delay by
    libavcodec, so decoded audio at a pts is the content that was at that sample)."""

    def __init__(self, sample_rate: int, bitrate: int = 48_000) -> None:
        self._codec = av.CodecContext.create("libopus", "w")
        self._codec.sample_rate = sample_rate
        self._codec.layout = "mono"
        self._codec.format = "s16"
        self._codec.bit_rate = bitrate
        self._codec.time_base = TIME_BASE
        self._codec.options = {"application": "audio"}

    def encode(self, pcm: np.ndarray, pts: int) -> list[av.Packet]:
        frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = self._codec.sample_rate
        frame.pts = pts
        frame.time_base = TIME_BASE
        packets = self._codec.encode(frame)
        for p in packets:
            p.time_base = TIME_BASE
        return packets


class Broadcast:
    """Produces the broadcast audio once, on the media clock, for every listener."""

    def __init__(self, clock: MediaClock, timeline: SpeechTimeline) -> None:
        self.clock = clock
        self.timeline = timeline
        self.next_frame = 0
        self.frames_sent = 0
        self.frames_late = 0
        self.frames_skipped = 0
        self._listeners: set[Listener] = set()
        # replaced whole, never changed in place: a test's thread may (un)observe while the
        # loop walks it
        self._observers: tuple[Callable[[EmittedFrame], None], ...] = ()
        self._encoder = OpusEncoder(clock.sample_rate)
        self._kick = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.last_frame_at: float | None = None  # when the latest frame left (monotonic)

    @property
    def write_head(self) -> int:
        """First broadcast sample not yet sent: the earliest place new speech can go."""
        return self.clock.frame_start(self.next_frame)

    def listen(self) -> Listener:
        listener = Listener()
        self._listeners.add(listener)
        return listener

    def unlisten(self, listener: Listener) -> None:
        self._listeners.discard(listener)

    @property
    def listening(self) -> int:
        """Listeners the frames are queued for: the viewers' tracks that have started."""
        return len(self._listeners)

    def observe(self, callback: Callable[[EmittedFrame], None]) -> None:
        self._observers = (*self._observers, callback)

    def unobserve(self, callback: Callable[[EmittedFrame], None]) -> None:
        self._observers = tuple(o for o in self._observers if o is not callback)

    def kick(self) -> None:
        """New speech at the write head: send its first frame now instead of at its slot.

        Sending one frame up to 20 ms early costs nothing (the viewer's jitter buffer holds it)
        and saves the average 10 ms wait for the next slot on every utterance's first audio.
        """
        self._kick.set()

    def start(self, restarted: Callable[[], None] = lambda: None) -> None:
        self._task = asyncio.get_running_loop().create_task(
            supervised("broadcast", self._run, restarted), name="broadcast"
        )

    def on_air(self, now: float, within_s: float = 1.0) -> bool:
        """Frames are going out: the last left within `within_s` of `now` (monotonic)."""
        return self.last_frame_at is not None and now - self.last_frame_at <= within_s

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    async def _run(self) -> None:
        frame_s = self.clock.frame_samples / self.clock.sample_rate
        while True:
            due = self.clock.time_of(self.write_head)
            wait = due - time.monotonic()
            if wait > 0:
                self._kick.clear()
                try:
                    await asyncio.wait_for(self._kick.wait(), wait)
                    # kicked: go early only by one frame at most, and only for speech
                    if self.clock.time_of(self.write_head) - time.monotonic() > frame_s:
                        continue
                    if not self._voiced_at(self.write_head):
                        continue
                except TimeoutError:
                    pass
            else:
                behind = int(-wait / frame_s)
                if behind > MAX_CATCH_UP_FRAMES:
                    # the loop stalled for over a second: jump to the live edge
                    self.frames_skipped += behind
                    self.next_frame += behind
                    log.warning("broadcast stalled; skipped %d frames", behind)
                elif behind >= 2:
                    self.frames_late += 1
                # Catching up, frame after frame: let the viewers' senders and everything else
                # on the loop run between them. Without this a late broadcast kept the loop to
                # itself until it was on time again, and the packets left in one burst.
                await asyncio.sleep(0)
            self._emit_next()

    def _voiced_at(self, start: int) -> bool:
        pcm, _ = self.timeline.read(start, self.clock.frame_samples)
        return is_voiced(pcm)

    def _emit_next(self) -> None:
        start = self.write_head
        pcm, heard = self.timeline.read(start, self.clock.frame_samples)
        packets = self._encoder.encode(pcm, start)
        self.next_frame += 1
        for packet in packets:
            for listener in self._listeners:
                listener.put(packet)
        self.frames_sent += 1
        self.last_frame_at = time.monotonic()
        self.timeline.drop_before(start)
        frame = EmittedFrame(
            start=start,
            samples=len(pcm),
            voiced=is_voiced(pcm),
            utterances=frozenset(heard),
            left_at=time.monotonic(),
            pcm=pcm,
        )
        for observe in self._observers:
            try:
                observe(frame)
            except Exception:  # an observer must never stop the broadcast
                log.exception("broadcast observer failed")
