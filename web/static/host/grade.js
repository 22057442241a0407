// How good a figure is, as the class its cell is drawn with: "good", "warn", "bad" ("" when
// unknown). No DOM.

/** A lip-sync figure (ms) past this, either way, is bad. */
const LIP_WARN_MS = 100;

/** Frames a second: smooth from 50, watchable from 24. */
export function fpsClass(x) {
  if (x === null || x === undefined) return "";
  return x >= 50 ? "good" : x >= 24 ? "warn" : "bad";
}

/**
 * A lip-sync figure (ms), by its size either way: good within the ATSC window's wider side
 * (`windows`: the page's facts' `sync_windows`, picture − sound), a warning to LIP_WARN_MS.
 */
export function lipClass(x, windows) {
  if (x === null || x === undefined) return "";
  const a = Math.abs(x);
  const good = Math.max(...windows.atsc.map(Math.abs));
  return a <= good ? "good" : a <= LIP_WARN_MS ? "warn" : "bad";
}
