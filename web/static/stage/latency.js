// The output device's latency: how long after the page's audio context renders a sample the
// viewer hears it. The mouth is drawn for the sound that leaves the speakers, so every heard
// time the page uses is a render time plus this. It differs by device (42 ms in headless
// Chromium here, hundreds of ms on a Bluetooth headset or a busy sound server) and changes with
// it, so it is read every frame, never assumed.

import { median } from "../common/median.js";

/**
 * What the context says of its latency now (ms): its base plus its output latency, where the
 * browser reports the output latency ("reported"); else how far its output timestamp trails
 * the rendered time ("timestamp": the same figure within a few ms, in Chromium 41 against
 * 42 ms, 737 against 746); else the base latency alone, or nothing ("none": the page cannot
 * know when its sound is heard, and says so rather than assume it is heard as rendered).
 */
export function reportedLatency(ctx) {
  const base = Number.isFinite(ctx.baseLatency) && ctx.baseLatency >= 0 ? ctx.baseLatency : 0;
  if (Number.isFinite(ctx.outputLatency) && ctx.outputLatency > 0) {
    return { ms: (base + ctx.outputLatency) * 1000, source: "reported" };
  }
  const ts = ctx.getOutputTimestamp?.();
  if (ts && ts.performanceTime > 0 && Number.isFinite(ts.contextTime)) {
    const lag = (ctx.currentTime - ts.contextTime) * 1000;
    if (lag > 0 && lag < MAX_MS) return { ms: lag, source: "timestamp" };
  }
  return { ms: base * 1000, source: "none" };
}

const MAX_MS = 5000; // a figure beyond this is no device's
const WINDOW_MS = 1000; // readings the figure in force follows: their median
const SLEW = 0.05; // while the mouth moves, the figure moves at most 5 % of the time passing

/**
 * The latency the page draws by: the median of the last second's readings (a figure that
 * flickers between two values does not shake the mouth), taken at once while the mouth rests
 * (a jump is not seen then) and slewed while it moves, 50 ms a second: the animation runs 5 %
 * faster or slower for a moment instead of jumping a syllable. A device switch mid-line is so
 * followed within a second per 50 ms of change, or at the next pause, whichever comes first.
 */
export class OutputLatency {
  constructor() {
    this.readings = []; // {at, ms}
    this.ms = null; // the figure in force
    this.source = "none";
    this.last = null; // when it was last updated
  }

  /** One frame: the context's reading (`reportedLatency`) at page time `now`. */
  update(reading, now, resting) {
    this.source = reading.source;
    if (!Number.isFinite(reading.ms) || reading.ms < 0 || reading.ms > MAX_MS) return this.ms;
    this.readings.push({ at: now, ms: reading.ms });
    while (this.readings.length > 1 && this.readings[0].at < now - WINDOW_MS) this.readings.shift();
    const target = median(this.readings.map((r) => r.ms));
    const dt = this.last === null ? Infinity : Math.max(0, now - this.last);
    this.last = now;
    if (this.ms === null || resting) this.ms = target;
    else {
      const step = Math.min(Math.abs(target - this.ms), SLEW * dt);
      this.ms += Math.sign(target - this.ms) * step;
    }
    return this.ms;
  }
}
