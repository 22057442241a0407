// The output device's latency: what the context reports, and the figure the page draws by.
import assert from "node:assert/strict";
import { test } from "node:test";

import { OutputLatency, reportedLatency } from "../static/stage/latency.js";

test("the reported latency is the context's base and output latency", () => {
  const ctx = { baseLatency: 0.01, outputLatency: 0.032, currentTime: 5 };
  const got = reportedLatency(ctx);
  assert.equal(got.source, "reported");
  assert.ok(Math.abs(got.ms - 42) < 1e-9, String(got.ms));
});

test("without an output latency, the output timestamp's lag stands in; without both, none", () => {
  const ts = { contextTime: 9.263, performanceTime: 4000 };
  const ctx = { baseLatency: 0.186, currentTime: 10, getOutputTimestamp: () => ts };
  const got = reportedLatency(ctx);
  assert.equal(got.source, "timestamp");
  assert.ok(Math.abs(got.ms - 737) < 1e-6, String(got.ms));
  // a context that has not played yet (outputLatency 0, no timestamp): it does not know
  const idle = { baseLatency: 0.01, outputLatency: 0, currentTime: 0,
    getOutputTimestamp: () => ({ contextTime: 0, performanceTime: 0 }) };
  assert.deepEqual(reportedLatency(idle), { ms: 10, source: "none" });
  assert.deepEqual(reportedLatency({}), { ms: 0, source: "none" });
});

const reported = (ms) => ({ ms, source: "reported" });

test("the figure follows a steady reading, and a flicker does not shake it", () => {
  const lat = new OutputLatency();
  for (let t = 0; t < 2000; t += 16) lat.update(reported(42), t, false);
  assert.equal(lat.ms, 42);
  // every third reading 30 ms off: the median of the last second stays put
  for (let t = 2000, k = 0; t < 4000; t += 16, k++) lat.update(reported(k % 3 ? 42 : 72), t, false);
  assert.equal(lat.ms, 42);
  assert.equal(lat.source, "reported");
});

test("a jump is taken at once while the mouth rests", () => {
  const lat = new OutputLatency();
  for (let t = 0; t < 1000; t += 16) lat.update(reported(42), t, true);
  let t = 1000;
  // a Bluetooth headset: the reading goes to 746 ms; in half a second it is the median
  for (; lat.ms !== 746 && t < 3000; t += 16) lat.update(reported(746), t, true);
  assert.equal(lat.ms, 746);
  assert.ok(t - 1000 <= 600, `${t - 1000} ms`);
});

test("while the mouth moves, a jump is slewed at 50 ms a second: no frame jumps", () => {
  const lat = new OutputLatency();
  for (let t = 0; t < 1000; t += 16) lat.update(reported(42), t, false);
  const seen = [];
  for (let t = 1000; t < 12000; t += 16) seen.push(lat.update(reported(342), t, false));
  const steps = seen.slice(1).map((ms, i) => Math.abs(ms - seen[i]));
  assert.ok(Math.max(...steps) <= 0.05 * 16 + 1e-9, `largest step ${Math.max(...steps)} ms`);
  assert.equal(seen.at(-1), 342); // 300 ms in 6 s, once the median has turned
  // and at the next pause the rest is taken at once
  const lat2 = new OutputLatency();
  for (let t = 0; t < 1000; t += 16) lat2.update(reported(42), t, false);
  for (let t = 1000; t < 2000; t += 16) lat2.update(reported(342), t, false);
  assert.ok(lat2.ms < 342);
  lat2.update(reported(342), 2000, true);
  assert.equal(lat2.ms, 342);
});

test("an impossible reading is not taken", () => {
  const lat = new OutputLatency();
  lat.update(reported(42), 0, true);
  for (const ms of [NaN, -5, 1e308, Infinity]) lat.update(reported(ms), 16, true);
  assert.equal(lat.ms, 42);
});
