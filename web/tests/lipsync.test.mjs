// The viseme timeline: lookups by heard sample, crossfades, rests in silence, interrupts.
import assert from "node:assert/strict";
import { test } from "node:test";

import { CaptionTrack } from "../static/stage/captions.js";
import { DrawnOnsets } from "../static/stage/drawnonsets.js";
import { lateGuardMs } from "../static/stage/lateguard.js";
import { MouthBlend, blendFactor } from "../static/stage/mouthblend.js";
import { Playhead } from "../static/stage/playhead.js";
import { RecentSet } from "../static/stage/recentset.js";
import { VisemeTrack } from "../static/stage/visemetrack.js";
import { MS, RATE } from "./facts.mjs";

const sampleRate = RATE;
const event = (frames, role = "nova") => ({ utterance_id: "u", role, sample_rate: RATE, frames });

test("the frame holding a sample names the viseme; silence around speech rests", () => {
  const t = new VisemeTrack({ sampleRate });
  t.add(event([
    { sample: 0, viseme: "sil", duration: 100 * MS },
    { sample: 100 * MS, viseme: "aa", duration: 100 * MS },
    { sample: 200 * MS, viseme: "sil", duration: 100 * MS },
  ]));
  assert.equal(t.visemeAt(150 * MS), "aa");
  assert.equal(t.visemeAt(50 * MS), "sil");
  assert.deepEqual(t.weightsAt(50 * MS), {});
  assert.equal(t.weightsAt(150 * MS).aa, 1);
  assert.deepEqual(t.weightsAt(260 * MS), {});
});

test("neighbours crossfade around their boundary and sum to one", () => {
  const t = new VisemeTrack({ sampleRate, blendMs: 40 });
  t.add(event([
    { sample: 0, viseme: "aa", duration: 100 * MS },
    { sample: 100 * MS, viseme: "O", duration: 100 * MS },
  ]));
  const mid = t.weightsAt(100 * MS);
  assert.ok(Math.abs(mid.aa - 0.5) < 1e-9 && Math.abs(mid.O - 0.5) < 1e-9, JSON.stringify(mid));
  const early = t.weightsAt(90 * MS);
  assert.ok(early.aa > early.O);
  assert.ok(Math.abs(early.aa + early.O - 1) < 1e-9);
  assert.deepEqual(Object.keys(t.weightsAt(50 * MS)), ["aa"]);
});

test("frames arriving out of order are looked up in sample order", () => {
  const t = new VisemeTrack({ sampleRate });
  t.add(event([{ sample: 500, viseme: "E", duration: 500 }]));
  t.add(event([{ sample: 0, viseme: "PP", duration: 500 }]));
  assert.deepEqual(t.frames.map((f) => f.start), [0, 500]);
  assert.equal(t.visemeAt(700), "E");
});

test("an interrupt drops what follows its sample, only for its role", () => {
  const t = new VisemeTrack({ sampleRate });
  t.add(event([{ sample: 0, viseme: "aa", duration: 1000 }, { sample: 1000, viseme: "E", duration: 1000 }]));
  t.add(event([{ sample: 0, viseme: "O", duration: 3000 }], "max"));
  t.cut(600, "nova");
  assert.equal(t.weightsAt(300).aa, 1);
  assert.deepEqual(Object.keys(t.weightsAt(1500)), ["O"]); // max's line goes on
  t.cut(600, null);
  assert.equal(t.visemeAt(700), "sil");
  assert.deepEqual(t.weightsAt(1500), {});
});

test("the server's sound onsets are found near a sample, cut and pruned with the frames", () => {
  const t = new VisemeTrack({ sampleRate });
  t.add({ ...event([{ sample: 0, viseme: "aa", duration: 9000 }]), onsets: [4000, 1000, "x"] });
  t.add({ ...event([{ sample: 0, viseme: "O", duration: 9000 }], "max"), onsets: [8000] });
  assert.deepEqual(t.onsets.map((o) => o.sample), [1000, 4000, 8000]);
  assert.equal(t.onsetNear(3500, 1000), 4000);
  assert.equal(t.onsetNear(2400, 1000), null, "none within the span");
  t.cut(2000, "nova");
  assert.equal(t.onsetNear(3500, 1000), null, "cut with its role's frames");
  assert.equal(t.onsetNear(7500, 1000), 8000, "another role's stay");
  t.prune(1000 + 2 * RATE + 1);
  assert.deepEqual(t.onsets.map((o) => o.sample), [8000]);
});

test("old frames are pruned as the listener moves on", () => {
  const t = new VisemeTrack({ sampleRate });
  t.add(event([{ sample: 0, viseme: "aa", duration: 100 }, { sample: 10 * RATE, viseme: "E", duration: 100 }]));
  t.prune(5 * RATE);
  assert.equal(t.frames.length, 1);
});

test("captions show the phrase being heard and are cut by an interrupt", () => {
  const c = new CaptionTrack({ sampleRate });
  c.add({ start_sample: 0, end_sample: 1000, text: "Hello there.", role: "nova" });
  c.add({ start_sample: 1000, end_sample: 2000, text: "Second.", role: "nova" });
  assert.equal(c.at(500, 0).text, "Hello there.");
  assert.equal(c.at(1500, 0).text, "Second.");
  c.cut(1200);
  assert.equal(c.at(1300, 0), null);
});

test("the playhead never replays what it has shown, except for a new stream", () => {
  const p = new Playhead({ sampleRate });
  assert.equal(p.at(null), null);
  assert.equal(p.at(1000 * MS), 1000 * MS);
  assert.equal(p.at(900 * MS), 1000 * MS, "a reading that steps back holds the mouth still");
  assert.equal(p.at(1010 * MS), 1010 * MS, "and it moves on once the reading passes");
  assert.equal(p.at(5 * MS), 5 * MS, "a step back of over a second is a new stream");
  p.reset();
  assert.equal(p.at(0), 0);
});

test("an interrupt cut stays cut when the clock reading steps back", () => {
  const t = new VisemeTrack({ sampleRate });
  t.add(event([{ sample: 0, viseme: "aa", duration: 1000 * MS }]));
  const p = new Playhead({ sampleRate });
  assert.equal(t.weightsAt(p.at(500 * MS)).aa, 1);
  t.cut(500 * MS);
  assert.equal(t.weightsAt(450 * MS).aa, 1, "a clock read after the cut would reopen the mouth");
  assert.ok(t.weightsAt(p.at(450 * MS)).aa <= 0.5, "the held playhead keeps it closing");
});

test("each viseme onset drawn is measured once: how late its first frame shows it", () => {
  const t = new VisemeTrack({ sampleRate });
  t.add(event([
    { sample: 0, viseme: "sil", duration: 100 * MS },
    { sample: 100 * MS, viseme: "aa", duration: 80 * MS },
    { sample: 180 * MS, viseme: "PP", duration: 60 * MS },
  ]));
  const m = new DrawnOnsets({ sampleRate });
  const drawAt = (ms, correction) => m.frame(t.frameAt(ms * MS), ms * MS, correction);
  for (const ms of [84, 101, 117, 134, 151, 167, 184, 201, 217]) drawAt(ms, 0);
  assert.deepEqual(m.take(), [1, 4], "aa first drawn 1 ms late, PP 4 ms late; silence not counted");
  assert.deepEqual(m.take(), [], "taken once");
  drawAt(230, -12);
  assert.deepEqual(m.take(), [], "the same viseme again is no new onset");
  t.add(event([{ sample: 300 * MS, viseme: "O", duration: 50 * MS }]));
  drawAt(310, -12);
  assert.deepEqual(m.take(), [-2], "the heard clock's measured error counts");
});

test("each utterance's first voiced frame drawn is timed once, on the server's clock", () => {
  const t = new VisemeTrack({ sampleRate });
  t.add({ ...event([
    { sample: 0, viseme: "sil", duration: 100 * MS },
    { sample: 100 * MS, viseme: "aa", duration: 80 * MS },
    { sample: 180 * MS, viseme: "PP", duration: 60 * MS },
  ]), utterance_id: "first" });
  t.add({ ...event([
    { sample: 300 * MS, viseme: "O", duration: 50 * MS },
    { sample: 350 * MS, viseme: "U", duration: 50 * MS },
  ]), utterance_id: "second" });
  t.add({ ...event([{ sample: 400 * MS, viseme: "E", duration: 50 * MS }]), utterance_id: "third" });
  assert.equal(t.frameAt(150 * MS).utterance_id, "first", "frames carry their utterance");
  const m = new DrawnOnsets({ sampleRate });
  const server = 1.7e12; // server clock (ms) when sample 0 is seen
  const drawAt = (ms, correction, known = true) =>
    m.frame(t.frameAt(ms * MS), ms * MS, correction, known ? server + ms : null);
  for (const ms of [84, 103, 120, 184]) drawAt(ms, -2);
  assert.deepEqual(m.takeUtterances(), [
    // drawn 3 ms after its start, less the clock's 2 ms: picture − heard = 1 ms
    { id: "first", sample: 100 * MS, heard_ms: server + 102, drawn_ms: server + 103 },
  ], "silence and later visemes of the same utterance are not its onset");
  assert.deepEqual(m.take(), [1, 2], "the lip-sync offsets are measured as before");
  assert.deepEqual(m.takeUtterances(), [], "taken once");
  drawAt(305, 0, false);
  drawAt(355, 0);
  assert.deepEqual(m.takeUtterances(), [], "without the server's clock its onset is lost, not retaken");
  drawAt(400, 0);
  assert.equal(m.takeUtterances()[0].heard_ms, server + 400);
});

test("at most so many utterances are reported at once; each is remembered", () => {
  const m = new DrawnOnsets({ sampleRate, maxUtterances: 2 });
  const frames = ["a", "b", "c"].map((id, i) => ({ start: i * MS, viseme: "aa", utterance_id: id }));
  m.frame(null, -MS); // the stream drawn before the lines begin
  for (const f of frames) m.frame(f, f.start, 0, 1000);
  assert.deepEqual(m.takeUtterances().map((u) => u.id), ["a", "b"]);
  for (const f of frames) m.frame({ ...f }, f.start, 0, 1000);
  assert.deepEqual(m.takeUtterances(), [], "an utterance drawn again (after a cut) is not new");
});

test("a line is timed from its first voiced viseme, though a slow page's frames skip it", () => {
  const t = new VisemeTrack({ sampleRate });
  t.add({ ...event([
    { sample: 0, viseme: "sil", duration: 100 * MS },
    { sample: 100 * MS, viseme: "PP", duration: 30 * MS }, // shorter than a frame at 6 fps
    { sample: 130 * MS, viseme: "aa", duration: 120 * MS },
  ]), utterance_id: "slow" });
  const m = new DrawnOnsets({ sampleRate, track: t });
  const server = 1.7e12;
  for (const ms of [23, 190]) m.frame(t.frameAt(ms * MS), ms * MS, 0, server + ms);
  assert.deepEqual(m.takeUtterances(), [
    { id: "slow", sample: 100 * MS, heard_ms: server + 100, drawn_ms: server + 190 },
  ], "the mouth opened 90 ms after the line's sound, not 60 after the viseme it showed");
  assert.deepEqual(m.take(), [60], "each viseme's own onset is still timed from its start");
  t.add({ ...event([
    { sample: 400 * MS, viseme: "PP", duration: 30 * MS },
    { sample: 430 * MS, viseme: "sil", duration: 70 * MS }, // a pause after the first word
    { sample: 500 * MS, viseme: "aa", duration: 100 * MS },
  ]), utterance_id: "paused" });
  for (const ms of [357, 450, 550]) m.frame(t.frameAt(ms * MS), ms * MS, 0, server + ms);
  assert.deepEqual(m.takeUtterances().map((u) => [u.id, u.drawn_ms - u.heard_ms]), [["paused", 150]],
    "a frame drawn in the line's pause, after its first word, was drawn after the line began");
});

test("a page that did not draw the stream as a line began does not time the line's start", () => {
  const t = new VisemeTrack({ sampleRate });
  const line = (id, at) => ({ ...event([
    { sample: at * MS, viseme: "aa", duration: 100 * MS },
    { sample: (at + 100) * MS, viseme: "E", duration: 100 * MS },
  ]), utterance_id: id });
  t.add(line("joined", 0));
  t.add(line("after a gap", 300));
  t.add(line("watched", 600));
  const m = new DrawnOnsets({ sampleRate, track: t });
  const drawAt = (ms) => m.frame(t.frameAt(ms * MS), ms * MS, 0, 1e12 + ms);
  drawAt(150); // the page's first frame, in the middle of a line
  drawAt(250);
  m.gap(); // the link went down: frames without the stream
  drawAt(450);
  drawAt(580);
  drawAt(610);
  assert.deepEqual(m.takeUtterances().map((u) => [u.id, u.drawn_ms - u.heard_ms]), [["watched", 10]]);
  drawAt(170);
  assert.deepEqual(m.takeUtterances(), [], "a line not seen starting is not timed later either");
});

test("a recent set forgets its oldest entries beyond its limit", () => {
  const s = new RecentSet(2);
  for (const x of ["a", "b", "c"]) s.add(x);
  assert.deepEqual([s.has("a"), s.has("b"), s.has("c")], [false, true, true]);
});

test("a short viseme inside a word is held under the next ones, never into silence", () => {
  const word = [
    { sample: 0, viseme: "PP", duration: 30 * MS },
    { sample: 30 * MS, viseme: "aa", duration: 150 * MS },
    { sample: 180 * MS, viseme: "sil", duration: 200 * MS },
  ];
  const plain = new VisemeTrack({ sampleRate, blendMs: 20 });
  const held = new VisemeTrack({ sampleRate, blendMs: 20, holdMs: 120 });
  plain.add(event(word));
  held.add(event(word));
  assert.equal(plain.weightsAt(80 * MS).PP, undefined); // gone 50 ms after its start
  const w = held.weightsAt(80 * MS);
  assert.ok(w.PP > 0.25 && w.aa > w.PP, JSON.stringify(w)); // the lips still press, less
  assert.ok(Math.abs(w.PP + w.aa - 1) < 1e-9);
  assert.deepEqual(Object.keys(held.weightsAt(150 * MS)), ["aa"]); // released after the hold
  const end = [{ sample: 0, viseme: "aa", duration: 30 * MS }, { sample: 30 * MS, viseme: "sil", duration: 200 * MS }];
  const last = new VisemeTrack({ sampleRate, blendMs: 20, holdMs: 120 });
  last.add(event(end));
  assert.deepEqual(last.weightsAt(60 * MS), {}); // the mouth rests with the sound
});

test("the blend factor follows the measured error: 0.9 when on time, 0.3 from 50 ms", () => {
  assert.equal(blendFactor(0), 0.9);
  assert.ok(Math.abs(blendFactor(25) - 0.6) < 1e-12);
  assert.ok(Math.abs(blendFactor(-50) - 0.3) < 1e-12);
  assert.ok(Math.abs(blendFactor(400) - 0.3) < 1e-12);
  assert.equal(blendFactor(NaN), 0.9);
});

test("the mouth eases toward the timeline, as far per second at any frame rate", () => {
  const at60 = new MouthBlend();
  assert.ok(Math.abs(at60.step({ aa: 1 }, 0, 1000 / 60).aa - 0.9) < 1e-9);
  const at30 = new MouthBlend();
  const a = at30.step({ aa: 1 }, 0, 1000 / 30).aa;
  assert.ok(Math.abs(a - 0.99) < 1e-9, a); // one 30 fps frame = two 60 fps frames
  const slow = new MouthBlend();
  assert.ok(Math.abs(slow.step({ aa: 1 }, 80, 1000 / 60).aa - 0.3) < 1e-9);
  // a closed mouth is reached, not approached forever
  for (let i = 0; i < 10; i++) at60.step({}, 0, 1000 / 60);
  assert.deepEqual(at60.shown, {});
});

test("read ahead by its lead, the eased mouth crosses half open when the timeline does", () => {
  for (const errorMs of [0, 10, 30, 60]) {
    const blend = new MouthBlend();
    const lead = blend.leadMs(errorMs);
    const dt = 1; // ms: the continuous limit; real frames quantise around it
    const ramp = (t) => Math.min(1, Math.max(0, (t + 20) / 40)); // crosses 0.5 at t = 0
    let crossed = null;
    for (let t = -300; t < 300 && crossed === null; t += dt) {
      const w = blend.step({ aa: ramp(t + lead) }, errorMs, dt).aa ?? 0;
      if (w >= 0.5) crossed = t;
    }
    assert.ok(Math.abs(crossed) <= 1, `error ${errorMs} ms: crossed at ${crossed} ms`);
  }
});

test("drawn in frames, the mouth is read ahead by the frames' own lag, not the continuous one", () => {
  // the mean crossing (between the frames either side of it) over frame phases
  const crossing = (errorMs, dt, lead) => {
    let sum = 0;
    let n = 0;
    for (let phase = 0; phase < dt; phase += dt / 8) {
      const blend = new MouthBlend();
      let prev = null;
      for (let t = -300 + phase; t < 300; t += dt) {
        const w = blend.step({ aa: Math.min(1, Math.max(0, (t + lead + 20) / 40)) }, errorMs, dt).aa ?? 0;
        if (w >= 0.5) {
          sum += prev === null ? t : prev.t + ((0.5 - prev.w) / (w - prev.w)) * dt;
          n++;
          break;
        }
        prev = { t, w };
      }
    }
    return sum / n;
  };
  for (const dt of [1000 / 60, 25, 40]) {
    const blend = new MouthBlend();
    assert.ok(crossing(0, dt, blend.leadMs(0)) < -5, "the continuous lag leads too far");
    for (const errorMs of [0, 30]) {
      const at = crossing(errorMs, dt, blend.leadMs(errorMs, dt));
      assert.ok(Math.abs(at) < 2, `error ${errorMs} ms, ${dt} ms frames: crossed at ${at} ms`);
    }
  }
});

test("a viseme shorter than a frame can go unseen; held, it is seen", () => {
  const line = [
    { sample: 0, viseme: "aa", duration: 100 * MS },
    { sample: 100 * MS, viseme: "PP", duration: 12 * MS },
    { sample: 112 * MS, viseme: "O", duration: 100 * MS },
  ];
  const seenAt = (holdMs) => {
    const t = new VisemeTrack({ sampleRate, holdMs });
    t.add(event(line));
    for (let ms = 5; ms < 212; ms += 40) t.markSeen(ms * MS, t.weightsAt(ms * MS)); // 25 fps
    t.prune(10_000 * MS);
    return t.counted;
  };
  assert.deepEqual(seenAt(0), { planned: 3, seen: 2 }); // the p fell between two frames
  assert.deepEqual(seenAt(120), { planned: 3, seen: 3 });
});

test("the lips lead by what half a frame exceeds the late budget, and only then", () => {
  // a viseme shows up to half a frame after its start: at 60 fps that stays inside ATSC's
  // 15 ms late side, at 30 and 20 fps the page draws the lips ahead by the rest of 12 ms
  assert.equal(lateGuardMs(1000 / 60), 0);
  assert.equal(lateGuardMs(24), 0);
  assert.ok(Math.abs(lateGuardMs(1000 / 30) - 4.67) < 0.01, String(lateGuardMs(1000 / 30)));
  assert.equal(lateGuardMs(50), 13);
  assert.equal(lateGuardMs(40, 10), 10);
  // a stalled page (or no frames yet) is not led by seconds
  assert.equal(lateGuardMs(5000), 38);
  assert.equal(lateGuardMs(NaN), 0);
});

test("a mouth opening from rest opens within 10 ms of its start; inside a phrase it crossfades", () => {
  const t = new VisemeTrack({ sampleRate, blendMs: 40 });
  t.add(event([
    { sample: 0, viseme: "sil", duration: 100 * MS },
    { sample: 100 * MS, viseme: "aa", duration: 100 * MS },
    { sample: 200 * MS, viseme: "O", duration: 100 * MS },
  ]));
  assert.deepEqual(t.weightsAt(89 * MS), {});
  assert.ok(Math.abs(t.weightsAt(100 * MS).aa - 0.5) < 1e-9);
  assert.equal(t.weightsAt(110 * MS).aa, 1);
  // the next viseme takes the whole 40 ms
  assert.ok(Math.abs(t.weightsAt(185 * MS).O - 0.125) < 1e-9, JSON.stringify(t.weightsAt(185 * MS)));
  // a line with no silence frame before it opens from rest too
  const bare = new VisemeTrack({ sampleRate, blendMs: 40 });
  bare.add(event([{ sample: 100 * MS, viseme: "E", duration: 100 * MS }]));
  assert.deepEqual(bare.weightsAt(89 * MS), {});
  assert.equal(bare.weightsAt(110 * MS).E, 1);
});

test("where two roles overlap, each mouth follows its own voice and holds only its own shapes", () => {
  const t = new VisemeTrack({ sampleRate, holdMs: 120 });
  t.add(event([
    { sample: 0, viseme: "aa", duration: 300 * MS },
    { sample: 300 * MS, viseme: "PP", duration: 30 * MS },
    { sample: 330 * MS, viseme: "sil", duration: 200 * MS },
  ], "nova"));
  t.add(event([
    { sample: 200 * MS, viseme: "sil", duration: 100 * MS },
    { sample: 300 * MS, viseme: "O", duration: 30 * MS },
    { sample: 330 * MS, viseme: "E", duration: 300 * MS },
  ], "orion"));
  // before orion comes in: nova's mouth only
  assert.deepEqual(t.weightsAt(100 * MS, "nova"), { aa: 1 });
  assert.deepEqual(t.weightsAt(100 * MS, "orion"), {});
  // over the overlap each has its own shape; together (what the page measures) both
  const [nova, orion] = [t.weightsAt(315 * MS, "nova"), t.weightsAt(315 * MS, "orion")];
  assert.ok(nova.PP > 0 && Object.keys(nova).every((v) => ["aa", "PP"].includes(v)), nova);
  assert.ok(orion.O > 0 && Object.keys(orion).every((v) => ["O", "E"].includes(v)), orion);
  assert.ok("PP" in t.weightsAt(315 * MS) && "O" in t.weightsAt(315 * MS));
  // nova's short PP is not held into orion's E (another voice's frame after it)
  assert.deepEqual(t.weightsAt(400 * MS, "nova"), {});
  assert.ok(t.weightsAt(400 * MS, "orion").E > 0.5); // under its own O, held
});

test("a report carries each lip-sync offset with the role whose mouth it was and its frame's hold", () => {
  const m = new DrawnOnsets({ sampleRate });
  const frame = (start, viseme, role) => ({ start, viseme, role, utterance_id: role });
  m.frame(frame(0, "aa", "nova"), MS);
  m.frame(frame(100 * MS, "E", "orion"), 102 * MS);
  m.frame(frame(200 * MS, "O"), 203 * MS, 0, null, true); // an event without a role, a held frame
  const report = m.report();
  assert.deepEqual(report.lipsync_onsets_ms, [1, 2, 3]);
  assert.deepEqual(report.lipsync_onset_roles, ["nova", "orion", null]);
  assert.deepEqual(report.lipsync_onsets_held, [false, false, true]);
  assert.equal(report.utterance_onsets.length, 0, "no server clock yet: no utterance times");
  const again = m.report();
  assert.deepEqual([again.lipsync_onset_roles, again.lipsync_onsets_held], [[], []], "taken once");
});
