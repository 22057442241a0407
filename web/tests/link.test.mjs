// Reconnect timing and the browser time protocol's arithmetic.
import assert from "node:assert/strict";
import { test } from "node:test";

import { backoffDelay } from "../static/stage/link.js";
import { TimeSync, exchange } from "../static/stage/timesync.js";
import { FrameStats, Presentation, RenderBudget } from "../static/stage/framestats.js";

test("backoff is full jitter under an exponential, capped ceiling", () => {
  const opts = { baseMs: 500, capMs: 15000 };
  assert.equal(backoffDelay(0, opts, () => 0.999999) < 500, true);
  assert.equal(backoffDelay(3, opts, () => 0.5), 2000);
  assert.equal(backoffDelay(20, opts, () => 0.5), 7500); // capped at 15 s
  assert.equal(backoffDelay(5, opts, () => 0), 0); // full jitter reaches zero
});

test("four-timestamp exchange: offset and delay", () => {
  // client 100 ms behind the server, 10 ms each way, 2 ms in the server
  const { offset, delay } = exchange(1000, 1110, 1112, 1022);
  assert.equal(offset, 100);
  assert.equal(delay, 20);
});

test("the exchange with the least delay wins; its half-delay is the uncertainty", async () => {
  const script = [
    [0, 130, 131, 60], // slow: 59 ms delay
    [100, 205, 206, 112], // fast: 11 ms delay
  ];
  let i = 0;
  const now = () => script[Math.floor(i++ / 2)][i % 2 === 1 ? 0 : 3];
  const sync = new TimeSync(async (_e, { t0 }) => {
    const [, t1, t2] = script[Math.floor((i - 1) / 2)];
    return { t0, t1, t2 };
  }, now);
  await sync.probe();
  await sync.probe();
  assert.equal(sync.uncertaintyMs, 5.5);
  assert.equal(sync.offsetMs, 99.5);
});

test("frame stats count fps over a second and the frames a stall dropped", () => {
  const f = new FrameStats();
  let t = 0;
  for (let i = 0; i < 60; i++) f.tick((t += 1000 / 60));
  assert.equal(f.dropped, 0);
  f.tick((t += 100)); // a 100 ms stall: 5 frames never drawn
  assert.equal(f.dropped, 5);
  assert.ok(f.fps() >= 55 && f.fps() <= 61);
});

test("the render budget steps down in a second with missed frames and back up after clean ones", () => {
  const b = new RenderBudget({ tolerance: 1, min: 0.4, step: 0.2, patience: 3, settle: 60 });
  assert.equal(b.check(4), 0.8);
  assert.equal(b.check(4), 0.6000000000000001);
  assert.equal(b.check(1), null); // one miss a second is tolerated, but is not a clean second
  assert.equal(b.check(0), null);
  assert.equal(b.check(0), null);
  assert.equal(b.check(0), 0.8);
  for (let i = 0; i < 10; i++) b.check(10);
  assert.equal(b.scale, 0.4); // never below the floor
});

test("a step up that brings misses back doubles the wait; one upset later by new load does not", () => {
  const b = new RenderBudget({ tolerance: 0, min: 0.4, step: 0.2, patience: 2, settle: 10 });
  b.check(3); // 0.8
  const clean = (n) => Array.from({ length: n }, () => b.check(0)).filter((s) => s !== null);
  assert.deepEqual(clean(2), [1]); // 2 clean seconds: up
  b.check(2); // misses 1 s after the step up: 1 did not fit
  assert.equal(b.scale, 0.8);
  assert.equal(b.wait, 4);
  assert.deepEqual(clean(3), []); // the wait is 4 s now
  assert.deepEqual(clean(1), [1]);
  b.check(2); // again within `settle`: 8 s
  assert.equal(b.wait, 8);
  assert.deepEqual(clean(8), [1]);
  assert.deepEqual(clean(20), []); // held for 20 s (> settle), then new load came
  b.check(5);
  assert.equal(b.wait, 2);
  assert.equal(b.scale, 0.8);
});

test("missed frames: a page drawing 60 fps on a 120 Hz display misses none, a stall only a few", () => {
  const f = new FrameStats();
  let t = 0;
  for (let i = 0; i < 240; i++) f.tick((t += 1000 / 120)); // the display's period: 8.3 ms
  for (let i = 0; i < 120; i++) f.tick((t += 1000 / 60)); // every other vsync
  assert.ok(f.dropped >= 100, String(f.dropped)); // the display's frames were dropped…
  assert.equal(f.missed, 0); // …but lip-sync needs no more than 60
  f.tick((t += 1000 / 30)); // a frame that missed its vsync at 60 fps
  assert.equal(f.missed, 1);
  f.tick((t += 500)); // a stall
  assert.equal(f.missed, 1 + 3);
});

test("a moment is shown for the length-weighted mean of the last second's frame intervals", () => {
  const steady = new FrameStats();
  let t = 0;
  for (let i = 0; i < 60; i++) steady.tick((t += 20));
  assert.ok(Math.abs(steady.displayMs() - 20) < 1e-9);
  const skipping = new FrameStats(); // every other 60 Hz vsync missed: 17 and 33 ms frames
  t = 0;
  for (let i = 0; i < 60; i++) skipping.tick((t += i % 2 ? 1000 / 30 : 1000 / 60));
  const expected = ((1000 / 60) ** 2 + (1000 / 30) ** 2) / (1000 / 60 + 1000 / 30);
  assert.ok(Math.abs(skipping.displayMs() - expected) < 0.5, skipping.displayMs());
  assert.ok(skipping.displayMs() > 27); // not the median's 17
  steady.tick((t = 60 * 20 + 250)); // a stall: the next frame will not be like it
  steady.tick((t += 20));
  assert.ok(Math.abs(steady.displayMs() - 20) < 1e-9, String(steady.displayMs()));
});

test("a page steadily slow shows each moment for its own interval; a stall of it is left out", () => {
  const slow = new FrameStats(); // 6 fps all along: a starved page, not a stalled one
  let t = 0;
  for (let i = 0; i < 60; i++) slow.tick((t += 170));
  assert.ok(Math.abs(slow.displayMs() - 170) < 1e-9, String(slow.displayMs()));
  slow.tick((t += 600)); // another program took the CPU
  slow.tick((t += 170));
  assert.ok(Math.abs(slow.displayMs() - 170) < 1e-9, String(slow.displayMs()));
});

test("a frame held back past the page's usual interval is told from the page's steady rate", () => {
  const f = new FrameStats();
  let t = 0;
  assert.equal(f.held(f.tick((t += 150))), false, "too few intervals to know the usual one");
  for (let i = 0; i < 100; i++) f.tick((t += 50)); // 20 fps: every third 60 Hz vsync
  assert.equal(f.held(f.tick((t += 50))), false, "the page's own rate is no stall");
  assert.equal(f.held(f.tick((t += 150))), true, "another program took the CPU");
  const slow = new FrameStats(); // a page at 7 fps all along is slow, not held
  for (let i = 0; i < 100; i++) slow.tick((t += 150));
  assert.equal(slow.held(slow.tick((t += 150))), false);
});

test("a frame whose scripts will run past the next vsync is drawn for the one after", () => {
  const period = 1000 / 60;
  const p = new Presentation({ keep: 5 });
  assert.equal(p.forecast(15, period), 1, "no frame measured yet: its scripts are taken as instant");
  for (const ms of [3, 4, 4, 5, 30]) p.done(ms); // the median, 4 ms: one slow frame is not the rule
  assert.equal(p.workMs(), 4);
  assert.equal(p.forecast(2, period), 1); // on time
  assert.equal(p.forecast(12, period), 1); // ends at 16 ms, just before the vsync at 16.7
  assert.equal(p.forecast(13, period), 2); // ends past it
  // a starved page begins its scripts 150 ms late: seen at the first vsync after they end
  assert.equal(p.forecast(150, period), 10); // ends at 154 ms, before the tenth at 166.7
  assert.equal(p.forecast(163, period), 11); // ends at 167 ms, just past it
});

test("a frame is seen a vsync later only when its scripts ran past the vsync it then missed", () => {
  const period = 1000 / 60;
  const seen = (ended, next) => Presentation.seen(1000, 1000 + ended, 1000 + next, period);
  assert.equal(seen(5, period), 1000 + period); // on time
  assert.equal(seen(5, 2 * period), 1000 + period); // done in time; the page was held after it
  assert.equal(seen(20, period), 1000 + period); // ran late, yet the vsync took it
  assert.equal(seen(20, 2 * period), 1000 + 2 * period); // ran past the vsync, which went unused
  // a starved page: its scripts ended 150 ms after the stamp, and the next frame came after
  assert.equal(seen(149, 10 * period), 1000 + 9 * period); // the vsync at 150 ms
  assert.equal(seen(151, 10 * period), 1000 + 10 * period); // the first after 151 ms
  assert.equal(seen(151, period), 1000 + period); // yet a vsync took a frame: it made the first
});

test("frame jitter is the 99th percentile of intervals straying from the display's", () => {
  const f = new FrameStats();
  let t = 0;
  f.tick(t);
  assert.equal(f.jitterMs(), null, "not before there are frames");
  for (let i = 0; i < 200; i++) f.tick((t += 1000 / 60));
  assert.ok(f.jitterMs() < 0.5, `steady frames: ${f.jitterMs()}`);
  for (let i = 0; i < 10; i++) f.tick((t += 1000 / 60 + (i % 2 ? 8 : -8)));
  assert.ok(f.jitterMs() > 7 && f.jitterMs() < 11, `8 ms swings: ${f.jitterMs()}`);
});
