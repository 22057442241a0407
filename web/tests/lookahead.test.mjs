// How long the page holds the stream: as long as its line's pictures need to reach it first.
import assert from "node:assert/strict";
import { test } from "node:test";

import { HeardClock } from "../static/stage/heardclock.js";
import { Hearing, LOOKAHEAD_MS } from "../static/stage/hearing.js";
import { Lookahead } from "../static/stage/lookahead.js";
import { MS, RATE } from "./facts.mjs";

test("a quick page's events come in time: it keeps the tenth of a second", () => {
  const hold = new Lookahead();
  // 60 fps; the line's first viseme heard 180 ms after its event is handled
  for (let t = 0; t < 10000; t += 1000) hold.arrived(180, LOOKAHEAD_MS, 1000 / 60, t);
  assert.equal(hold.wanted(10000), LOOKAHEAD_MS);
});

test("a starved page's late events make it hold the stream as long as they were short", () => {
  const hold = new Lookahead();
  // a frame every 150 ms: the event should come two frames and a margin (320 ms) before its
  // first viseme is heard; it came 60 ms after it, with the stream held 100 ms
  hold.arrived(-60, 100, 150, 1000);
  assert.equal(hold.wanted(1000), 100 + 380);
  // one that came in time asks for nothing; a smaller shortfall does not lower the hold
  hold.arrived(400, 480, 150, 2000);
  hold.arrived(330, 480, 150, 3000);
  assert.equal(hold.wanted(3000), 480);
});

test("the hold is kept a minute after the last short event, then falls back", () => {
  const hold = new Lookahead();
  hold.arrived(0, 100, 100, 1000);
  assert.equal(hold.wanted(60000), 100 + 220);
  assert.equal(hold.wanted(61001), LOOKAHEAD_MS);
});

test("the hold is at most half a second, however late an event", () => {
  const hold = new Lookahead();
  hold.arrived(-5000, 100, 250, 1000);
  assert.equal(hold.wanted(1000), 500);
});

test("what is rendered after the hold grows entered that much earlier; before, as it was", () => {
  const rx = { now: 0 };
  rx.getSynchronizationSources = () => [{ timestamp: rx.now, rtpTimestamp: Math.round((rx.now - 60) * MS) }];
  const clock = new HeardClock(rx, { sampleRate: RATE, lookaheadMs: 100 });
  for (rx.now = 1000; rx.now <= 2000; rx.now += 20) clock.poll();
  clock.setLookahead(300, 1500);
  assert.equal(clock.lookaheadMs, 300);
  assert.equal(clock.renderedSampleAt(1400), (1400 - 100 - 60) * MS);
  assert.equal(clock.renderedSampleAt(1600), (1600 - 300 - 60) * MS);
  assert.equal(clock.heardDelayMs, 300);
});

test("the hold changes only where the stretch it moves the output over is silence", () => {
  // the last read's buffer: 600 ms of silence, then 100 ms of speech, newest last
  const buffer = new Float32Array(700 * MS);
  for (let i = 600 * MS; i < buffer.length; i++) buffer[i] = 0.3 * Math.sin(i / 7);
  const quietFor = (from, to) => Hearing.prototype.quietFor.call({ buffer, perMs: MS }, from, to, 0.005);
  assert.ok(!quietFor(70, 330), "speech entered 0-100 ms ago: it is not yet played, nor silence");
  assert.ok(quietFor(130, 330), "100-330 ms ago it was silent");
  assert.ok(!quietFor(130, 800), "the buffer does not reach back 800 ms");
});
