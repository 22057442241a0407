// The viseme timeline on the broadcast clock, and the mouth weights at any heard sample.
//
// Frames arrive over socket.io ahead of their audio; they are kept sorted by sample and looked
// up by the sample the listener is hearing now, so the mouth follows the audio actually played,
// not the arrival time of messages. Pure logic: no DOM, tested with `node --test`.

import { requireRate } from "./rate.js";
import { countUpTo } from "./sorted.js";

/** Crossfade between neighbouring visemes, centred on each boundary (ms). */
export const BLEND_MS = 40;
/**
 * A mouth opening from rest crosses in half that (ms): the viewer sees the lips part on one
 * frame, not over three. Where half the opening falls between two frames, one a little early
 * or late decides which shows the start; over 40 ms, one line in 20 was read a frame apart by
 * a meter that timed the mouth at half its first opening.
 */
const ONSET_BLEND_MS = 20;
/** Frames this far behind the listener are forgotten (ms). */
const KEEP_MS = 2000;

/** The frames of `visemes` events, for a broadcast clock of `sampleRate` samples a second. */
export class VisemeTrack {
  constructor({ sampleRate, blendMs = BLEND_MS, onsetBlendMs = ONSET_BLEND_MS, holdMs = 0 } = {}) {
    requireRate(sampleRate);
    this.frames = []; // {start, end, viseme, weight, role, utterance_id}, sorted by start
    this.onsets = []; // {sample, role}: where the server's audio turns loud, sorted by sample
    this.blend = Math.round((blendMs * sampleRate) / 1000);
    this.onsetBlend = Math.round((Math.min(onsetBlendMs, blendMs) * sampleRate) / 1000);
    // coarticulation: a viseme shorter than this stays under the next ones (inside a word)
    // until this long after its start, so a 30 ms consonant is seen, not skipped between frames
    this.hold = Math.round((holdMs * sampleRate) / 1000);
    this.keep = Math.round((KEEP_MS * sampleRate) / 1000);
    this.counted = { planned: 0, seen: 0 }; // voiced frames played out, and those seen
  }

  /** Add a `visemes` event's frames; silence frames are kept as rests. */
  add(event) {
    const role = event.role ?? null;
    const utteranceId = typeof event.utterance_id === "string" ? event.utterance_id : null;
    for (const f of event.frames ?? []) {
      if (!Number.isFinite(f.sample) || !Number.isFinite(f.duration) || f.duration <= 0) continue;
      const frame = {
        start: f.sample,
        end: f.sample + f.duration,
        viseme: String(f.viseme),
        weight: Number.isFinite(f.weight) ? f.weight : 1,
        role,
        utterance_id: utteranceId,
      };
      const at = this.#indexAfter(frame.start);
      this.frames.splice(at, 0, frame);
    }
    for (const sample of Array.isArray(event.onsets) ? event.onsets : []) {
      if (!Number.isFinite(sample)) continue;
      let at = this.onsets.length;
      while (at > 0 && this.onsets[at - 1].sample > sample) at--;
      this.onsets.splice(at, 0, { sample, role });
    }
  }

  /** The server's sound onset nearest broadcast sample `s`, if within `span` samples. */
  onsetNear(s, span) {
    let best = null;
    for (const o of this.onsets) {
      if (Math.abs(o.sample - s) <= span && (best === null || Math.abs(o.sample - s) < Math.abs(best - s))) {
        best = o.sample;
      }
    }
    return best;
  }

  /** An interrupt: drop everything of `role` (all roles when null) from `at` on. */
  cut(at, role = null) {
    const kept = [];
    for (const f of this.frames) {
      if (role !== null && f.role !== role) kept.push(f);
      else if (f.start < at) kept.push(f.end > at ? { ...f, end: at } : f);
    }
    this.frames = kept;
    this.onsets = this.onsets.filter((o) => (role !== null && o.role !== role) || o.sample < at);
  }

  clear() {
    this.frames = [];
    this.onsets = [];
  }

  /** Forget frames long played (keeps lookups short in an all-night show), counting them. */
  prune(heard) {
    let n = 0;
    while (n < this.frames.length && this.frames[n].end < heard - this.keep) n++;
    for (const f of this.frames.slice(0, n)) {
      if (f.viseme === "sil") continue;
      this.counted.planned++;
      if (f.seen) this.counted.seen++;
    }
    if (n) this.frames.splice(0, n);
    while (this.onsets.length && this.onsets[0].sample < heard - this.keep) this.onsets.shift();
  }

  /**
   * After drawing the weights `drawn` for sample `s`: the frames there of the strongest shape
   * drawn have been seen. A viseme shorter than a frame interval can fall between two frames
   * and never be the mouth's shape: what `hold` is for.
   */
  markSeen(s, drawn) {
    let top = null;
    for (const v in drawn) if (top === null || drawn[v] > drawn[top]) top = v;
    if (top === null) return;
    const half = this.blend / 2;
    for (let i = this.#firstNear(s); i < this.frames.length; i++) {
      const f = this.frames[i];
      if (f.start - half > s) break;
      if (f.viseme === top && this.#heldEnd(i) + half > s) f.seen = true;
    }
  }

  /** The share of voiced frames played out that the mouth showed (null before any). */
  seenShare() {
    return this.counted.planned ? this.counted.seen / this.counted.planned : null;
  }

  /**
   * Weights {viseme: 0..1} at broadcast sample `s`. Each frame fades in over a window centred
   * on its start (a shorter one after silence: `onsetBlendMs`) and out over one centred on its
   * end (a held frame: from its end to its held end, see `hold`), so neighbours crossfade
   * linearly; where a held frame overlaps its followers the weights are scaled to sum to one.
   * Silence frames weigh nothing, so the mouth rests in pauses. With `role`, of that role's
   * frames only: its own mouth (where two roles overlap, each follows its own voice).
   */
  weightsAt(s, role = undefined) {
    const weights = {};
    const half = this.blend / 2;
    let held = false;
    for (let i = this.#firstNear(s); i < this.frames.length; i++) {
      const f = this.frames[i];
      if (f.start - half > s) break;
      if (f.viseme === "sil" || (role !== undefined && f.role !== role)) continue;
      const end = this.#heldEnd(i);
      if (end + half <= s) continue;
      const fade = Math.min(half, (f.end - f.start) / 2) || 1;
      const riseFade = this.#afterRest(i) ? Math.min(fade, this.onsetBlend / 2) || 1 : fade;
      const rise = clamp01((s - (f.start - riseFade)) / (2 * riseFade));
      // a held frame fades out over its whole hold, so what follows it soon shows through
      const fall = clamp01((end + fade - s) / (end - f.end + 2 * fade));
      const w = Math.min(rise, fall) * f.weight;
      if (w > 0) weights[f.viseme] = Math.max(weights[f.viseme] ?? 0, w);
      held ||= w > 0 && s > f.end;
    }
    const sum = Object.values(weights).reduce((a, w) => a + w, 0);
    if (held && sum > 1) for (const v in weights) weights[v] /= sum;
    return weights;
  }

  // whether frame i opens the mouth from rest: silence or nothing of its role just before it
  #afterRest(i) {
    const f = this.frames[i];
    for (let j = i - 1; j >= 0 && j >= i - 16; j--) {
      const g = this.frames[j];
      if (g.role !== f.role) continue;
      return g.viseme === "sil" || g.end < f.start;
    }
    return true;
  }

  // Where frame i fades out: its end, or `hold` after its start when it is shorter and voiced
  // frames follow it without a gap (never past them into silence: the mouth rests with the sound)
  #heldEnd(i) {
    const f = this.frames[i];
    const want = f.start + this.hold;
    if (want <= f.end) return f.end;
    let end = f.end;
    for (let j = i + 1; j < this.frames.length && end < want; j++) {
      const g = this.frames[j];
      if (g.role !== f.role) continue; // another voice's, overlapping: not this mouth's
      if (g.viseme === "sil" || g.start > end) break;
      end = Math.max(end, g.end);
    }
    return Math.min(end, want);
  }

  /** Where the line of frame `f` begins to sound: its utterance's first voiced frame kept. */
  lineStart(f) {
    let start = f.start;
    for (let i = this.#indexAfter(f.start) - 1; i >= 0; i--) {
      const g = this.frames[i];
      if (g.utterance_id === f.utterance_id && g.viseme !== "sil") start = Math.min(start, g.start);
    }
    return start;
  }

  /** The viseme whose frame holds sample `s` ("sil" when none). */
  visemeAt(s) {
    return this.frameAt(s)?.viseme ?? "sil";
  }

  /** The frame holding sample `s`, or null. */
  frameAt(s) {
    const i = this.#indexAfter(s) - 1;
    for (let j = i; j >= 0 && j > i - 8; j--) {
      const f = this.frames[j];
      if (f.start <= s && s < f.end) return f;
    }
    return null;
  }

  // the first frame that can weigh at sample `s` (frames are contiguous per line: the one
  // before the window may still be playing)
  #firstNear(s) {
    return Math.max(0, this.#indexAfter(s - Math.max(this.blend * 4, this.hold + this.blend)) - 1);
  }

  #indexAfter(sample) {
    return countUpTo(this.frames, "start", sample);
  }
}

function clamp01(x) {
  return x < 0 ? 0 : x > 1 ? 1 : x;
}
