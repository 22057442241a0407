// The facts the pages share with the server (server/facts.py): the broadcast's sample rate,
// the viseme set, what counts as a sound onset, the lip-sync windows, the text limits and the
// cast (each role's name and look, left to right on the stage).
// Python defines each once and renders them into the page as JSON, in
// <script type="application/json" id="allnighter-facts">; this module reads that element, once.
// No module keeps a copy: the page's entry module hands them on as parameters, so a test
// passes its own (web/tests/facts.json, which a pytest holds to the server's).

export const FACTS_ELEMENT = "allnighter-facts";

/** The facts in `text` (the element's JSON), checked: a page without them cannot run. */
export function parseFacts(text) {
  let facts;
  try {
    facts = JSON.parse(text);
  } catch (err) {
    throw new Error(`the page's facts are not JSON: ${err.message}`);
  }
  const bad = (what) => {
    throw new Error(`the page's facts lack ${what}`);
  };
  if (!positive(facts?.sample_rate)) bad("a sample rate");
  const v = facts.visemes;
  if (!Array.isArray(v) || !v.length || !v.every((x) => typeof x === "string")) bad("the visemes");
  const o = facts.onsets ?? {};
  if (!positive(o.loud) || !positive(o.quiet) || !positive(o.quiet_ms)) bad("the onset thresholds");
  const w = facts.sync_windows ?? {};
  if (!window2(w.atsc) || !window2(w.ebu_r37)) bad("the sync windows");
  const t = facts.text_limits ?? {};
  if (!positive(t.say) || !positive(t.chat)) bad("the text limits");
  const cast = facts.cast;
  if (!Array.isArray(cast) || !cast.length || !cast.every((c) => typeof c?.name === "string" && c.look)) bad("the cast");
  return deepFreeze(facts);
}

let read = null;

/** The facts of this page (read from its element the first time, then kept). */
export function pageFacts(doc = globalThis.document) {
  read ??= parseFacts(doc.getElementById(FACTS_ELEMENT)?.textContent ?? "");
  return read;
}

function positive(x) {
  return Number.isFinite(x) && x > 0;
}

function window2(w) {
  return Array.isArray(w) && w.length === 2 && w.every(Number.isFinite) && w[0] <= w[1];
}

function deepFreeze(x) {
  if (x && typeof x === "object") for (const v of Object.values(x)) deepFreeze(v);
  return Object.freeze(x);
}
