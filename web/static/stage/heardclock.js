// What the listener hears, and when: the heard-sample clock.
//
// The broadcast sample being heard is read from the receiver's synchronization source (the
// RTP timestamp of the frame last played out, and when), mapped to broadcast samples with the
// server's `rtp_base`. That mapping is off by 10-40 ms at speech onsets, line by line (the
// jitter buffer changes while the stream is quiet, and Chromium's playout timestamp runs some
// ms ahead of what reaches WebAudio), so it is checked against the audio itself
// (onsetcalibration.js), and the clock is anchored on each onset before the viewer hears it.
// What the context renders leaves the speakers its output latency later (latency.js): every
// time here is a render time until `sampleAt` adds that.

import { median } from "../common/median.js";
import { requireRate } from "./rate.js";
import { countUpTo } from "./sorted.js";

const TWO32 = 2 ** 32;
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
  constructor(receiver, { sampleRate, rtpBase = 0, lookaheadMs = 0 } = {}) {
    this.perMs = requireRate(sampleRate) / 1000;
    this.receiver = receiver;
    this.rtpBase = rtpBase >>> 0;
    this.lookaheads = new Timeline(); // how long the page held the stream, from when on
    this.lookaheads.set(-Infinity, lookaheadMs);
    this.readings = []; // {stamp, offset}: broadcast sample − ms·perMs at each playout reading
    this.mappings = new Timeline(); // the median in force from each reading's time on
    this.calibrations = new Timeline(); // the anchor (ms) in force from each onset's quiet on
    this.calibrations.set(-Infinity, 0);
    this.lastStamp = null;
    this.lastRel = null;
    this.unwrapped = 0;
    this.outputLatencyMs = 0; // the page sets it every frame (OutputLatency)
  }

  /** How long the page holds what enters now before it plays it (ms). */
  get lookaheadMs() {
    return this.lookaheads.last();
  }

  /**
   * The page holds the stream `ms` from performance time `from` on (hearing.setLookahead): what
   * is rendered from then on entered that long before.
   */
  setLookahead(ms, from) {
    this.lookaheads.set(from, ms, from - HISTORY_MS);
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
    this.readings.push({ stamp, offset: this.unwrapped - stamp * this.perMs });
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
    const step = STEP_MS * this.perMs;
    return hi - lo <= 10 * this.perMs && (lo > latest + step || hi < latest - step);
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
    return offset === undefined ? null : now * this.perMs + offset;
  }

  /**
   * The broadcast sample the context renders out of the look-ahead at performance time `now`:
   * what passes the page's interrupt ducking then.
   */
  renderedSampleAt(now) {
    const entered = now - this.lookaheads.at(now);
    const raw = this.rawSampleAt(entered);
    return raw === null ? null : Math.round(raw - this.calibrations.at(entered) * this.perMs);
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
