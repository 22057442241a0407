// What the listener hears, and when: the audio graph and the heard-sample clock.
//
// The broadcast sample being heard is read from the receiver's synchronization source (the
// RTP timestamp of the frame last played out, and when), mapped to broadcast samples with the
// server's `rtp_base`. That mapping is off by 10-40 ms at speech onsets, line by line (the
// jitter buffer changes while the stream is quiet, and Chromium's playout timestamp runs some
// ms ahead of what reaches WebAudio), so it is checked against the audio itself: the page hears
// the stream LOOKAHEAD_MS before it plays it, finds each speech onset there and matches it with
// the onset the server announced at that sample; the clock is anchored on it before the viewer
// hears it. Measured, not assumed. What the context renders leaves the speakers its output
// latency later (latency.js): every time here is a render time until `sampleAt` adds that.

import { SAMPLE_RATE, countUpTo } from "./lipsync.js";

const PER_MS = SAMPLE_RATE / 1000;
const TWO32 = 2 ** 32;
/**
 * How long the page holds the stream before playing it: time to find an onset (a frame, up to
 * 30-50 ms on a busy machine) and draw it (the mouth is drawn 15-25 ms ahead), with the clock's
 * own error at onsets (up to 40 ms) to spare. A livestream can afford a tenth of a second.
 */
export const LOOKAHEAD_MS = 100;
// an onset: the first sample above LOUD after QUIET_MS of samples at most QUIET (server/show/onsets.py
// announces every sound after 50 ms of quiet, so each one heard here is among them)
const LOUD = 0.02;
const QUIET = 0.004;
const QUIET_MS = 100;
// an onset not yet announced is looked for until this long before it is heard (a frame, and
// the mouth's drawing lead, must still follow)
const WAIT_MARGIN_MS = 40;
/**
 * Playout readings kept for the median mapping: those of the last quarter second, at least
 * three. A reading is quantised to the 10 ms audio frame, so a few are needed; but the
 * jitter buffer grows and shrinks by stretching audio (often by 100 ms as speech starts), and
 * a longer window would lag behind: the heard clock would read ahead of the sound.
 */
const WINDOW_MS = 250;
const MIN_READINGS = 3;
/**
 * A step: this many newest readings agree (within a 10 ms audio frame) and all sit more than
 * STEP_MS from the median. The jitter buffer grew or shrank at once (by 100 ms as speech
 * starts, at times); the window restarts from them, instead of waiting until they are half of
 * it, which left the mouth that far off for an eighth of a second.
 */
const STEP_READINGS = 3;
const STEP_MS = 20;

/**
 * How far back the clock keeps its mappings (ms): a sample is heard the look-ahead and the
 * output latency after it enters (up to 5 s: latency.js), by the mapping in force then.
 */
const HISTORY_MS = 6000;

/**
 * Maps performance.now() to the broadcast sample entering the page's audio context (raw), to
 * the one it renders out of the look-ahead `lookaheadMs` later, anchored by the calibration,
 * and to the one being heard, leaving the speakers `outputLatencyMs` after that.
 *
 * A sample is mapped by what was known of the time it entered, not of the time it is heard:
 * the jitter buffer stretches as speech starts, and each onset moves the anchor, but what has
 * entered the page by then is not stretched or moved any more. Mapped by the figures of the
 * moment it was heard (845 ms later with a quarter-second latency hint, 142 ms here), the
 * mouth jumped by a step that long before the sound did: a line's start was drawn 21 ms late.
 */
export class HeardClock {
  constructor(receiver, rtpBase, lookaheadMs = 0) {
    this.receiver = receiver;
    this.rtpBase = rtpBase >>> 0;
    this.lookaheadMs = lookaheadMs;
    this.readings = []; // {stamp, offset}: broadcast sample − ms·48 at each playout reading
    this.mappings = new Timeline(); // the median in force from each reading's time on
    this.calibrations = new Timeline(); // the anchor (ms) in force from each onset's quiet on
    this.calibrations.set(-Infinity, 0);
    this.lastStamp = null;
    this.lastRel = null;
    this.unwrapped = 0;
    this.outputLatencyMs = 0; // the page sets it every frame (OutputLatency)
  }

  /** How long after a sample enters the page it is heard: the look-ahead, then the device. */
  get heardDelayMs() {
    return this.lookaheadMs + this.outputLatencyMs;
  }

  /** The calibration in force for what enters now (ms). */
  get calibrationMs() {
    return this.calibrations.last();
  }

  /** A calibration for everything, heard or to be heard (a new stream's first one). */
  set calibrationMs(ms) {
    this.calibrations = new Timeline();
    this.calibrations.set(-Infinity, ms);
  }

  /**
   * Anchor what enters from performance time `from` on (the quiet before the onset the anchor
   * was measured at) by `ms`: what entered before is still heard as it was mapped.
   */
  calibrate(ms, from) {
    if (ms !== this.calibrations.at(from)) this.calibrations.set(from, ms, from - HISTORY_MS);
  }

  /** Take the newest playout reading; call once per animation frame. */
  poll() {
    const sources = this.receiver.getSynchronizationSources?.() ?? [];
    if (!sources.length) return;
    const src = sources[0];
    if (src.timestamp === this.lastStamp) return;
    this.lastStamp = src.timestamp;
    // Chromium stamps on the wall clock (epoch ms); the spec says performance time
    const stamp = src.timestamp > 1e11 ? src.timestamp - performance.timeOrigin : src.timestamp;
    const rel = (src.rtpTimestamp - this.rtpBase + TWO32) % TWO32;
    if (this.lastRel === null) this.unwrapped = rel;
    else this.unwrapped += ((rel - this.lastRel + TWO32 * 1.5) % TWO32) - TWO32 / 2;
    this.lastRel = rel;
    this.lastPlayout = stamp;
    this.readings.push({ stamp, offset: this.unwrapped - stamp * PER_MS });
    while (this.readings.length > MIN_READINGS && this.readings[0].stamp < stamp - WINDOW_MS) {
      this.readings.shift();
    }
    // a step holds from its first reading on: what entered since is mapped by it (it is heard
    // a look-ahead later, so it is not too late for that)
    let from = stamp;
    if (this.#stepped()) {
      this.readings.splice(0, this.readings.length - STEP_READINGS);
      from = this.readings[0].stamp;
    }
    this.mappings.set(from, median(this.readings.map((r) => r.offset)), stamp - HISTORY_MS);
  }

  #stepped() {
    const n = this.readings.length;
    const latest = this.mappings.last(); // the median before this reading
    if (latest === undefined || n <= STEP_READINGS) return false;
    const newest = this.readings.slice(n - STEP_READINGS).map((r) => r.offset);
    const lo = Math.min(...newest);
    const hi = Math.max(...newest);
    const step = STEP_MS * PER_MS;
    return hi - lo <= 10 * PER_MS && (lo > latest + step || hi < latest - step);
  }

  /** True while playout readings keep coming. */
  live(now) {
    return this.lastPlayout !== undefined && now - this.lastPlayout < 300;
  }

  /**
   * The broadcast sample entering the audio context at performance time `now`, by the playout
   * readings alone as they stood then (null until known): what the look-ahead meter hears.
   */
  rawSampleAt(now) {
    const offset = this.mappings.at(now);
    return offset === undefined ? null : now * PER_MS + offset;
  }

  /**
   * The broadcast sample the context renders out of the look-ahead at performance time `now`:
   * what passes the page's interrupt ducking then.
   */
  renderedSampleAt(now) {
    const entered = now - this.lookaheadMs;
    const raw = this.rawSampleAt(entered);
    return raw === null ? null : Math.round(raw - this.calibrations.at(entered) * PER_MS);
  }

  /** The broadcast sample being heard at performance time `now`: it left the speakers then. */
  sampleAt(now) {
    return this.renderedSampleAt(now - this.outputLatencyMs);
  }
}

/**
 * A value that changes over time: the one in force at any moment of the last few seconds.
 * Setting one from a moment replaces what was set from then on (a later finding about the
 * same moments).
 */
export class Timeline {
  constructor() {
    this.points = []; // {from, value}, sorted by from
  }

  /** `value` from `from` on; what was in force before `forget` is dropped, bar the last. */
  set(from, value, forget = -Infinity) {
    while (this.points.length && this.points.at(-1).from >= from) this.points.pop();
    if (this.points.at(-1)?.value !== value) this.points.push({ from, value });
    let old = 0;
    while (old + 1 < this.points.length && this.points[old + 1].from <= forget) old++;
    if (old) this.points.splice(0, old);
  }

  /** The value in force at `t` (before the first, the first's; undefined when empty). */
  at(t) {
    return this.points[Math.max(0, countUpTo(this.points, "from", t) - 1)]?.value;
  }

  last() {
    return this.points.at(-1)?.value;
  }
}

/**
 * Finds speech onsets in the stream as it enters the page (LOOKAHEAD_MS before it is heard)
 * and matches each with the onset the server announced nearest the clock's raw reading there.
 * The difference is the clock's error at that onset (positive: the clock runs ahead of the
 * sound, the mouth would lead it); the page anchors the clock on it (`anchorMs`) before the
 * onset is heard. When it is heard, the clock then in force is checked against it again
 * (`offsetMs`): the page's lip-sync offset figure, and what the mouth eases by.
 */
export class OnsetCalibration {
  constructor({
    quiet = QUIET, loud = LOUD, quietMs = QUIET_MS, windowMs = 60, wideWindowMs = 250, keep = 15,
    gateMs = 50,
  } = {}) {
    Object.assign(this, { quiet, loud, quietMs, windowMs, wideWindowMs, keep, gateMs });
    this.quietSince = null; // when the run of quiet samples now in force began
    this.armed = false; // quietMs of quiet have passed, and no loud sample since
    this.lastNow = null; // the end of the samples already looked at
    this.errors = []; // raw clock error (ms) at each matched onset
    this.anchor = null; // the latest error taken as the clock's correction
    this.anchorFrom = null; // what it corrects: what entered from the quiet before its onset on
    this.due = []; // {at, sample}: matched onsets not yet heard
    this.waiting = []; // onset times heard ahead with no announcement (yet) near them
    this.residuals = []; // the clock's error at each onset as it was heard
  }

  /**
   * One analysis step: `samples` are the latest samples entering the page (`perMs` a ms),
   * ending at performance time `now`; `clock` gives the raw reading there and `track` the
   * announced onsets. Only the samples newer than the last step's are read, one by one: an
   * onset is the first loud sample after `quietMs` of quiet samples (a softer rise between
   * them is no onset yet, and keeps it coming), timed to the sample however far apart the
   * frames are, as long as the buffer spans the gap (a longer gap forgets the quiet).
   */
  step(samples, now, clock, track, perMs = PER_MS) {
    this.#hear(now, clock);
    // an onset can enter the page before its announcement is handled (both wait for the main
    // thread): it is looked for again while it is still ahead of what is heard
    const pending = this.waiting.filter((t) => t + clock.heardDelayMs > now + WAIT_MARGIN_MS);
    this.waiting = [];
    for (const t of pending) this.#match(t, clock, track);
    const n = samples.length;
    const gap = this.lastNow === null ? Infinity : (now - this.lastNow) * perMs;
    this.lastNow = now;
    if (gap > n) {
      this.quietSince = null; // samples were missed: what came before is unknown
      this.armed = false;
    }
    const at = (i) => now - (n - i) / perMs;
    for (let i = Math.max(0, Math.floor(n - gap)); i < n; i++) {
      const x = Math.abs(samples[i]);
      if (x <= this.quiet) {
        this.quietSince ??= at(i);
        if (at(i) - this.quietSince >= this.quietMs) this.armed = true;
        continue;
      }
      this.quietSince = null;
      if (x > this.loud) {
        if (this.armed) this.#match(at(i), clock, track);
        this.armed = false;
      }
    }
  }

  #match(onsetTime, clock, track) {
    const raw = clock.rawSampleAt(onsetTime);
    if (raw === null) return;
    // looked for near where the last anchor puts it, so a neighbour is not taken for it; then
    // wide (the raw reading was found 20-70 ms off, by machine, and the jitter buffer can step)
    const expected = raw - (this.anchor ?? 0) * PER_MS;
    const close = track.onsetNear(expected, this.windowMs * PER_MS);
    const announced = close ?? track.onsetNear(expected, this.wideWindowMs * PER_MS);
    if (announced === null) {
      this.waiting.push(onsetTime);
      return;
    }
    const error = (raw - announced) / PER_MS;
    // an onset paired with the wrong announcement would move the clock a syllable: one found
    // only far from the anchor is not taken alone, but a second that agrees with it is
    const near = (x) => x !== undefined && x !== null && Math.abs(error - x) <= this.gateMs;
    if (this.anchor === null || close !== null || near(this.errors.at(-1))) {
      this.anchor = error;
      this.anchorFrom = onsetTime - this.quietMs / 2;
    }
    this.errors.push(error);
    if (this.errors.length > this.keep) this.errors.shift();
    // heard a look-ahead and the output latency after it entered: judged then, by the clock then
    this.due.push({ at: onsetTime + clock.heardDelayMs, sample: announced });
  }

  // the onsets heard by now: how far the clock then in force was from them
  #hear(now, clock) {
    while (this.due.length && this.due[0].at <= now) {
      const { at, sample } = this.due.shift();
      const heard = clock.sampleAt(at);
      if (heard === null) continue;
      this.residuals.push((heard - sample) / PER_MS);
      if (this.residuals.length > this.keep) this.residuals.shift();
    }
  }

  /** The correction the latest matched onset calls for (ms), null before the first. */
  anchorMs() {
    return this.anchor === null ? null : clampMs(this.anchor, 200);
  }

  /**
   * The recent lip-sync offset as heard (ms; positive: the mouth leads the sound): the median
   * error of the clock in force at the onsets heard lately, null before the first.
   */
  offsetMs() {
    return this.residuals.length ? median(this.residuals) : null;
  }
}

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
  constructor(audioElement, latencyHint = "interactive") {
    this.audio = audioElement;
    this.ctx = new AudioContext({ latencyHint });
    this.analyser = this.ctx.createAnalyser();
    this.analyser.fftSize = analyserSize(this.ctx);
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

// how much the audio thread renders at once: its base latency, about
function burstMs(ctx) {
  return Number.isFinite(ctx.baseLatency) && ctx.baseLatency > 0 ? ctx.baseLatency * 1000 : 0;
}

/**
 * The analyser's length: longer than a render burst and a frame, so no sample falls between
 * two reads (at 20–33 fps a 21 ms window left gaps, and onsets in them were timed late). 85 ms
 * at 48 kHz for an interactive context, longer than a frame even at 12 fps; a context that
 * renders 186 ms at once takes 16384 samples.
 */
export function analyserSize(ctx) {
  const needed = ((burstMs(ctx) + 70) * (ctx.sampleRate || 48000)) / 1000;
  let size = 4096;
  while (size < needed && size < 32768) size *= 2;
  return size;
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function clampMs(x, limit) {
  return Math.max(-limit, Math.min(limit, x));
}
