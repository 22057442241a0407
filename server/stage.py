"""The stage: utterances become phrases, phrases become speech on the broadcast clock.

Flow (one direction): utterance → tokens (LLM or the verbatim words) → PhraseWindow → bounded
TTS buffer → Piper → resample to 48 kHz → scheduled on the SpeechTimeline at the broadcast's
write head → visemes and phrase events sent ahead of playout. Interrupts and buffer levels are
the only signals that flow back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from typing import Any, NamedTuple

from models.protocols import LLM, TTS, SpeechChunk, VoiceStyle
from timesync.fused import FusedClock

from . import opening, phrases
from .broadcast import Broadcast, EmittedFrame
from .config import Config, RoleConfig
from .feedback import SpeechFeedback
from .inference import ModelThread, stream_tokens
from .mediaclock import MediaClock
from .metrics import Metrics
from .onsets import QUIET_MS, open_on_sound, sound_onsets
from .phrasetap import PhraseTap
from .resample import resample_int16
from .speech import SpeechFirst, trim_lead_in
from .tasks import cancel_and_wait, supervised
from .timeline import Segment, SpeechTimeline
from .utterances import FINAL_STATES, Utterance, UtteranceQueue, UtteranceState, ViewerOnset
from .visemes import visemes_from_alignment

log = logging.getLogger(__name__)

Emit = Callable[[str, dict], Awaitable[None]]
# Token/audio alignment: a token may take at most N audio frame steps of 10 ms to decode.
TOKEN_ALIGNMENT_FRAMES = 3
AUDIO_FRAME_STEP_S = 0.010


class Placed(NamedTuple):
    """A chunk placed on the broadcast clock: its first sample, its length, the chunk itself
    (its lead-in trimmed where it opens the utterance), and its ASR check, where it has one."""

    start: int
    samples: int
    chunk: Any
    check: Any


class Stage:
    """Runs utterances one after another onto the broadcast."""

    def __init__(
        self,
        cfg: Config,
        clock: MediaClock,
        timeline: SpeechTimeline,
        broadcast: Broadcast,
        metrics: Metrics,
        emit: Emit,
        llm: LLM,
        tts: TTS,
        feedback: SpeechFeedback | None = None,
        fused: FusedClock | None = None,
    ) -> None:
        self.cfg = cfg
        self.clock = clock
        # the fused clock every timestamp that leaves the process is stamped on
        self.fused = fused if fused is not None else FusedClock()
        self.timeline = timeline
        self.broadcast = broadcast
        self.metrics = metrics
        self.emit = emit
        self.llm = llm
        self.tts = tts
        self.feedback = feedback
        self.queue = UtteranceQueue(cfg.stage.queue_size)
        self.history: deque[Utterance] = deque(maxlen=cfg.stage.history)
        self.current: Utterance | None = None
        self._current_task: asyncio.Task | None = None
        self._playing: dict[str, Utterance] = {}  # fully scheduled, still being broadcast
        # phrase and viseme events of speech not yet played: replayed to viewers who join
        self._announced: deque[tuple[int, str, dict, dict]] = deque()
        self._speech_first = SpeechFirst()
        # Synthesis runs seconds ahead of the broadcast; the loop that paces audio and events
        # out does not. On a busy machine it waited 20-120 ms for a core behind Piper, and an
        # interrupt reached the viewers that late: the TTS thread yields to it.
        self._tts_thread = ModelThread("tts", nice=10, deadline_s=cfg.models.tts_deadline_s)
        # the ASR feedback hears each phrase as the broadcast sent it
        self._tap = PhraseTap(feedback.check) if feedback is not None else None
        self._worker: asyncio.Task | None = None
        broadcast.observe(self._on_frame)

    # ---- input -------------------------------------------------------------------------
    def submit(self, text: str, role: RoleConfig, mode: str) -> Utterance:
        """Accept an utterance or raise QueueFull; accepted ones are never dropped silently."""
        utt = Utterance(text=text, role=role.name, mode=mode)
        self.queue.put(utt)
        self.metrics.queue_depth.set(len(self.queue))
        self.history.append(utt)
        return utt

    async def interrupt(self, role: str | None) -> int:
        """Stop speech of `role` (all when None) at the write head; returns that sample."""
        at = self.broadcast.write_head
        self.timeline.cut(at, role)
        self._forget_after(at, role)
        stopped: list[str] = []
        for utt in self.queue.remove_role(role):
            self._finish(utt, UtteranceState.INTERRUPTED)
            stopped.append(utt.id)
        for utt in list(self._playing.values()):
            if role is None or utt.role == role:
                self._playing.pop(utt.id, None)
                self._finish(utt, UtteranceState.INTERRUPTED)
                stopped.append(utt.id)
        cur = self.current
        stopping = None
        if cur is not None and (role is None or cur.role == role) and self._current_task:
            stopping = self._current_task
            stopping.cancel()  # before any await: it can schedule nothing more after `at`
            stopped.append(cur.id)
        # then the viewers, before waiting for the speaker to wind down: their pages silence
        # what they have buffered as soon as they know. A phrase event of a stopped utterance
        # may still be on its way out; the ids let the pages drop it.
        if self._tap is not None:
            self._tap.forget(stopped)
        payload: dict[str, Any] = {"at_sample": at, "utterances": stopped}
        if role is not None:
            payload["role"] = role
        await self.emit("interrupt", payload)
        if stopping is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await stopping
        self.metrics.queue_depth.set(len(self.queue))
        return at

    # ---- the worker ----------------------------------------------------------------------
    def start(self) -> None:
        restarted = self.metrics.task_restarts.labels("stage").inc
        self._worker = asyncio.get_running_loop().create_task(
            supervised("stage", self._run, restarted), name="stage"
        )

    @property
    def working(self) -> bool:
        """The worker that takes utterances off the queue is running."""
        return self._worker is not None and not self._worker.done()

    async def stop(self) -> None:
        await cancel_and_wait(self._worker)
        self._tts_thread.shutdown()

    async def _run(self) -> None:
        while True:
            utt = await self.queue.get()
            self.metrics.queue_depth.set(len(self.queue))
            self.current = utt
            utt.state = UtteranceState.SPEAKING
            self._current_task = asyncio.get_running_loop().create_task(
                self._perform(utt), name=f"utterance-{utt.id}"
            )
            try:
                await self._current_task
            except asyncio.CancelledError:
                if utt.state not in FINAL_STATES:
                    self._finish(utt, UtteranceState.INTERRUPTED)
                if self._worker is not None and self._worker.cancelling():
                    raise
            except Exception as exc:
                log.exception("utterance %s failed", utt.id)
                utt.error = f"{type(exc).__name__}: {exc}"
                self._finish(utt, UtteranceState.FAILED)
            finally:
                self.current = None
                self._current_task = None
            # a stop that reached the utterance as it ended (and so did not end it) is a stop
            if self._worker is not None and self._worker.cancelling():
                raise asyncio.CancelledError

    async def _perform(self, utt: Utterance) -> None:
        role = self.cfg.role(utt.role) or self.cfg.roles[0]
        buffer: asyncio.Queue[str | None] = asyncio.Queue(self.cfg.stage.tts_buffer_phrases)
        writer = asyncio.get_running_loop().create_task(self._write_phrases(utt, buffer))
        try:
            await self._speak_phrases(utt, role, buffer)
            await writer
        finally:
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            self._speech_first.speech_idle()
        if utt.end_sample is None:  # nothing was spoken (an empty LLM reply)
            utt.error = "nothing to speak"
            self._finish(utt, UtteranceState.FAILED)
        elif utt.end_sample <= self.broadcast.write_head:
            self._finish(utt, UtteranceState.DONE)
        else:
            self._playing[utt.id] = utt

    async def _write_phrases(self, utt: Utterance, buffer: asyncio.Queue[str | None]) -> None:
        """Tokens → phrases, cut by the window the TTS buffer level steers."""
        st = self.cfg.stage
        window = phrases.PhraseWindow(st.window_tokens, st.window_min, st.window_max)
        async with contextlib.aclosing(self._tokens(utt)) as tokens:
            async for text in tokens:
                phrase = window.push(text) if text else None
                if phrase:
                    if utt.first_phrase_tokens is None:
                        utt.first_phrase_tokens = utt.tokens
                    self._speech_first.phrase_pending()
                self._speech_first.token_seen()
                if phrase:
                    await buffer.put(phrase)
                    window.resize(buffer.qsize() / buffer.maxsize)
        rest = window.flush()
        if rest:
            await buffer.put(rest)
        await buffer.put(None)

    async def _tokens(self, utt: Utterance) -> AsyncGenerator[str, None]:
        """The utterance's text as tokens: verbatim words, or the LLM's reply as it comes."""
        if utt.mode == "verbatim":
            for word in phrases.word_tokens(utt.text):
                yield word
            return
        role = self.cfg.role(utt.role) or self.cfg.roles[0]
        messages = self.llm.chat_messages(role.persona, utt.text)
        cancel = threading.Event()
        started = time.perf_counter()
        mc = self.cfg.models
        stream = stream_tokens(
            self.llm,
            messages,
            cancel,
            between_tokens=self._speech_first.between_tokens,
            deadline_s=mc.llm_token_deadline_s,
            max_new_tokens=mc.max_new_tokens,
            temperature=mc.temperature,
        )
        directions = phrases.StageDirections()
        self._speech_first.start_generation()
        self._speech_first.llm_running = True
        try:
            async with contextlib.aclosing(stream) as pieces:
                async for piece in pieces:
                    if piece.index == 0:
                        self.metrics.llm_ttft.observe(piece.decoded_at - started)
                    if piece.decode_s is not None:
                        # Δt ≤ N·Δa: text must keep pace with the audio it becomes (pauses
                        # the speech-first gate makes between tokens are not decoding)
                        self.metrics.token_interval.observe(piece.decode_s)
                        utt.token_checks += 1
                        if piece.decode_s > TOKEN_ALIGNMENT_FRAMES * AUDIO_FRAME_STEP_S:
                            self.metrics.token_alignment_violations.inc()
                            utt.token_violations += 1
                    utt.tokens += 1
                    # decoded_at is on perf_counter: carry it over to the monotonic clock
                    mono = time.monotonic() - (time.perf_counter() - piece.decoded_at)
                    utt.last_token_ms = self.fused_ms(mono)
                    if utt.first_token_ms is None:
                        utt.first_token_ms = utt.last_token_ms
                    yield directions.feed(piece.text)  # "" too: the gate counts every token
        finally:
            self._speech_first.llm_running = False

    async def _speak_phrases(
        self, utt: Utterance, role: RoleConfig, buffer: asyncio.Queue[str | None]
    ) -> None:

        style = VoiceStyle(
            length_scale=role.length_scale,
            noise_scale=role.noise_scale,
            noise_w_scale=role.noise_w_scale,
            volume=role.volume,
        )

        def synthesize(text: str, urgent: bool) -> AsyncGenerator[SpeechChunk, None]:
            return self._tts_thread.iterate(self._speak_alone, text, style, urgent)

        while (phrase := await buffer.get()) is not None:
            started = time.perf_counter()
            first = True
            # the utterance's first phrase opens with its first words on their own (opening.py)
            opens = self.cfg.stage.opening and utt.end_sample is None
            if utt.synthesis_at is None:
                utt.synthesis_at = time.monotonic()
            stream = opening.spoken(phrase, synthesize, opens)
            held: Placed | None = (
                None  # the opening: the ASR checks it with its rest, as the viewer hears it
            )
            async with contextlib.aclosing(stream) as chunks:
                async for text, chunk, part in chunks:
                    if first:
                        self.metrics.tts_ttfa.observe(time.perf_counter() - started)
                        first = False
                    if utt.first_chunk_at is None:
                        utt.first_chunk_at = time.monotonic()
                    after = held if part == opening.REST else None
                    placed = await self._schedule(utt, role, text, chunk, after)
                    held = placed if part == opening.OPENING else None
            utt.phrases.append(phrase)
            if buffer.empty():
                self._speech_first.speech_idle()

    def _expect_check(
        self, utt: Utterance, text: str, start: int, pcm: Any, chunk: Any, after: Placed | None
    ) -> Any:
        """Have the ASR feedback check a chunk as the broadcast sends it; the rest of an
        opening's sentence with its opening (`after`), as one phrase where they meet: alone, a
        clip of two or three words, or one starting mid-word, was misheard more often."""
        if self._tap is None:
            return None
        if after is not None and after.check is not None:
            both = opening.joined(after.chunk, chunk)
            if self._tap.extend(after.check, start, len(pcm), both.text, both):
                return after.check
        return self._tap.expect(utt.id, text, start, len(pcm), chunk)

    async def _schedule(
        self, utt: Utterance, role: RoleConfig, phrase: str, chunk: Any, after: Placed | None
    ) -> Placed:
        """Place one speech chunk on the broadcast clock and announce it to the viewers; the
        ASR feedback checks it, with the opening it goes on from (`after`), if any."""
        if utt.end_sample is None:
            # the utterance's first audio: start at the voice, not at Piper's lead-in silence
            chunk = trim_lead_in(chunk)
        pcm = resample_int16(chunk.audio, chunk.sample_rate, self.clock.sample_rate)
        max_ahead = self.clock.samples(self.cfg.stage.max_ahead_s)
        # bounded look-ahead: do not run further ahead of the broadcast than max_ahead
        while self.timeline.end_of(role.name) - self.broadcast.write_head > max_ahead:
            await asyncio.sleep(0.05)
        start = max(self.broadcast.write_head, self.timeline.end_of(role.name))
        # the ASR feedback's correction: where the sound was heard against Piper's alignments
        shift = self.feedback.correction_samples(self.clock.sample_rate) if self.feedback else 0
        track = visemes_from_alignment(
            chunk.phonemes, start + shift, chunk.sample_rate, self.clock.sample_rate
        )
        # the speech it goes on from, when it follows some directly (an opening's rest)
        quiet = self.clock.samples(QUIET_MS / 1000)
        before = self.timeline.read(start - quiet, quiet)[0] if start >= quiet else None
        onsets = [start + o for o in sound_onsets(pcm, self.clock.sample_rate, before=before)]
        frames = open_on_sound(track.frames, [o + shift for o in onsets], self.clock.sample_rate)
        if track.unknown:
            self.metrics.unknown_phonemes.inc(sum(track.unknown.values()))
        if utt.cross_modal.audio_ms is None:
            voiced = next((f.sample for f in frames if f.viseme != "sil"), None)
            if voiced is not None:
                self._audio_placed(utt, voiced)
        # expected before it is placed: the broadcast may send its first frame at once
        check = self._expect_check(utt, phrase, start, pcm, chunk, after)
        self.timeline.schedule(Segment(start, pcm, role.name, utt.id))
        if start == self.broadcast.write_head:
            self.broadcast.kick()
        end = start + len(pcm)
        utt.end_sample = end
        phrase_event = {
            "id": utt.id,
            "role": role.name,
            "text": phrase,
            "start_sample": start,
            "end_sample": end,
        }
        viseme_event = {
            "utterance_id": utt.id,
            "role": role.name,
            "sample_rate": self.clock.sample_rate,
            "frames": [f.to_json() for f in frames],
            "onsets": onsets,
        }
        self._announced.append((end, role.name, phrase_event, viseme_event))
        await self.emit("utterance", self._stamped(phrase_event))
        await self.emit("visemes", self._stamped(viseme_event))
        return Placed(start, len(pcm), chunk, check)

    def _speak_alone(
        self, text: str, style: VoiceStyle | None, urgent: bool = False
    ) -> Iterator[SpeechChunk]:
        """On the TTS thread: start Piper once the LLM has stepped aside."""
        self._speech_first.before_synthesis()
        return self.tts.speak(text, style, urgent=urgent)

    # ---- observing the broadcast -----------------------------------------------------------
    def _on_frame(self, frame: EmittedFrame) -> None:
        if self._tap is not None:
            self._tap.frame(frame.start, frame.pcm)
        if frame.voiced:
            for utt_id in frame.utterances:
                utt = self._find(utt_id)
                if utt is not None and utt.first_audio_at is None:
                    utt.first_audio_at = frame.left_at
                    utt.first_audio_sample = frame.start
                    self.metrics.text_to_first_audio.labels(utt.mode).observe(
                        frame.left_at - utt.accepted_at
                    )
        end = frame.start + frame.samples
        for utt in list(self._playing.values()):
            if utt.end_sample is not None and utt.end_sample <= end:
                self._playing.pop(utt.id, None)
                self._finish(utt, UtteranceState.DONE)
        self._forget_played(end)

    def _forget_played(self, head: int) -> None:
        """Announced events of speech the broadcast has passed are no use to a viewer who
        joins: dropped as it passes them (kept until someone joined, they grew by some 8 KB a
        phrase all night)."""
        while self._announced and self._announced[0][0] <= head:
            self._announced.popleft()

    def upcoming(self) -> list[tuple[str, dict]]:
        """Events of speech still to be played, for a viewer who joins now."""
        self._forget_played(self.broadcast.write_head)
        events: list[tuple[str, dict]] = []
        for _, _, phrase_event, viseme_event in self._announced:
            events += [
                ("utterance", self._stamped(phrase_event)),
                ("visemes", self._stamped(viseme_event)),
            ]
        return events

    # ---- the cross-modal offsets: text vs audio vs picture -------------------------------
    def _audio_placed(self, utt: Utterance, sample: int) -> None:
        """`utt`'s first voiced viseme is placed at `sample`: its audio against its text."""
        cm = utt.cross_modal
        cm.audio_ms = self.sample_ms(sample)
        # a verbatim line is text from the moment it is accepted
        cm.text_ms = utt.first_token_ms if utt.mode == "chat" else self.fused_ms(utt.accepted_at)
        if cm.text_ms is not None:
            self.metrics.cross_modal.labels("audio_minus_text").observe(cm.audio_ms - cm.text_ms)

    def viewer_onset(self, sid: str, onset: dict) -> None:
        """A viewer drew an utterance's first voiced viseme: its page's `utterance_onsets`
        record {id, sample, heard_ms, drawn_ms} (fused ms), as Signals has checked it."""
        utt = self._recorded(onset["id"])
        if utt is None:
            return  # an utterance long forgotten, or an id the page made up
        seen = ViewerOnset(self.sample_ms(onset["sample"]), onset["heard_ms"], onset["drawn_ms"])
        if utt.cross_modal.add_viewer(sid, seen):
            offsets = self.metrics.cross_modal
            offsets.labels("heard_minus_audio").observe(seen.heard_ms - seen.audio_ms)
            offsets.labels("picture_minus_heard").observe(seen.picture_ms - seen.heard_ms)

    def _recorded(self, utt_id: str) -> Utterance | None:
        """An utterance still remembered: speaking, playing, or in the history."""
        found = self._find(utt_id)
        return found or next((u for u in reversed(self.history) if u.id == utt_id), None)

    # ---- stamping on the fused clock ----------------------------------------------------
    def fused_ms(self, mono: float) -> float:
        """Fused time (ms since the Unix epoch) of monotonic time `mono`, read now."""
        return round(self.fused.at(mono) * 1000, 3)

    def sample_ms(self, sample: int) -> float:
        """Fused time (ms) at which broadcast `sample` is due."""
        return self.fused_ms(self.clock.time_of(sample))

    def _stamped(self, event: dict) -> dict:
        """A phrase or viseme event with `start_ms`: the fused time of its first sample, read
        as it leaves (the fused clock slews, so a replayed event is stamped afresh)."""
        if "frames" in event:
            frames = event["frames"]
            if not frames:
                return event
            first = frames[0]["sample"]
        else:
            first = event["start_sample"]
        return {**event, "start_ms": self.sample_ms(first)}

    def _forget_after(self, at: int, role: str | None) -> None:
        """Trim announced events at an interrupt, as the viewers do on `interrupt`."""
        kept: deque[tuple[int, str, dict, dict]] = deque()
        for end, who, phrase_event, viseme_event in self._announced:
            if role is not None and who != role or end <= at:
                kept.append((end, who, phrase_event, viseme_event))
            elif phrase_event["start_sample"] < at:
                frames = [f for f in viseme_event["frames"] if f["sample"] < at]
                onsets = [o for o in viseme_event["onsets"] if o < at]
                cut = {**viseme_event, "frames": frames, "onsets": onsets}
                kept.append((at, who, {**phrase_event, "end_sample": at}, cut))
        self._announced = kept

    def _find(self, utt_id: str) -> Utterance | None:
        if self.current is not None and self.current.id == utt_id:
            return self.current
        return self._playing.get(utt_id)

    def _finish(self, utt: Utterance, state: UtteranceState) -> None:
        if utt.state in FINAL_STATES:
            return
        utt.state = state
        self.metrics.utterances.labels(str(state)).inc()

    def snapshot(self) -> dict:
        return {
            "queue": [u.to_json() for u in self.queue.waiting()],
            "current": self.current.to_json() if self.current else None,
            "recent": [u.to_json() for u in list(self.history)[-20:]],
        }
