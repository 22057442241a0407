// A GET /api/v1/show answer turned into what the host desk displays.
import assert from "node:assert/strict";
import { test } from "node:test";

import { describeShow, linkState, onAir, phase } from "../static/host/showview.js";
import { FACTS, RATE } from "./facts.mjs";

function utt(id, state, extra = {}) {
  return {
    id, state, role: "nova", mode: "verbatim", text: `line ${id}`, spoken_text: "", error: null,
    text_to_first_audio_ms: null, start_sample: null, cross_modal: {}, ...extra,
  };
}

/** An answer as the server gives it, `over` replacing any of its parts. */
function show(over = {}) {
  return {
    queue: [utt("q1", "queued"), utt("q2", "queued", { mode: "chat" })],
    current: null,
    recent: [
      utt("r1", "done", { text_to_first_audio_ms: 300, start_sample: 1000 }),
      utt("r2", "failed", { error: "tts hung", text_to_first_audio_ms: 500 }),
      utt("r3", "done", { mode: "chat", spoken_text: "Hello!", text_to_first_audio_ms: 400 }),
    ],
    queue_max: 4,
    viewers: {
      webrtc: 2, sockets: 3, reporting: 2, fps_median: 59.6, fps_min: 31.2,
      lipsync_offset_ms_median: -3.2, lipsync_offset_ms_worst: 60, clock_offset_ms_median: 1.4,
      dropped_frames: 7, frame_jitter_ms_worst: 4.4, output_latency_ms_median: 42,
      output_latency_ms_max: 42, output_latency_unknown: 0, lipsync_drawn_ms_p50: 4,
      lipsync_drawn_ms_p95_abs: 130, lipsync_drawn_in_atsc: 0.94, lipsync_drawn_in_r37: 1,
    },
    speech_check: null,
    chat: [
      { id: "c1", from: "ann", text: "first", time: 0, answered: true },
      { id: "c2", from: "bob", text: "<b>second</b>", time: 1, answered: false },
    ],
    health: { status: "ok", current_sample: 3723 * RATE, sample_rate: RATE },
    roles: ["nova"],
    ...over,
  };
}

test("the state pill: live, at night, falling back, or loading and at which step", () => {
  assert.deepEqual(linkState({ status: "ok" }), { state: "live", text: "live", why: "" });
  assert.equal(linkState({ status: "ok", night: true }).text, "live · night");
  assert.deepEqual(linkState({ status: "ok", fallback_level: 2 }), {
    state: "degraded", text: "live · fallback 2", why: "",
  });
  assert.deepEqual(linkState({ status: "loading", step: "loading LLM" }), {
    state: "loading", text: "loading · loading LLM", why: "",
  });
  assert.equal(linkState({}).text, "loading");
});

test("the figures of the bar: time on air, viewers, queue, median text-to-first-audio", () => {
  const v = describeShow(show(), FACTS);
  assert.equal(v.onAir, "1:02:03");
  assert.equal(v.viewerCount, "3", "the more of WebRTC listeners and connected sockets");
  assert.equal(v.queueCount, "2 / 4");
  assert.equal(v.queueFull, false);
  assert.equal(v.ttfaMedian, "400 ms");
  const full = describeShow(show({ queue_max: 2, recent: [] }), FACTS);
  assert.equal(full.queueFull, true);
  assert.equal(full.ttfaMedian, "—");
});

test("time on air is counted at the server's rate, the page's facts' when it does not say", () => {
  const h = { status: "ok", current_sample: 90 * RATE };
  assert.equal(describeShow(show({ health: h }), FACTS).onAir, "0:01:30");
  const other = { ...FACTS, sample_rate: RATE / 2 };
  assert.equal(describeShow(show({ health: h }), other).onAir, "0:03:00");
  assert.equal(describeShow(show({ health: { ...h, sample_rate: RATE } }), other).onAir, "0:01:30");
});

test("utterances: the queue in order, the last ones newest first, each with its words", () => {
  const v = describeShow(show(), FACTS);
  assert.deepEqual(v.queue.map((u) => u.id), ["q1", "q2"]);
  assert.deepEqual(v.recent.map((u) => u.id), ["r3", "r2", "r1"]);
  const [chat, failed, done] = v.recent;
  assert.equal(chat.who, "nova · prompt");
  assert.equal(chat.reply, "↳ Hello!");
  assert.equal(chat.replyHidden, false);
  assert.equal(failed.reply, "error: tts hung");
  assert.equal(done.reply, "");
  assert.equal(done.replyHidden, true);
  assert.equal(done.who, "nova · verbatim");
  assert.equal(done.ttfa, "300 ms");
  assert.equal(v.queue[0].ttfa, "");
  assert.equal(done.crossModalHidden, true);
  const measured = utt("x", "done", { cross_modal: { audio_minus_text_ms: 250 } });
  const shown = describeShow(show({ recent: [measured] }), FACTS).recent[0];
  assert.equal(shown.crossModal, "text→audio 250 ms");
  assert.equal(shown.crossModalHidden, false);
});

test("a speaking utterance is on air once its audio has started, up next before", () => {
  const now = 10 * RATE;
  const s = show({
    recent: [
      utt("a", "speaking", { start_sample: now - 5000 }),
      utt("b", "speaking", { start_sample: now - 100 }),
      utt("c", "speaking", { start_sample: now + 100 }),
      utt("d", "speaking"),
    ],
    health: { status: "ok", current_sample: now },
  });
  assert.deepEqual(s.recent.map((u) => phase(u, s)), ["on air", "on air", "up next", "up next"]);
  assert.equal(onAir(s).id, "b", "the latest started is what is heard");
  const v = describeShow(s, FACTS);
  assert.deepEqual(v.recent.map((u) => u.phaseKey), ["up-next", "up-next", "on-air", "on-air"]);
  assert.equal(v.now.id, "b");
  assert.equal(v.now.ttfa, "waiting for audio…");
  assert.equal(phase(utt("e", "done"), s), "done");
});

test("the now-speaking card: the one on air, else the current, else silence", () => {
  assert.equal(describeShow(show(), FACTS).now, null);
  const current = utt("cur", "speaking", { mode: "chat", spoken_text: "Hi", text_to_first_audio_ms: 380 });
  const v = describeShow(show({ current }), FACTS).now;
  assert.deepEqual(v, {
    id: "cur", who: "nova · prompt", ttfa: "first audio 380 ms", text: "line cur", reply: "↳ Hi",
    replyHidden: false,
  });
});

test("the viewers' figures, each graded against the page's windows", () => {
  const { reporting, figs } = describeShow(show(), FACTS).viewers;
  assert.equal(reporting, "2 reporting");
  const byLabel = Object.fromEntries(figs.map(([k, val, cls]) => [k, [val, cls]]));
  assert.deepEqual(byLabel["Median fps"], ["60", "good"]);
  assert.deepEqual(byLabel["Lowest fps"], ["31", "warn"]);
  assert.deepEqual(byLabel["Lip-sync"], ["-3 ms", "good"]);
  assert.deepEqual(byLabel["Worst sync"], ["+60 ms", "warn"]);
  assert.deepEqual(byLabel["|p95|"], ["130 ms", "bad"]);
  assert.deepEqual(byLabel["In ATSC window"], ["94 %", undefined]);
  assert.deepEqual(byLabel["Audio out latency"], ["42 ms", undefined]);
  assert.equal(figs.length, 14);
  // nobody watching: the server's nulls read as dashes, ungraded
  const nobody = Object.fromEntries(Object.keys(show().viewers).map((k) => [k, null]));
  const none = describeShow(show({ viewers: { ...nobody, webrtc: 0, sockets: 0, reporting: 0 } }), FACTS);
  assert.equal(none.viewers.reporting, "");
  assert.deepEqual(none.viewers.figs[0], ["Listening (audio)", "0", "big"]);
  assert.deepEqual(none.viewers.figs[5], ["Lip-sync", "—", ""]);
  assert.equal(none.viewerCount, "0");
});

test("the speech check: off, or its counts, drift and the phrases it flagged", () => {
  assert.deepEqual(describeShow(show(), FACTS).speechCheck, { state: "off", figs: [], flagged: [] });
  const speech_check = {
    checked: 12, skipped: 1, flagged: 1, drift_ms: -52, correction_ms: 8,
    flagged_recent: [{ id: "check-3", utterance_id: "u9", text: "a line", heard: "", wer: 0.5 }],
  };
  const c = describeShow(show({ speech_check }), FACTS).speechCheck;
  assert.equal(c.state, "12 checked · 1 skipped");
  assert.deepEqual(c.figs, [
    ["Flagged", "1", "warn"],
    ["Timing drift", "-52 ms", "warn"],
    ["Viseme correction", "+8 ms"],
  ]);
  assert.deepEqual(c.flagged, [{ id: "check-3", utteranceId: "u9", text: "a line", heard: "heard: (nothing) · WER 0.50" }]);
});

test("viewer chat: newest first, its text as sent, answered or not", () => {
  const chat = describeShow(show(), FACTS).chat;
  assert.deepEqual(chat.map((m) => [m.id, m.from, m.text, m.answered]), [
    ["c2", "bob", "<b>second</b>", false],
    ["c1", "ann", "first", true],
  ]);
  assert.equal(typeof chat[0].time, "string");
});

test("an answer not of the show's shape throws (the poll says so and goes on)", () => {
  assert.throws(() => describeShow({ recent: 5, queue: 1 }, FACTS), TypeError);
  assert.throws(() => describeShow({ viewers: {} }, FACTS), TypeError);
});

test("the night's alerts: newest first, each in its unit, against what it was over", () => {
  const alerts = [
    { series: "loop_lag", value: 1012.4, baseline: 4.2, unit: "ms", at_ms: 1000 },
    { series: "rss", value: 3 * 2 ** 30, baseline: 2 * 2 ** 30, unit: "bytes", at_ms: 2000 },
    { series: "gpu_fragmentation", value: 0.41, baseline: 0.35, unit: "share", at_ms: 3000 },
    { series: "something_new", value: 250, baseline: 100, unit: "ms", at_ms: 4000 },
  ];
  const shown = describeShow(show({ alerts }), FACTS).alerts;
  assert.deepEqual(
    shown.map((a) => [a.what, a.figure]),
    [
      ["something_new", "250 ms, over its p99 of the last minutes (100 ms)"],
      ["GPU fragmentation", "41 %, over its line (35 %)"],
      ["Server memory", "3072 MB, over its line (2048 MB)"],
      ["Event loop lag", "1012 ms, over its p99 of the last minutes (4 ms)"],
    ],
  );
  assert.equal(new Set(shown.map((a) => a.id)).size, 4);
  // an answer from a server without alerts shows none
  assert.deepEqual(describeShow(show(), FACTS).alerts, []);
});

test("the autopilot: its switch, what it did last, and the chat it refused, newest first", () => {
  const a = {
    enabled: true, last: "answer", answer_chat: "when_idle",
    refused: [
      { id: "c1", text: "this is boring", why: "blocked word: boring" },
      { id: "c2", text: "x".repeat(300), why: "longer than 200 characters" },
    ],
  };
  const v = describeShow(show({ autopilot: a }), FACTS).autopilot;
  assert.equal(v.on, true);
  assert.equal(v.state, "On · answers chat when idle; last answered a viewer");
  assert.deepEqual(v.refused.map((r) => [r.id, r.why]), [
    ["c2", "refused: longer than 200 characters"],
    ["c1", "refused: blocked word: boring"],
  ]);
  const off = describeShow(show({ autopilot: { ...a, enabled: false, last: null, refused: [] } }), FACTS);
  assert.deepEqual(off.autopilot, { on: false, state: "Off · answers chat when idle", refused: [] });
  assert.deepEqual(describeShow(show(), FACTS).autopilot, { on: false, state: "", refused: [] });
});

test("the night's ladder: the level and why on the pill's hover, and the pin's choice", () => {
  const h = {
    status: "ok", fallback_level: 2, night: true,
    fallback: { level: 2, reason: "the night window", pinned: false, night: true },
  };
  assert.deepEqual(linkState(h), {
    state: "degraded", text: "live · fallback 2", why: "fallback 2: the night window",
  });
  const v = describeShow(show({ health: { ...h, current_sample: 0, sample_rate: RATE } }), FACTS);
  assert.deepEqual(v.fallback, { choice: "auto", state: "Level 2: the night window · night window" });
  const pinned = { ...h.fallback, pinned: true, reason: "pinned by the host", night: false };
  assert.deepEqual(describeShow(show({ health: { ...h, fallback: pinned } }), FACTS).fallback, {
    choice: "2", state: "Level 2: pinned by the host",
  });
  assert.equal(linkState({ ...h, fallback: pinned }).why, "fallback 2: pinned by the host (pinned)");
});
