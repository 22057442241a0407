// How far ahead of the sound a slow frame rate forces the lips.

/**
 * How far ahead of the sound (ms) a frame rate forces the lips. A frame shows a viseme up to
 * half its display interval after its start, and ATSC IS-191 lets the picture lag the sound by
 * at most 15 ms: at 60 fps half a frame (8 ms) is well inside that, at 30 fps (17 ms) it is
 * not. Beyond `budgetMs` of lateness (what leaves the heard clock a few ms) the lips are drawn
 * that much earlier: the figure spreads over the window's roomier early side instead.
 */
export function lateGuardMs(displayMs, budgetMs = 12) {
  const half = Math.min(Number.isFinite(displayMs) ? displayMs : 0, 100) / 2;
  return Math.max(0, half - budgetMs);
}
