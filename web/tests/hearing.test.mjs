// The heard clock: playout readings mapped to broadcast samples, following the jitter buffer.
import assert from "node:assert/strict";
import { test } from "node:test";

import { HeardClock, Timeline } from "../static/stage/heardclock.js";
import { OutputTimestamps, analyserSize, renderedAt, settledRead } from "../static/stage/hearing.js";
import { reportedLatency } from "../static/stage/latency.js";
import { OnsetCalibration } from "../static/stage/onsetcalibration.js";
import { FACTS, MS, RATE } from "./facts.mjs";

const sampleRate = RATE;
// the page's onset calibration, with the server's thresholds as the page has them
const calibration = () =>
  new OnsetCalibration({ sampleRate, loud: FACTS.onsets.loud, quiet: FACTS.onsets.quiet });

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
  const clock = new HeardClock(rx, { sampleRate });
  for (rx.now = 1000; rx.now <= 1500; rx.now += 20) clock.poll();
  assert.equal(clock.sampleAt(1500), (1500 - 60) * MS);
});

test("the clock follows a jitter buffer that grows, within a quarter second", () => {
  const rx = fakeReceiver();
  const clock = new HeardClock(rx, { sampleRate });
  for (rx.now = 1000; rx.now < 2000; rx.now += 20) clock.poll();
  rx.delay = 160; // speech started: the buffer stretched by 100 ms
  for (; rx.now <= 2300; rx.now += 20) clock.poll();
  const errorMs = (clock.sampleAt(2300) - (2300 - 160) * MS) / MS;
  assert.ok(Math.abs(errorMs) < 10, `the clock is ${errorMs} ms off a third of a second later`);
});

test("a step of the jitter buffer is followed after three readings, not half a window", () => {
  for (const grow of [130, -80]) {
    const rx = fakeReceiver();
    const clock = new HeardClock(rx, { sampleRate });
    for (rx.now = 1000; rx.now < 2000; rx.now += 20) clock.poll();
    rx.delay += grow;
    for (let i = 0; i < 3; i++, rx.now += 20) clock.poll();
    const t = rx.now - 20;
    const errorMs = (clock.sampleAt(t) - (t - rx.delay) * MS) / MS;
    assert.ok(Math.abs(errorMs) < 1, `${grow} ms step: the clock is ${errorMs} ms off`);
  }
});

test("readings scattered by a frame are no step", () => {
  const rx = fakeReceiver();
  const clock = new HeardClock(rx, { sampleRate });
  for (rx.now = 1000; rx.now < 2000; rx.now += 20) {
    rx.delay = 60 + ((rx.now / 20) % 3) * 5; // 60, 65, 70 ms: playout quantised to frames
    clock.poll();
  }
  assert.equal(clock.readings.length > 10, true);
});

test("the calibration shifts the clock", () => {
  const rx = fakeReceiver();
  const clock = new HeardClock(rx, { sampleRate });
  for (rx.now = 1000; rx.now <= 1200; rx.now += 20) clock.poll();
  clock.calibrationMs = 15;
  assert.equal(clock.sampleAt(1200), (1200 - 60 - 15) * MS);
});

test("what enters the page is heard a look-ahead later", () => {
  const rx = fakeReceiver();
  const clock = new HeardClock(rx, { sampleRate, lookaheadMs: 100 });
  for (rx.now = 1000; rx.now <= 1200; rx.now += 20) clock.poll();
  assert.equal(clock.rawSampleAt(1200), (1200 - 60) * MS);
  assert.equal(clock.sampleAt(1300), (1200 - 60) * MS);
});

test("what is rendered is heard the output latency later", () => {
  const rx = fakeReceiver();
  const clock = new HeardClock(rx, { sampleRate, lookaheadMs: 100 });
  for (rx.now = 1000; rx.now <= 1200; rx.now += 20) clock.poll();
  clock.outputLatencyMs = 42;
  assert.equal(clock.heardDelayMs, 142);
  // what entered at 1200 is rendered out of the look-ahead at 1300 and leaves the speakers at 1342
  assert.equal(clock.renderedSampleAt(1300), (1200 - 60) * MS);
  assert.equal(clock.sampleAt(1342), (1200 - 60) * MS);
  clock.outputLatencyMs = 746; // a quarter-second latency hint in Chromium: 186 + 560 ms
  assert.equal(clock.sampleAt(2046), (1200 - 60) * MS);
});

test("a sample is heard as it was mapped when it entered, though the buffer stepped since", () => {
  const rx = fakeReceiver();
  const clock = new HeardClock(rx, { sampleRate, lookaheadMs: 100 });
  clock.outputLatencyMs = 746;
  for (rx.now = 1000; rx.now <= 2000; rx.now += 20) clock.poll();
  const before = (2000 - 60) * MS; // what entered at 2000
  rx.delay = 160; // then the jitter buffer grew by 100 ms as speech started
  for (; rx.now <= 2400; rx.now += 20) clock.poll();
  // heard 846 ms after it entered: by the mapping of its own time, not of the step's
  assert.equal(clock.sampleAt(2000 + 846), before);
  // what entered after the step is heard by the step, from its first reading on
  assert.equal(clock.sampleAt(2020 + 846), (2020 - 160) * MS);
  assert.equal(clock.sampleAt(2400 + 846), (2400 - 160) * MS);
});

test("an anchor moves what entered from its onset's quiet on, not what is still to be heard", () => {
  const rx = fakeReceiver();
  const clock = new HeardClock(rx, { sampleRate, lookaheadMs: 100 });
  clock.outputLatencyMs = 746;
  for (rx.now = 1000; rx.now <= 3000; rx.now += 20) clock.poll();
  clock.calibrationMs = 5;
  clock.calibrate(25, 2500); // an onset at 2550 ms, found now (3000): the last line still plays
  assert.equal(clock.calibrationMs, 25);
  assert.equal(clock.sampleAt(2400 + 846), (2400 - 60 - 5) * MS);
  assert.equal(clock.sampleAt(2550 + 846), (2550 - 60 - 25) * MS);
  clock.calibrate(25, 2900); // the same anchor again changes nothing
  assert.equal(clock.sampleAt(2600 + 846), (2600 - 60 - 25) * MS);
});

test("a timeline keeps what was in force at each moment, a later finding replacing it", () => {
  const line = new Timeline();
  assert.equal(line.at(0), undefined);
  line.set(100, "a");
  line.set(200, "b");
  line.set(300, "c");
  assert.deepEqual([line.at(50), line.at(100), line.at(250), line.at(999)], ["a", "a", "b", "c"]);
  line.set(150, "d"); // found later to hold from 150
  assert.deepEqual([line.at(120), line.at(150), line.at(300)], ["a", "d", "d"]);
  line.set(400, "e", 350); // forgets what ended before 350, bar what was in force then
  assert.deepEqual(line.points.map((p) => p.value), ["d", "e"]);
  assert.equal(line.last(), "e");
});

/**
 * Sound entering the page: quiet, then speech from `onsetMs` (a 200 Hz tone at 0.3), read the
 * way the page reads its analyser: the last `size` samples at each frame, `frameMs` apart. The
 * server announced that onset at broadcast sample 1000 ms: the clock reads it 3.7 ms early
 * by default. Returns the calibration.
 */
function listenAt(frameMs, size, onsetMs = 1003.7, rampMs = 0, clock = rawClock()) {
  const cal = calibration();
  const buf = new Float32Array(size);
  for (let now = 500; now < 1600; now += frameMs) {
    for (let i = 0; i < size; i++) {
      const t = now - (size - i) / MS;
      buf[i] = sound(t, onsetMs, rampMs);
    }
    cal.step(buf, now, clock, announced(1000 * MS), MS);
  }
  return cal;
}

/**
 * A clock reading raw sample t·MS at time t, rendered `lookaheadMs` later and heard
 * `outputLatencyMs` after that.
 */
function rawClock(lookaheadMs = 100, outputLatencyMs = 0) {
  const clock = { calibrationMs: 0, lookaheadMs, outputLatencyMs, rawSampleAt: (t) => t * MS };
  clock.heardDelayMs = lookaheadMs + outputLatencyMs;
  clock.sampleAt = (t) => clock.rawSampleAt(t - clock.heardDelayMs) - clock.calibrationMs * MS;
  return clock;
}

/** A timeline whose only announced sound onsets are `samples`. */
function announced(...samples) {
  return {
    onsetNear: (s, span) => samples.find((x) => Math.abs(x - s) <= span) ?? null,
  };
}

function sound(t, onsetMs, rampMs) {
  if (t < onsetMs) return 0;
  const envelope = rampMs ? Math.min(1, (t - onsetMs) / rampMs) : 1;
  return 0.3 * envelope * Math.sin((2 * Math.PI * 200 * (t - onsetMs)) / 1000 + 0.5);
}

test("a speech onset is timed to the sample at any frame rate the buffer spans", () => {
  for (const frameMs of [1000 / 60, 1000 / 33, 1000 / 20, 80]) {
    const { errors } = listenAt(frameMs, 4096);
    assert.equal(errors.length, 1, `${frameMs} ms frames: ${errors}`);
    assert.ok(Math.abs(errors[0] - 3.7) < 0.1, `${frameMs} ms frames: ${errors[0]} ms`);
  }
});

test("frames further apart than the buffer forget the quiet rather than time an onset late", () => {
  // 21 ms of samples every 50 ms: the onset may fall in a gap, and is then not matched at all
  for (const onsetMs of [1003.7, 1020.2, 1041.9]) {
    const { errors } = listenAt(50, 1024, onsetMs);
    assert.ok(errors.every((e) => Math.abs(e - (onsetMs - 1000)) < 0.1), `${onsetMs}: ${errors}`);
  }
});

test("a soft rise before the first loud sample does not hide the onset", () => {
  let loudAt = 1003.7; // when the 20 ms rise first passes the onset amplitude
  while (Math.abs(sound(loudAt, 1003.7, 20)) <= FACTS.onsets.loud) loudAt += 1 / MS;
  const { errors } = listenAt(1000 / 30, 4096, 1003.7, 20);
  assert.equal(errors.length, 1, String(errors));
  assert.ok(Math.abs(errors[0] - (loudAt - 1000)) < 0.1, `${errors[0]} vs ${loudAt - 1000}`);
});

test("an onset found ahead anchors the clock; heard, it is checked against the clock then", () => {
  const cal = listenAt(1000 / 50, 4096);
  assert.ok(Math.abs(cal.anchorMs() - 3.7) < 0.1, `anchor ${cal.anchorMs()}`);
  // this clock was never anchored: heard, the onset is 3.7 ms off
  assert.ok(Math.abs(cal.offsetMs() - 3.7) < 0.1, `offset ${cal.offsetMs()}`);
  // a page that takes the anchor as it comes hears the onset on time
  const clock = rawClock();
  const anchored = calibration();
  const buf = new Float32Array(4096);
  for (let now = 500; now < 1600; now += 20) {
    for (let i = 0; i < buf.length; i++) buf[i] = sound(now - (buf.length - i) / MS, 1003.7, 0);
    anchored.step(buf, now, clock, announced(1000 * MS), MS);
    clock.calibrationMs = anchored.anchorMs() ?? 0;
  }
  assert.ok(Math.abs(anchored.offsetMs()) < 0.1, `offset ${anchored.offsetMs()}`);
});

test("an onset is judged when it leaves the speakers, by the clock in force then", () => {
  for (const latencyMs of [0, 42, 746]) {
    const clock = rawClock(100, latencyMs);
    const cal = calibration();
    const buf = new Float32Array(4096);
    for (let now = 500; now < 1000 + 100 + latencyMs + 100; now += 20) {
      for (let i = 0; i < buf.length; i++) buf[i] = sound(now - (buf.length - i) / MS, 1003.7, 0);
      cal.step(buf, now, clock, announced(1000 * MS), MS);
      clock.calibrationMs = cal.anchorMs() ?? 0;
    }
    assert.ok(Math.abs(cal.offsetMs()) < 0.1, `${latencyMs} ms: offset ${cal.offsetMs()}`);
    // a clock that forgot the device (heard as rendered) is off by all of it
    const deaf = rawClock(100, latencyMs);
    deaf.sampleAt = (t) => deaf.rawSampleAt(t - 100) - deaf.calibrationMs * MS;
    const judged = calibration();
    for (let now = 500; now < 1000 + 100 + latencyMs + 100; now += 20) {
      for (let i = 0; i < buf.length; i++) buf[i] = sound(now - (buf.length - i) / MS, 1003.7, 0);
      judged.step(buf, now, deaf, announced(1000 * MS), MS);
      deaf.calibrationMs = judged.anchorMs() ?? 0;
    }
    assert.ok(Math.abs(judged.offsetMs() - latencyMs) < 0.1, `${latencyMs}: ${judged.offsetMs()}`);
  }
});

test("an onset far from the anchor is not taken alone; a second like it is", () => {
  const cal = calibration();
  const clock = rawClock();
  const buf = new Float32Array(4096);
  const onsets = [];
  let now = 0;
  // lines 1.5 s apart: the clock 5 ms ahead of each, then 80 ms ahead from the fourth on
  const errorsMs = [5, 5, 5, 85, 85, 85];
  const track = announced(...errorsMs.map((e, k) => (1000 + 1500 * k - e) * MS));
  errorsMs.forEach((_, k) => onsets.push(1000 + 1500 * k));
  const anchors = [];
  for (let k = 0; k < onsets.length; k++) {
    for (; now < onsets[k] + 200; now += 20) {
      for (let i = 0; i < buf.length; i++) {
        const t = now - (buf.length - i) / MS;
        buf[i] = onsets.some((o) => t >= o && t < o + 400) ? sound(t, onsets[k], 0) : 0;
      }
      cal.step(buf, now, clock, track, MS);
    }
    anchors.push(Math.round(cal.anchorMs()));
  }
  assert.deepEqual(anchors, [5, 5, 5, 5, 85, 85]);
});

test("an onset heard before its announcement is matched when the announcement comes", () => {
  const cal = calibration();
  const clock = rawClock();
  const buf = new Float32Array(4096);
  const onsets = [];
  const track = { onsetNear: (s, span) => onsets.find((x) => Math.abs(x - s) <= span) ?? null };
  for (let now = 500; now < 1200; now += 20) {
    if (now >= 1060) onsets[0] = 1000 * MS; // handled three frames after the sound entered
    for (let i = 0; i < buf.length; i++) buf[i] = sound(now - (buf.length - i) / MS, 1003.7, 0);
    cal.step(buf, now, clock, track, MS);
  }
  assert.ok(Math.abs(cal.anchorMs() - 3.7) < 0.1, String(cal.anchorMs()));
  // too late to matter (it would be heard before the mouth could follow): given up
  const late = calibration();
  onsets.length = 0;
  for (let now = 500; now < 1200; now += 20) {
    if (now >= 1080) onsets[0] = 1000 * MS;
    for (let i = 0; i < buf.length; i++) buf[i] = sound(now - (buf.length - i) / MS, 1003.7, 0);
    late.step(buf, now, clock, track, MS);
  }
  assert.equal(late.anchorMs(), null);
});

/** renderedAt as the page calls it: with the latency its context reports, from one reading. */
function timed(ctx, now, latencyMs = reportedLatency(ctx).ms) {
  return renderedAt(ctx, ctx.currentTime, now, latencyMs, new OutputTimestamps().update(ctx, now));
}

test("a buffer is timed when the context rendered its newest sample, not when it was read", () => {
  // output timestamp: context time 10.000 s is played at 5000 ms; rendering runs 42 ms ahead
  const ctx = { currentTime: 10.05, baseLatency: 0.01, outputLatency: 0.032,
    getOutputTimestamp: () => ({ contextTime: 10, performanceTime: 5000 }) };
  // 10.05 s is played at 5050 ms and was rendered 42 ms before: read at 5015 ms, 7 ms stale
  assert.ok(Math.abs(timed(ctx, 5015) - 5008) < 1e-9, String(timed(ctx, 5015)));
  // before the context plays, or with a mapping from the future or long gone: the read's time
  assert.equal(timed({ ...ctx, getOutputTimestamp: () => ({ contextTime: 0, performanceTime: 0 }) }, 5015), 5015);
  assert.equal(timed(ctx, 5000), 5000);
  assert.equal(timed(ctx, 5200), 5200);
  assert.equal(timed({ currentTime: 1 }, 77), 77);
});

test("a context that renders a quarter second at once: its buffers are still timed", () => {
  // latencyHint 0.25 in Chromium: 186 ms bursts, 560 ms output latency; the output timestamp
  // is updated once a burst, so the newest sample was rendered up to a burst before the read
  const ctx = { currentTime: 20.0, baseLatency: 0.186, outputLatency: 0.56, sampleRate: RATE,
    getOutputTimestamp: () => ({ contextTime: 19.263, performanceTime: 9000 }) };
  // 20.0 s is played at 9737 ms, rendered 746 ms before: at 8991 ms, read 150 ms later
  assert.ok(Math.abs(timed(ctx, 9141) - 8991) < 1e-6, String(timed(ctx, 9141)));
  // timed by the figure the page passes (the output timestamp's lag, where none is reported)
  assert.ok(Math.abs(timed(ctx, 9141, 737) - 9000) < 1e-6);
  assert.equal(timed(ctx, 9600), 9600); // older than two bursts and more: not believed
  // its analyser spans a burst and a frame down to 2 fps (a starved page's): no sample falls
  // between two reads; at the broadcast's rate that is the most an analyser holds
  assert.equal(analyserSize(ctx), 32768);
  assert.equal(analyserSize({ baseLatency: 0.01, sampleRate: RATE }), 32768);
  const size = analyserSize({ baseLatency: 0.01, sampleRate: 16000 });
  assert.equal(size, 8192);
  assert.ok((size / 16000) * 1000 >= 510, "a burst and half a second");
  // a context that does not say its rate is taken at the broadcast's
  assert.equal(analyserSize({ baseLatency: 0.186 }, RATE), 32768);
});

test("an onset at a burst's edge is found once and on time, through jittery timestamps", () => {
  // latencyHint 0.05 in Chromium: 2507-sample bursts, 212 ms of latency, and each output
  // timestamp up to 8 ms off the line the others lie on
  const burst = 2507;
  const latencyMs = 212;
  const origin = 1000; // context time 0 is played at 1000 ms
  const jitter = [0, 8, -7, 3, -8, 6, -2, 7, -5, 1];
  for (const onsetBurst of [20, 21, 22, 23]) {
    const onsetCtx = (onsetBurst * burst) / MS; // ms of context time: a burst's first sample
    const ctx = { currentTime: 0, baseLatency: 0.0522, outputLatency: 0.16, sampleRate: RATE };
    let k = 0;
    const timestamps = new OutputTimestamps();
    const cal = calibration();
    const buf = new Float32Array(8192);
    const clock = rawClock(100);
    const track = announced(Math.round((origin + onsetCtx - latencyMs) * MS)); // render time
    for (let now = 1000; now < 2500; now += 1000 / 60) {
      // what the device will have played by `now + latencyMs`, rendered in whole bursts
      const rendered = Math.floor((now + latencyMs - origin) / (burst / MS)) * burst;
      ctx.currentTime = rendered / RATE;
      const stamp = { contextTime: ctx.currentTime - 0.2, performanceTime: 0 };
      stamp.performanceTime = origin + stamp.contextTime * 1000 + jitter[k++ % jitter.length];
      ctx.getOutputTimestamp = () => stamp;
      for (let i = 0; i < buf.length; i++) {
        const c = (rendered - buf.length + i) / MS;
        buf[i] = sound(c, onsetCtx, 0);
      }
      const end = renderedAt(ctx, ctx.currentTime, now, latencyMs, timestamps.update(ctx, now));
      cal.step(buf, end, clock, track, MS);
    }
    assert.equal(cal.errors.length, 1, `burst ${onsetBurst}: ${cal.errors}`);
    assert.ok(Math.abs(cal.errors[0]) < 2, `burst ${onsetBurst}: ${cal.errors[0]} ms off`);
  }
});

test("the output timestamps start afresh for another device", () => {
  const stamps = new OutputTimestamps();
  // context time 0.9 s is played at 5000 ms: context time 0 at 4100 ms
  const at = (performanceTime) => ({
    currentTime: 1, getOutputTimestamp: () => ({ contextTime: 0.9, performanceTime }),
  });
  for (let t = 0; t < 500; t += 16) stamps.update(at(5000 + t / 1e6), t);
  assert.ok(Math.abs(stamps.update(at(5000), 500) - 4100) < 0.01);
  stamps.reset(); // a headset: the same context time is now played 300 ms later
  assert.ok(Math.abs(stamps.update(at(5300), 516) - 4400) < 0.01);
});

test("an analyser's samples are timed only where the audio thread held still across the copy", () => {
  // a quarter-second burst rendered a quantum at a time: the page's copy ends at one quantum
  // and currentTime, read after it, at a later one; timed by that, an onset came out late
  let written = 20; // the context time the analyser's samples end at
  let rendering = 6; // quanta the audio thread renders while the main thread copies
  const ctx = { get currentTime() { return written; } };
  const copy = () => {
    if (rendering > 0) {
      rendering -= 3;
      written += (3 * 128) / RATE;
    }
  };
  // two copies in the middle of the burst are not believed; the third ends where it says
  assert.equal(settledRead(ctx, copy), written);
  assert.ok(Math.abs(written - (20 + 768 / RATE)) < 1e-12);
  // a burst still rendering after three copies: nothing is timed this frame
  rendering = 100;
  let copies = 0;
  assert.equal(settledRead(ctx, () => { copies++; copy(); }), null);
  assert.equal(copies, 3);
});
