// Animation frame figures: frames per second over the last second, and frames dropped
// (an interval of k expected frame times means k − 1 frames were never drawn).

export class FrameStats {
  constructor() {
    this.times = [];
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
      // follow the display's own rate (60, 75, 120 Hz…) from steady intervals
      if (dt < this.period * 1.2) this.period += (dt - this.period) * 0.05;
      if (dt > this.period * 1.5) this.dropped += Math.round(dt / this.period) - 1;
    }
    return dt;
  }

  fps() {
    return this.times.length;
  }
}
