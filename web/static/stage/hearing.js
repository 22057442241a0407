// What the listener hears: the page's audio graph, and when what it renders is played.
//
// The page hears the stream LOOKAHEAD_MS before it plays it (onsetcalibration.js finds each
// speech onset there), and what the context renders leaves the speakers its output latency
// later (latency.js).

import { median } from "../common/median.js";
import { requireRate } from "./rate.js";

/**
 * How long the page holds the stream before playing it: time to find an onset (a frame, up to
 * 30-50 ms on a busy machine) and draw it (the mouth is drawn 15-25 ms ahead), with the clock's
 * own error at onsets (up to 40 ms) to spare. A livestream can afford a tenth of a second.
 */
export const LOOKAHEAD_MS = 100;

/**
 * The page's audio: a muted <audio> element keeps the WebRTC stream flowing into WebAudio,
 * where one context plays it and measures it. The meter sees the stream as it enters that
 * context, LOOKAHEAD_MS before a delay line lets it on to the output device, whose own
 * buffering (the context's output latency, read every frame: latency.js) comes before the
 * viewer hears it. `latencyHint` is the context's (`?latency=` sets it, to test a device as
 * slow as a Bluetooth headset). It is the context that plays: each context takes a stream
 * through its own buffer, and two on one stream were found up to 24 ms apart, by session, so
 * a meter elsewhere would time a sound the viewer does not hear then.
 */
export class Hearing {
  constructor(audioElement, { latencyHint = "interactive", sampleRate } = {}) {
    this.audio = audioElement;
    this.ctx = new AudioContext({ latencyHint });
    this.analyser = this.ctx.createAnalyser();
    this.analyser.fftSize = analyserSize(this.ctx, requireRate(sampleRate));
    this.buffer = new Float32Array(this.analyser.fftSize);
    this.readEnd = null; // when the newest sample read() gave was rendered (performance time)
    this.timestamps = new OutputTimestamps();
    this.sources = [];
    this.lookaheadMs = LOOKAHEAD_MS;
    this.delay = this.ctx.createDelay(1);
    this.delay.delayTime.value = LOOKAHEAD_MS / 1000;
    this.gain = this.ctx.createGain(); // what the viewer hears passes here: ducked on interrupt
    this.delay.connect(this.gain);
    this.gain.connect(this.ctx.destination);
    this.tap = this.ctx.createMediaStreamDestination(); // the same signal, for meters and tests
    this.gain.connect(this.tap);
    this.onchange = null; // called when the browser starts or stops letting audio play
    this.ctx.onstatechange = () => this.onchange?.();
    // another output device presents on a clock of its own: its timestamps start afresh (the
    // latency is read every frame, and the mouth moves to it smoothly: latency.js)
    navigator.mediaDevices?.addEventListener?.("devicechange", () => this.timestamps.reset());
  }

  attach(stream) {
    this.detach();
    this.audio.srcObject = stream;
    this.audio.muted = true; // heard through WebAudio, not twice
    this.audio.play().catch(() => {});
    const received = this.ctx.createMediaStreamSource(stream);
    received.connect(this.delay); // heard LOOKAHEAD_MS after the meter hears it
    received.connect(this.analyser);
    this.sources = [received];
    if (!this.running) this.resume().catch(() => {}); // allowed where autoplay is
  }

  detach() {
    for (const s of this.sources) s.disconnect();
    this.sources = [];
  }

  /**
   * Silence what is already buffered (WebRTC's jitter buffer holds 40–200 ms): after an
   * interrupt the viewer should not sit through speech the host has just stopped. `open()`
   * lets sound through again once the heard sample reaches the interrupt's.
   */
  duck() {
    this.gain.gain.setTargetAtTime(0, this.ctx.currentTime, 0.003);
  }

  open() {
    this.gain.gain.setTargetAtTime(1, this.ctx.currentTime, 0.003);
  }

  /**
   * Hold the stream `ms` before playing it, from the next render on (Lookahead). The output
   * jumps by the change: played again where the hold grows, skipped where it shrinks, so the
   * caller makes it only where `quietFor` says that stretch is silence.
   */
  setLookahead(ms) {
    this.lookaheadMs = ms;
    this.delay.delayTime.setValueAtTime(ms / 1000, this.ctx.currentTime);
  }

  /**
   * Whether the stream entering stayed at `quiet` or below from `fromMs` to `toMs` before the
   * newest sample the last read() gave (its buffer): what a change of the hold between those
   * two would play twice or skip. False where the buffer does not reach back so far.
   */
  quietFor(fromMs, toMs, quiet) {
    const b = this.buffer;
    const first = b.length - Math.ceil(toMs * this.perMs);
    if (first < 0) return false;
    for (let i = first; i < b.length - Math.floor(fromMs * this.perMs); i++) {
      if (Math.abs(b[i]) > quiet) return false;
    }
    return true;
  }

  /** Whether the browser lets audio play (it may wait for the viewer's first click). */
  get running() {
    return this.ctx.state === "running";
  }

  resume() {
    this.audio.play().catch(() => {});
    return this.ctx.resume();
  }

  /**
   * The latest samples entering the page (a reused buffer), or null while audio is not
   * playing; `latencyMs`: the output latency the context reports now (`reportedLatency`).
   */
  read(latencyMs) {
    if (!this.running) return null;
    const end = settledRead(this.ctx, () => this.analyser.getFloatTimeDomainData(this.buffer));
    if (end === null) return null; // mid-burst: the next frame's read will hold these samples
    const now = performance.now();
    const origin = this.timestamps.update(this.ctx, now);
    this.readEnd = renderedAt(this.ctx, end, now, latencyMs, origin);
    return this.buffer;
  }

  /** Samples per ms in the buffers `read()` gives. */
  get perMs() {
    return this.ctx.sampleRate / 1000;
  }

  /**
   * Where a meter can listen as the viewer does (API: `allnighter.heard()`): the context, the
   * stream as heard (after the look-ahead, before ducking), and what is played (after ducking).
   */
  nodes() {
    return { context: this.ctx, heard: this.sources.length ? this.delay : null, played: this.gain };
  }
}

/**
 * Copy an analyser's samples (`copy`) and say at what context time they end: null when the
 * audio thread would not hold still. It renders a burst (186 ms with a quarter-second latency
 * hint) a 128-sample quantum at a time and moves currentTime as it goes; read in the middle of
 * a burst, currentTime was found up to 17 ms of audio past the samples copied just before it
 * (the main thread was held between the two). An onset there was timed that much late, the
 * clock was anchored on it, and the whole line was drawn late: 3 lines in 150, by 11-17 ms. A
 * copy counts only where currentTime stood still across it (the next frame reads what one
 * that did not left: 22 reads in 32,000).
 */
export function settledRead(ctx, copy, tries = 3) {
  for (let i = 0; i < tries; i++) {
    const before = ctx.currentTime;
    copy();
    if (ctx.currentTime === before) return before;
  }
  return null;
}

/**
 * When (performance time) the context rendered its newest sample: where an analyser's data
 * ends, at context time `contextTime` (settledRead). The audio thread renders in bursts (here
 * every 9-30 ms; 186 ms with a latency hint of a quarter second), so a buffer read at
 * performance.now() ends up to a burst before then, by read; timed at the read, onsets came
 * out that much late, at random. The context's output timestamp maps context time to when it
 * is played (`origin`: when context time 0 is, as OutputTimestamps gives it, null before it
 * knows), and the newest sample is played the output latency (`latencyMs`, base and output)
 * after it is rendered. Falls back on the read's own time until the context plays.
 */
export function renderedAt(ctx, contextTime, now, latencyMs, origin) {
  if (origin === null || !Number.isFinite(contextTime)) return now;
  const at = origin + contextTime * 1000 - latencyMs;
  // a mapping that says the sample is from the future, or older than a burst and a frame or
  // two, is not believed
  return at <= now && at > now - 100 - 2 * burstMs(ctx) ? at : now;
}

/**
 * The context's output timestamp, smoothed: when (performance time) context time 0 is played,
 * the median of the last second's readings. One reading strays from the next by up to ±8 ms
 * where the context renders 50 ms at once: timed by each, a sample at a burst's edge was put
 * before the last read's end, and an onset there was missed; a page and a probe reading in
 * one frame timed one onset 5 ms apart.
 */
export class OutputTimestamps {
  constructor(windowMs = 1000) {
    this.windowMs = windowMs;
    this.readings = []; // {at, origin}
    this.lastStamp = null;
  }

  reset() {
    this.readings = [];
    this.lastStamp = null;
  }

  /** Take the context's newest output timestamp at page time `now`; null before the first. */
  update(ctx, now) {
    const ts = ctx.getOutputTimestamp?.();
    if (ts && ts.performanceTime > 0 && Number.isFinite(ts.contextTime)) {
      if (ts.performanceTime !== this.lastStamp) {
        this.lastStamp = ts.performanceTime; // one reading per timestamp, however often read
        this.readings.push({ at: now, origin: ts.performanceTime - ts.contextTime * 1000 });
      }
      while (this.readings.length > 1 && this.readings[0].at < now - this.windowMs) {
        this.readings.shift();
      }
    }
    return this.readings.length ? median(this.readings.map((r) => r.origin)) : null;
  }
}

const SLOWEST_FRAME_MS = 500; // the longest wait between two frames a read bridges

// how much the audio thread renders at once: its base latency, about
function burstMs(ctx) {
  return Number.isFinite(ctx.baseLatency) && ctx.baseLatency > 0 ? ctx.baseLatency * 1000 : 0;
}

/**
 * The analyser's length: longer than a render burst and a frame, so no sample falls between
 * two reads (at 20–33 fps a 21 ms window left gaps, and onsets in them were timed late). A
 * starved page (five on a busy core) draws a frame every 100-250 ms, some 500 ms apart: sized
 * for 12 fps (85 ms), its reads missed most line starts, and the onsets that would have
 * corrected its clock went unseen. So a frame down to 2 fps: the largest an analyser holds
 * at the broadcast's rate (683 ms). Only the samples new since the last read are scanned
 * (OnsetCalibration). `sampleRate`: the rate assumed of a context that does not say its own.
 */
export function analyserSize(ctx, sampleRate) {
  const needed = ((burstMs(ctx) + SLOWEST_FRAME_MS) * (ctx.sampleRate || sampleRate)) / 1000;
  let size = 4096;
  while (size < needed && size < 32768) size *= 2;
  return size;
}
