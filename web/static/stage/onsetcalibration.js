// The heard clock checked against the audio itself: the page hears the stream LOOKAHEAD_MS
// (hearing.js) before it plays it, finds each speech onset there and matches it with the onset
// the server announced at that sample. Measured, not assumed.

import { median } from "../common/median.js";
import { requireRate } from "./rate.js";

// An onset: the first sample above `loud` after QUIET_MS of samples at most `quiet`, the
// server's thresholds (the page's facts: server/show/onsets.py). The server announces every sound
// after its own `quiet_ms` of quiet; the page waits longer, so each one it hears is among them.
const QUIET_MS = 100;
// an onset not yet announced is looked for until this long before it is heard (a frame, and
// the mouth's drawing lead, must still follow)
const WAIT_MARGIN_MS = 40;

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
    sampleRate, quiet, loud, quietMs = QUIET_MS, windowMs = 60, wideWindowMs = 250, keep = 15,
    gateMs = 50,
  } = {}) {
    this.perMs = requireRate(sampleRate) / 1000;
    if (!(loud > quiet && quiet > 0)) {
      throw new TypeError(`onset thresholds are needed (the page's facts), not ${loud}, ${quiet}`);
    }
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
  step(samples, now, clock, track, perMs = this.perMs) {
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
    const expected = raw - (this.anchor ?? 0) * this.perMs;
    const close = track.onsetNear(expected, this.windowMs * this.perMs);
    const announced = close ?? track.onsetNear(expected, this.wideWindowMs * this.perMs);
    if (announced === null) {
      this.waiting.push(onsetTime);
      return;
    }
    const error = (raw - announced) / this.perMs;
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
      this.residuals.push((heard - sample) / this.perMs);
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

function clampMs(x, limit) {
  return Math.max(-limit, Math.min(limit, x));
}
