// Animation frame figures: frames per second over the last second, and frames dropped
// (an interval of k expected frame times means k − 1 frames were never drawn).

// an interval this many display periods long is a stall, not a frame rate
const STALL = 4;

export class FrameStats {
  constructor() {
    this.times = [];
    this.gaps = []; // the last intervals, for the jitter figure
    this.last = null;
    this.dropped = 0;
    this.period = 1000 / 60;
  }

  /** Record a frame at `now` (ms); returns the time since the previous one. */
  tick(now) {
    const dt = this.last === null ? 0 : now - this.last;
    this.last = now;
    this.times.push(now);
    while (this.times.length && this.times[0] < now - 1000) this.times.shift();
    if (dt > 0) {
      this.gaps.push(dt);
      if (this.gaps.length > 240) this.gaps.shift();
      // follow the display's own rate (60, 75, 120 Hz…) from steady intervals
      if (dt < this.period * 1.2) this.period += (dt - this.period) * 0.05;
      if (dt > this.period * 1.5) this.dropped += Math.round(dt / this.period) - 1;
    }
    return dt;
  }

  /** Frame jitter (ms): the 99th percentile of how far intervals stray from the display's. */
  jitterMs() {
    if (this.gaps.length < 10) return null;
    const off = this.gaps.map((g) => Math.abs(g - this.period)).sort((a, b) => a - b);
    return off[Math.min(off.length - 1, Math.floor(off.length * 0.99))];
  }

  fps() {
    return this.times.length;
  }

  /**
   * How long the frame that shows a given moment stays up (ms), over the last second: long
   * frames hold more moments, so this is the intervals' mean weighted by their length
   * (Σg² / Σg), not their median. A page that misses every other vsync at 60 Hz shows frames
   * for 17 and 33 ms; a moment lands in a 33 ms one two times in three, and waits 14 ms on
   * average, not 8. A stall (an interval over STALL display periods) is left out: it says
   * nothing of the next frame, and one of 250 ms had the mouth drawn 35 ms early for a second.
   */
  displayMs() {
    const t = this.times;
    if (t.length < 3) return this.period;
    let sum = 0;
    let squares = 0;
    for (let i = 1; i < t.length; i++) {
      const g = t[i] - t[i - 1];
      if (g > this.period * STALL) continue;
      sum += g;
      squares += g * g;
    }
    return sum > 0 ? squares / sum : this.period; // nothing but stalls: the display's own
  }
}

/**
 * Dynamic resolution: software GL and small machines cannot always draw full-size frames in
 * time, and a late frame is a late mouth. Below `low` fps the render scale steps down; after a
 * steady stretch above `high` it steps back up. Checked once a second.
 */
export class RenderBudget {
  constructor({ low = 45, high = 56, min = 0.4, step = 0.15, patience = 5 } = {}) {
    Object.assign(this, { low, high, min, step, patience });
    this.scale = 1;
    this.good = 0;
  }

  /** Called once a second with that second's fps; returns the new scale, or null if unchanged. */
  check(fps) {
    if (fps < this.low && this.scale > this.min) {
      this.good = 0;
      this.scale = Math.max(this.min, this.scale - this.step);
      return this.scale;
    }
    this.good = fps >= this.high ? this.good + 1 : 0;
    if (this.good >= this.patience && this.scale < 1) {
      this.good = 0;
      this.scale = Math.min(1, this.scale + this.step);
      return this.scale;
    }
    return null;
  }
}
