// The viseme timeline: lookups by heard sample, crossfades, rests in silence, interrupts.
import assert from "node:assert/strict";
import { test } from "node:test";

import { CaptionTrack, DrawnOnsets, Playhead, VisemeTrack, slew } from "../static/stage/lipsync.js";

const MS = 48;
const event = (frames, role = "nova") => ({ utterance_id: "u", role, sample_rate: 48000, frames });

test("the frame holding a sample names the viseme; silence around speech rests", () => {
  const t = new VisemeTrack();
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
  const t = new VisemeTrack({ blendMs: 40 });
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
  const t = new VisemeTrack();
  t.add(event([{ sample: 500, viseme: "E", duration: 500 }]));
  t.add(event([{ sample: 0, viseme: "PP", duration: 500 }]));
  assert.deepEqual(t.frames.map((f) => f.start), [0, 500]);
  assert.equal(t.visemeAt(700), "E");
});

test("an interrupt drops what follows its sample, only for its role", () => {
  const t = new VisemeTrack();
  t.add(event([{ sample: 0, viseme: "aa", duration: 1000 }, { sample: 1000, viseme: "E", duration: 1000 }]));
  t.add(event([{ sample: 0, viseme: "O", duration: 3000 }], "max"));
  t.cut(600, "nova");
  assert.equal(t.weightsAt(300).aa, 1);
  assert.deepEqual(Object.keys(t.weightsAt(1500)), ["O"]); // max's line goes on
  t.cut(600, null);
  assert.equal(t.visemeAt(700), "sil");
  assert.deepEqual(t.weightsAt(1500), {});
});

test("the planned voiced onset after a pause is found; mid-word frames are not onsets", () => {
  const t = new VisemeTrack();
  t.add(event([
    { sample: 0, viseme: "sil", duration: 1000 },
    { sample: 1000, viseme: "kk", duration: 500 },
    { sample: 1500, viseme: "aa", duration: 500 },
  ]));
  assert.equal(t.voicedOnsetBetween(0, 3000), 1000);
  assert.equal(t.voicedOnsetBetween(1200, 3000), null);
});

test("old frames are pruned as the listener moves on", () => {
  const t = new VisemeTrack();
  t.add(event([{ sample: 0, viseme: "aa", duration: 100 }, { sample: 10 * 48000, viseme: "E", duration: 100 }]));
  t.prune(5 * 48000);
  assert.equal(t.frames.length, 1);
});

test("captions show the phrase being heard and are cut by an interrupt", () => {
  const c = new CaptionTrack();
  c.add({ start_sample: 0, end_sample: 1000, text: "Hello there.", role: "nova" });
  c.add({ start_sample: 1000, end_sample: 2000, text: "Second.", role: "nova" });
  assert.equal(c.at(500, 0).text, "Hello there.");
  assert.equal(c.at(1500, 0).text, "Second.");
  c.cut(1200);
  assert.equal(c.at(1300, 0), null);
});

test("the playhead never replays what it has shown, except for a new stream", () => {
  const p = new Playhead();
  assert.equal(p.at(null), null);
  assert.equal(p.at(1000 * MS), 1000 * MS);
  assert.equal(p.at(900 * MS), 1000 * MS, "a reading that steps back holds the mouth still");
  assert.equal(p.at(1010 * MS), 1010 * MS, "and it moves on once the reading passes");
  assert.equal(p.at(5 * MS), 5 * MS, "a step back of over a second is a new stream");
  p.reset();
  assert.equal(p.at(0), 0);
});

test("an interrupt cut stays cut when the clock reading steps back", () => {
  const t = new VisemeTrack();
  t.add(event([{ sample: 0, viseme: "aa", duration: 1000 * MS }]));
  const p = new Playhead();
  assert.equal(t.weightsAt(p.at(500 * MS)).aa, 1);
  t.cut(500 * MS);
  assert.equal(t.weightsAt(450 * MS).aa, 1, "a clock read after the cut would reopen the mouth");
  assert.ok(t.weightsAt(p.at(450 * MS)).aa <= 0.5, "the held playhead keeps it closing");
});

test("a calibration is slewed at most 10 % of wall time", () => {
  assert.equal(slew(0, 60, 100), 10);
  assert.equal(slew(0, -60, 100), -10);
  assert.equal(slew(55, 60, 100), 60, "it lands on the target");
  assert.equal(slew(0, 60, -5), 0, "time never runs back");
});

test("each viseme onset drawn is measured once: how late its first frame shows it", () => {
  const t = new VisemeTrack();
  t.add(event([
    { sample: 0, viseme: "sil", duration: 100 * MS },
    { sample: 100 * MS, viseme: "aa", duration: 80 * MS },
    { sample: 180 * MS, viseme: "PP", duration: 60 * MS },
  ]));
  const m = new DrawnOnsets();
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
