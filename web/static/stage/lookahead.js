// How long the page holds the stream before playing it: as long as its line's pictures need to
// reach it first.

import { LOOKAHEAD_MS } from "./hearing.js";

const MOST_MS = 500; // within the analyser's 683 ms, which tells whether a change is heard
const KEEP_MS = 60000; // a need is held this long: a machine starved once is starved again
const MARGIN_MS = 20;
const STEP_MS = 10; // needs are rounded up to this, so that small ones do not each move it

/**
 * The pictures of a line reach the page in the socket's `visemes` event, sent as the server
 * places the line: when the show was quiet, about as its first sound leaves for the page, which
 * hears it the jitter buffer, this look-ahead and the output device's latency later, some
 * 200 ms. A page whose main thread is held longer than that (a slow machine, a core shared
 * with other tabs: a frame every 100-250 ms) handled the event after the sound had started:
 * the frames before had nothing to draw, and the first that had drew the viseme of the moment,
 * not the line's first. Its mouth stayed shut through the first 100-900 ms of the line while
 * the speakers were loud, and its own figures, timing the viseme it drew, did not show it.
 *
 * So each `visemes` event is checked as it is handled: its first voiced sample should be heard
 * at least two of the page's usual frame intervals later (the next frame may begin one
 * interval on and draw a moment up to one interval beyond that), or the hold was short by the
 * difference. The hold wanted is the one that would have covered the largest shortfall of the
 * last minute, LOOKAHEAD_MS at least and MOST_MS at most: a quick page keeps a tenth of a
 * second; a starved one holds the stream longer, and its viewer hears the show that much later
 * with the mouth on the sound.
 */
export class Lookahead {
  constructor({ least = LOOKAHEAD_MS, most = MOST_MS, keepMs = KEEP_MS } = {}) {
    Object.assign(this, { least, most, keepMs });
    this.needs = []; // {at, ms}: the hold each short event wanted, in time order
  }

  /**
   * A line's pictures handled at page time `now`: their first voiced sample is heard `untilMs`
   * from now (negative: heard already) with the stream held `heldMs`; the page's frames come
   * every `frameMs`.
   */
  arrived(untilMs, heldMs, frameMs, now) {
    const short = 2 * frameMs + MARGIN_MS - untilMs;
    if (!(short > 0) || !Number.isFinite(heldMs)) return;
    this.needs.push({ at: now, ms: Math.ceil((heldMs + short) / STEP_MS) * STEP_MS });
  }

  /** The hold wanted at page time `now` (ms). */
  wanted(now) {
    while (this.needs.length && this.needs[0].at < now - this.keepMs) this.needs.shift();
    const need = Math.max(this.least, ...this.needs.map((n) => n.ms));
    return Math.min(this.most, need);
  }
}
