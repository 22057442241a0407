// The facts the pages share with the server: read from the page once, and nowhere copied.
// (tests/unit/test_facts.py checks that the pages carry the server's, and facts.json too.)
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

import { parseFacts, pageFacts } from "../static/common/facts.js";
import { CaptionTrack } from "../static/stage/captions.js";
import { DrawnOnsets } from "../static/stage/drawnonsets.js";
import { shapeless } from "../static/stage/face.js";
import { HeardClock } from "../static/stage/heardclock.js";
import { OnsetCalibration } from "../static/stage/onsetcalibration.js";
import { Playhead } from "../static/stage/playhead.js";
import { VisemeTrack } from "../static/stage/visemetrack.js";
import { FACTS, RATE } from "./facts.mjs";

const WEB = new URL("../", import.meta.url);
const TEXT = JSON.stringify(FACTS);

/** Every page and browser module: [path under web/, its text]. */
function sources() {
  const out = [];
  for (const name of readdirSync(WEB)) if (name.endsWith(".html")) out.push(name);
  for (const entry of readdirSync(new URL("static/", WEB), { recursive: true })) {
    if (entry.endsWith(".js")) out.push(`static/${entry}`);
  }
  return out.map((path) => [path, readFileSync(new URL(path, WEB), "utf8")]);
}

test("the page's facts are read from its element, once", () => {
  let lookups = 0;
  const doc = {
    getElementById(id) {
      lookups++;
      return id === "allnighter-facts" ? { textContent: TEXT } : null;
    },
  };
  const facts = pageFacts(doc);
  assert.deepEqual(facts, FACTS);
  assert.equal(pageFacts(doc), facts);
  assert.equal(lookups, 1);
  assert.ok(Object.isFrozen(facts.visemes) && Object.isFrozen(facts.onsets), "and kept as they came");
});

test("a page without its facts, or with part of them, fails at once and says what lacks", () => {
  assert.throws(() => parseFacts(""), /not JSON/);
  assert.throws(() => parseFacts("{}"), /sample rate/);
  const without = (key, value) => JSON.stringify({ ...JSON.parse(TEXT), [key]: value });
  assert.throws(() => parseFacts(without("visemes", [])), /visemes/);
  assert.throws(() => parseFacts(without("onsets", { loud: 0.1 })), /onset thresholds/);
  assert.throws(() => parseFacts(without("sync_windows", { atsc: [15, -45] })), /sync windows/);
  assert.throws(() => parseFacts(without("text_limits", { say: 2000 })), /text limits/);
  assert.throws(() => parseFacts(without("cast", [])), /the cast/);
  assert.throws(() => parseFacts(without("cast", [{ name: "nova" }])), /the cast/);
});

test("the stage's timing takes the sample rate and onset thresholds given; it has none of its own", () => {
  assert.throws(() => new VisemeTrack(), TypeError);
  assert.throws(() => new CaptionTrack(), TypeError);
  assert.throws(() => new Playhead(), TypeError);
  assert.throws(() => new DrawnOnsets(), TypeError);
  assert.throws(() => new HeardClock({}), TypeError);
  assert.throws(() => new OnsetCalibration({ sampleRate: RATE }), TypeError);
  // and counts in what it is given: 16 kHz samples are a third of 48 kHz ones
  const slow = new DrawnOnsets({ sampleRate: 16000 });
  slow.frame({ start: 0, viseme: "aa" }, 160);
  assert.deepEqual(slow.take(), [10]);
  const track = new VisemeTrack({ sampleRate: 16000, blendMs: 40 });
  assert.equal(track.blend, 640);
});

test("the page's onset wait is longer than the server's, so each onset it hears was announced", () => {
  const { loud, quiet, quiet_ms } = FACTS.onsets;
  const calibration = new OnsetCalibration({ sampleRate: RATE, loud, quiet });
  assert.ok(calibration.quietMs >= quiet_ms, `${calibration.quietMs} < ${quiet_ms}`);
  assert.equal(calibration.loud, loud);
  assert.equal(calibration.quiet, quiet);
});

test("the mouth has a shape for every viseme of the server's set, and rests on the first", () => {
  assert.deepEqual(shapeless(FACTS.visemes), []);
  assert.equal(FACTS.visemes[0], "sil");
  assert.deepEqual(shapeless([...FACTS.visemes, "XX"]), ["XX"]);
});

/** The facts that `text` (the file at `path` under web/) holds a copy of. */
function copiesIn(path, text) {
  const copies = [];
  const kHz = RATE / 1000;
  const rate = new RegExp(`\\b${kHz}[_,]?000\\b|\\b${kHz}e3\\b|\\b${kHz}\\s*kHz|[*/]\\s*${kHz}\\b`, "i");
  if (rate.test(text)) copies.push("the sample rate");
  // a list of visemes: three or more of their names quoted in one file
  const voiced = new Set(FACTS.visemes.slice(1));
  const quoted = new Set([...text.matchAll(/["'`](\w+)["'`]/g)].map((m) => m[1]).filter((v) => voiced.has(v)));
  if (quoted.size >= 3) copies.push("the viseme set");
  // the avatar's own shapes hold numbers of all sizes; elsewhere these are the server's
  const literal = (x) => new RegExp(`(?<![\\w.])0?${String(x).replace(/^0/, "").replace(".", "\\.")}(?![\\w.])`);
  const drawing = /stage\/(face|avatar|flatavatar)\.js$/.test(path);
  const { loud, quiet } = FACTS.onsets;
  if (!drawing && [loud, quiet].some((x) => literal(x).test(text))) copies.push("an onset threshold");
  // where text is asked for: the pages, the host desk, the stage's chat
  const asks = path.endsWith(".html") || path.startsWith("static/host/") || path.endsWith("chat.js");
  const limits = Object.values(FACTS.text_limits).map((n) => new RegExp(`\\b${n}\\b`));
  if (asks && limits.some((r) => r.test(text))) copies.push("a text limit");
  return copies;
}

test("no page or module keeps a copy of a fact", () => {
  const found = sources().flatMap(([path, text]) => copiesIn(path, text).map((c) => `${path}: ${c}`));
  assert.deepEqual(found, []);
});

test("the check finds a copy where there is one", () => {
  const kHz = RATE / 1000;
  const [, v1, v2, v3] = FACTS.visemes;
  const copies = {
    "the sample rate": [`const SAMPLE_RATE = ${RATE};`, `const R = ${kHz}_000;`, `ms * ${kHz}`, `at ${kHz} kHz`],
    "the viseme set": [`export const VISEMES = ["sil", "${v1}", "${v2}", "${v3}"];`],
    "an onset threshold": [`const LOUD = ${FACTS.onsets.loud};`, `quiet = ${FACTS.onsets.quiet}`],
    "a text limit": [`maxlength="${FACTS.text_limits.chat}"`, `\`\${n} / ${FACTS.text_limits.say}\``],
  };
  for (const [fact, texts] of Object.entries(copies)) {
    for (const text of texts) assert.deepEqual(copiesIn("static/host/x.js", text), [fact], text);
  }
  assert.deepEqual(copiesIn("static/stage/face.js", `smile: ${FACTS.onsets.loud}`), [], "the avatar's own");
  assert.deepEqual(copiesIn("static/stage/x.js", `const x = ${RATE}1; // ${kHz}0 ms`), []);
});
