// Animation frame figures: frames per second over the last second, and frames dropped
// (an interval of k expected frame times means k − 1 frames were never drawn).

import { median } from "../common/median.js";

// an interval this many display periods long is a stall, not a frame rate
const STALL = 4;
// a frame this many times the page's usual interval after the one before was held back
const HELD = 1.5;

export class FrameStats {
  constructor() {
    this.times = [];
    this.gaps = []; // the last intervals, for the jitter figure
    this.last = null;
    this.dropped = 0;
    this.missed = 0; // frames missed, as the render budget counts them: see tick
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
      // What the render budget answers to: a page drawing 60 fps on a faster display (every
      // other 120 Hz vsync) draws as often as lip-sync needs, and a stall (a long task, a
      // hidden tab) counts as a few misses, not as the hundreds of vsyncs it spans.
      const paced = Math.max(this.period, 1000 / 60);
      if (dt > paced * 1.5) this.missed += Math.min(STALL - 1, Math.round(dt / paced) - 1);
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
   * Whether a frame `dt` ms after the one before came held back: more than HELD times the
   * page's usual interval (the median of its last ones) — a stall of the viewer's machine
   * (another program took the CPU), not its steady rate. What starts in such a gap is shown
   * that much late however well it is timed; the lip-sync figures count it apart.
   */
  held(dt) {
    return this.gaps.length >= 10 && dt > HELD * this.usualMs();
  }

  /** The page's usual interval between frames (ms): the median of its last ones. */
  usualMs() {
    return this.gaps.length ? median(this.gaps) : this.period;
  }

  /**
   * How long the frame that shows a given moment stays up (ms), over the last second: long
   * frames hold more moments, so this is the intervals' mean weighted by their length
   * (Σg² / Σg), not their median. A page that misses every other vsync at 60 Hz shows frames
   * for 17 and 33 ms; a moment lands in a 33 ms one two times in three, and waits 14 ms on
   * average, not 8. A stall (an interval over STALL display periods, and held back: see
   * `held`) is left out: it says nothing of the next frame, and one of 250 ms had the mouth
   * drawn 35 ms early for a second. A page steadily slow is not stalling: at 6 fps each frame
   * stays up 170 ms, and drawn as if for one vsync its visemes showed 0-170 ms late.
   */
  displayMs() {
    const t = this.times;
    if (t.length < 3) return this.period;
    const stall = Math.max(this.period * STALL, HELD * this.usualMs());
    let sum = 0;
    let squares = 0;
    for (let i = 1; i < t.length; i++) {
      const g = t[i] - t[i - 1];
      if (g > stall) continue;
      sum += g;
      squares += g * g;
    }
    return sum > 0 ? squares / sum : this.period; // nothing but stalls: the display's own
  }
}

/**
 * Dynamic resolution: software GL and small machines cannot always draw full-size frames in
 * time, and a frame that misses its vsync shows its mouth a display period late: the late tail
 * of the lip-sync figures. So the budget aims for no missed frames, not for a frame rate: in a
 * second with more than `tolerance` missed (FrameStats.missed) the render scale steps down.
 * After `wait` seconds without one it steps back up, to find out whether the larger size now
 * fits. If the step up brings misses back within `settle` seconds, it did not fit: the wait
 * doubles (up to `most`), so a page at the edge of its budget does not keep paying for the
 * same lesson. A size that held `settle` seconds before misses came was upset by new load,
 * not by the size: the wait starts again from `patience`. Checked once a second.
 */
export class RenderBudget {
  constructor({ tolerance = 1, min = 0.4, step = 0.15, patience = 5, settle = 60, most = 320 } = {}) {
    Object.assign(this, { tolerance, min, step, patience, settle, most });
    this.scale = 1;
    this.wait = patience;
    this.clean = 0; // seconds without a missed frame
    this.held = null; // seconds since the last step up, until misses came
  }

  /** Called once a second with the frames missed in that second; the new scale, or null. */
  check(missed) {
    if (this.held !== null) this.held += 1;
    if (missed > this.tolerance) {
      this.clean = 0;
      if (this.held !== null) {
        this.wait = this.held <= this.settle ? Math.min(this.most, this.wait * 2) : this.patience;
        this.held = null;
      }
      if (this.scale <= this.min) return null;
      this.scale = Math.max(this.min, this.scale - this.step);
      return this.scale;
    }
    this.clean = missed === 0 ? this.clean + 1 : 0;
    if (this.clean >= this.wait && this.scale < 1) {
      this.clean = 0;
      this.held = 0;
      this.scale = Math.min(1, this.scale + this.step);
      return this.scale;
    }
    return null;
  }
}

/**
 * When a frame's picture is seen. It appears at the first vsync after its scripts are done: a
 * frame begun on time, a display period after its timestamp. A frame whose scripts end past
 * that vsync misses it and is seen a period later (the next frame's timestamp then comes two
 * periods after its own): in `bench lipsync`, 84-98 % of the frames whose scripts were still
 * running 20-24 ms after their timestamp at 60 Hz were followed by a missed vsync, against
 * 0.05 % of those done within 8 ms. Drawn for the earlier moment, such a frame shows the mouth
 * a period late: the late tail of the lip-sync figures, most of it at line starts (where a
 * server on the same machine synthesizes the line's next sentences beside the page). So a frame
 * whose scripts begin so late that, taking as long as the latest frames' did, they will end
 * past the next vsync is drawn for a period later. Mistaken, it shows the mouth a period
 * early, where ATSC's window is 45 ms wide, not 15.
 */
export class Presentation {
  constructor({ keep = 30 } = {}) {
    this.keep = keep;
    this.work = []; // how long the latest frames' scripts took (ms)
  }

  /**
   * How many display periods after its timestamp a frame will be seen whose scripts begin
   * `lateMs` after it: at the first vsync after they are expected to end, 1 when that is the
   * next. A starved page (a core shared with others) begins its scripts 100-200 ms after the
   * timestamp: drawn for two periods, its mouth was shown that much behind the sound.
   */
  forecast(lateMs, periodMs) {
    return Math.max(1, Math.ceil((lateMs + this.workMs()) / periodMs));
  }

  /** A frame's scripts took `ms`. */
  done(ms) {
    this.work.push(ms);
    if (this.work.length > this.keep) this.work.shift();
  }

  /** The median time the latest frames' scripts took (0 before any). */
  workMs() {
    return this.work.length ? median(this.work) : 0;
  }

  /**
   * When the frame stamped `stamp`, whose scripts ended at `ended`, was seen, known once the
   * next frame's timestamp `next` is: a period after its stamp, or, when its scripts ran past
   * that vsync and it went by without a frame, the first vsync after they ended (no picture is
   * seen before it is drawn: a starved page's frame ends 100-200 ms after its stamp).
   */
  static seen(stamp, ended, next, periodMs) {
    const first = stamp + periodMs;
    if (!(ended > first && next - stamp > 1.5 * periodMs)) return first;
    return stamp + periodMs * Math.max(2, Math.ceil((ended - stamp) / periodMs));
  }
}
