// The browser time protocol: the NTP four-timestamp exchange over socket.io (`timesync`).
//
// offset = ((t1 − t0) + (t2 − t3)) / 2 and delay = (t3 − t0) − (t2 − t1); of the recent
// exchanges the one with the smallest delay is kept (queueing only ever adds delay), and half
// its delay bounds the offset's error.

const KEEP = 8;

export function exchange(t0, t1, t2, t3) {
  return { offset: (t1 - t0 + (t2 - t3)) / 2, delay: t3 - t0 - (t2 - t1) };
}

export class TimeSync {
  /** `call(event, data)` returns a promise of the ack. */
  constructor(call, now = () => performance.timeOrigin + performance.now()) {
    this.call = call;
    this.now = now;
    this.samples = [];
    this.best = null;
  }

  async probe() {
    const t0 = this.now();
    const ack = await this.call("timesync", { t0 });
    const t3 = this.now();
    if (!ack || ack.t0 !== t0 || !Number.isFinite(ack.t1) || !Number.isFinite(ack.t2)) return;
    this.samples.push(exchange(t0, ack.t1, ack.t2, t3));
    if (this.samples.length > KEEP) this.samples.shift();
    this.best = this.samples.reduce((a, b) => (b.delay < a.delay ? b : a));
  }

  /** A burst at connect, then one exchange every `periodMs`. */
  async run(isLive, periodMs = 10000) {
    for (let i = 0; i < 5 && isLive(); i++) await this.probe().catch(() => {});
    while (isLive()) {
      await new Promise((r) => setTimeout(r, periodMs));
      if (isLive()) await this.probe().catch(() => {});
    }
  }

  reset() {
    this.samples = [];
    this.best = null;
  }

  /** Server clock minus this page's clock (ms), null until measured. */
  get offsetMs() {
    return this.best ? this.best.offset : null;
  }

  get uncertaintyMs() {
    return this.best ? Math.max(this.best.delay, 0) / 2 : null;
  }
}
