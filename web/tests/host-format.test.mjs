// The host desk's figures as text, and how good each is (the class its cell is drawn with).
import assert from "node:assert/strict";
import { test } from "node:test";

import { clock, crossModal, ms, outputLatency, share, signedMs } from "../static/host/format.js";
import { fpsClass, lipClass } from "../static/host/grade.js";
import { FACTS } from "./facts.mjs";

const windows = FACTS.sync_windows;

test("durations read in ms, and in seconds from 10 s on; unknown is a dash", () => {
  assert.equal(ms(null), "—");
  assert.equal(ms(undefined), "—");
  assert.equal(ms(0), "0 ms");
  assert.equal(ms(412.6), "413 ms");
  assert.equal(ms(9999), "9999 ms");
  assert.equal(ms(12345), "12.3 s");
});

test("offsets carry their sign, shares read as percentages", () => {
  assert.equal(signedMs(12.4), "+12 ms");
  assert.equal(signedMs(-3.6), "-4 ms");
  assert.equal(signedMs(0), "0 ms");
  assert.equal(signedMs(null), "—");
  assert.equal(share(0.987), "99 %");
  assert.equal(share(0), "0 %");
  assert.equal(share(undefined), "—");
});

test("the show's time on air reads h:mm:ss", () => {
  assert.equal(clock(0), "0:00:00");
  assert.equal(clock(59.9), "0:00:59");
  assert.equal(clock(3 * 3600 + 7 * 60 + 5), "3:07:05");
  assert.equal(clock(30 * 3600), "30:00:00");
});

test("cross-modal offsets: text to audio, then what viewers heard and saw", () => {
  assert.equal(crossModal({}), "text→audio —");
  assert.equal(crossModal({ audio_minus_text_ms: 420 }), "text→audio 420 ms");
  const one = { audio_minus_text_ms: 420, viewers: 1, heard_minus_audio_ms: 180, picture_minus_heard_ms: -6 };
  assert.equal(crossModal(one), "text→audio 420 ms · audio→heard 180 ms · picture−heard -6 ms (1 viewer)");
  assert.match(crossModal({ ...one, viewers: 3, picture_minus_heard_ms: 4 }), /\+4 ms \(3 viewers\)$/);
});

test("the viewers' output latency: median, most, and the pages that cannot know theirs", () => {
  assert.equal(outputLatency({}), "—");
  assert.equal(outputLatency({ output_latency_ms_median: 42, output_latency_ms_max: 42 }), "42 ms");
  assert.equal(
    outputLatency({ output_latency_ms_median: 42, output_latency_ms_max: 746, output_latency_unknown: 2 }),
    "42 ms (up to 746 ms); 2 unknown",
  );
});

test("frame rates: smooth from 50, watchable from 24", () => {
  assert.deepEqual([60, 50, 49, 24, 23, null].map(fpsClass), ["good", "good", "warn", "warn", "bad", ""]);
});

test("lip-sync figures are graded by size against the ATSC window's wider side", () => {
  const widest = Math.max(...windows.atsc.map(Math.abs));
  const grade = (x) => lipClass(x, windows);
  assert.equal(grade(null), "");
  assert.equal(grade(0), "good");
  assert.equal(grade(widest), "good");
  assert.equal(grade(-widest), "good");
  assert.equal(grade(widest + 1), "warn");
  assert.equal(grade(-100), "warn");
  assert.equal(grade(100.5), "bad");
  // the window is the page's facts', not a number of its own
  const narrow = { ...windows, atsc: [-10, 5] };
  assert.equal(lipClass(12, narrow), "warn");
  assert.equal(lipClass(-10, narrow), "good");
});
