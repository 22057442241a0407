// The heard clock: playout readings mapped to broadcast samples, following the jitter buffer.
import assert from "node:assert/strict";
import { test } from "node:test";

import { HeardClock } from "../static/stage/hearing.js";

const MS = 48;

/** A receiver whose playout delay (ms) the test sets; one reading per 20 ms poll. */
function fakeReceiver() {
  const r = { delay: 60, now: 0 };
  r.getSynchronizationSources = () => [
    { timestamp: r.now, rtpTimestamp: Math.round((r.now - r.delay) * MS) >>> 0 },
  ];
  return r;
}

test("the clock reads the sample being played out", () => {
  const rx = fakeReceiver();
  const clock = new HeardClock(rx, 0);
  for (rx.now = 1000; rx.now <= 1500; rx.now += 20) clock.poll();
  assert.equal(clock.sampleAt(1500), (1500 - 60) * MS);
});

test("the clock follows a jitter buffer that grows, within a quarter second", () => {
  const rx = fakeReceiver();
  const clock = new HeardClock(rx, 0);
  for (rx.now = 1000; rx.now < 2000; rx.now += 20) clock.poll();
  rx.delay = 160; // speech started: the buffer stretched by 100 ms
  for (; rx.now <= 2300; rx.now += 20) clock.poll();
  const errorMs = (clock.sampleAt(2300) - (2300 - 160) * MS) / MS;
  assert.ok(Math.abs(errorMs) < 10, `the clock is ${errorMs} ms off a third of a second later`);
});

test("the calibration shifts the clock", () => {
  const rx = fakeReceiver();
  const clock = new HeardClock(rx, 0);
  for (rx.now = 1000; rx.now <= 1200; rx.now += 20) clock.poll();
  clock.calibrationMs = 15;
  assert.equal(clock.sampleAt(1200), (1200 - 60 - 15) * MS);
});
