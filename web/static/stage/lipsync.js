// The viseme timeline on the broadcast clock, and the mouth weights at any heard sample.
//
// Frames arrive over socket.io ahead of their audio; they are kept sorted by sample and looked
// up by the sample the listener is hearing now, so the mouth follows the audio actually played,
// not the arrival time of messages. Pure logic: no DOM, tested with `node --test`.

export const SAMPLE_RATE = 48000;

/** Crossfade between neighbouring visemes, centred on each boundary (ms). */
const PER_MS = SAMPLE_RATE / 1000;
const BLEND_MS = 40;
/**
 * A mouth opening from rest crosses in half that (ms): the viewer sees the lips part on one
 * frame, not over three. Where half the opening falls between two frames, one a little early
 * or late decides which shows the start; over 40 ms, one line in 20 was read a frame apart by
 * a meter that timed the mouth at half its first opening.
 */
const ONSET_BLEND_MS = 20;
/** Frames this far behind the listener are forgotten (ms). */
const KEEP_MS = 2000;

export class VisemeTrack {
  constructor({
    blendMs = BLEND_MS, onsetBlendMs = ONSET_BLEND_MS, holdMs = 0, sampleRate = SAMPLE_RATE,
  } = {}) {
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
   * Silence frames weigh nothing, so the mouth rests in pauses.
   */
  weightsAt(s) {
    const weights = {};
    const half = this.blend / 2;
    let held = false;
    for (let i = this.#firstNear(s); i < this.frames.length; i++) {
      const f = this.frames[i];
      if (f.start - half > s) break;
      if (f.viseme === "sil") continue;
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
      if (g.viseme === "sil" || g.start > end) break;
      end = Math.max(end, g.end);
    }
    return Math.min(end, want);
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

/** How many of `items`, sorted by `key`, have it at most `value` (a binary search). */
export function countUpTo(items, key, value) {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (items[mid][key] <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Phrases for captions: {start, end, text}, cut and pruned like the visemes. */
export class CaptionTrack {
  constructor() {
    this.phrases = [];
  }

  add(event) {
    if (!Number.isFinite(event.start_sample)) return;
    const end = Number.isFinite(event.end_sample) ? event.end_sample : event.start_sample;
    this.phrases.push({ start: event.start_sample, end, text: String(event.text ?? ""), role: event.role ?? null });
    this.phrases.sort((a, b) => a.start - b.start);
  }

  cut(at, role = null) {
    this.phrases = this.phrases
      .filter((p) => (role !== null && p.role !== role) || p.start < at)
      .map((p) => ((role === null || p.role === role) && p.end > at ? { ...p, end: at } : p));
  }

  clear() {
    this.phrases = [];
  }

  /** The phrase being heard at `s`, held `linger` samples after it ends. */
  at(s, linger = SAMPLE_RATE) {
    while (this.phrases.length && this.phrases[0].end + linger < s) this.phrases.shift();
    let found = null;
    for (const p of this.phrases) {
      if (p.start > s) break;
      if (s < p.end + linger) found = p;
    }
    return found;
  }
}

function clamp01(x) {
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

/**
 * The broadcast sample the mouth is drawn at. The heard clock's reading can step back (the
 * jitter buffer grew, the calibration moved); a mouth that followed it would say a syllable
 * twice, or one an interrupt has just cut. So the playhead never goes back over what it has
 * shown: it holds still until the reading passes it. Only a step back of more than `restart`
 * samples, a new stream, moves it back.
 */
export class Playhead {
  constructor({ restart = SAMPLE_RATE } = {}) {
    this.restart = restart;
    this.shown = null;
  }

  /** The sample to draw for the clock's `reading` (null while unknown). */
  at(reading) {
    if (reading === null) return null;
    const held = this.shown !== null && reading < this.shown && this.shown - reading < this.restart;
    if (!held) this.shown = reading;
    return this.shown;
  }

  reset() {
    this.shown = null;
  }
}

/**
 * Lip-sync as the viewer sees it, at every viseme onset: the first frame that shows a viseme
 * (its planned start reached at the frame's drawn sample) is late by the drawn sample minus
 * that start; the caller's correction is added (the heard clock's own remaining error, as
 * measured at speech onsets, and that the frame appears before the moment it was drawn for).
 * Positive: the picture is late. Collected between reports, at most `max` of them.
 *
 * The first voiced frame drawn of each utterance also gives the server that utterance's
 * picture and heard times on its clock (`utterance_onsets`): the picture when the frame was
 * seen, the sound that same offset earlier. At most `maxUtterances` between reports.
 */
export class DrawnOnsets {
  constructor({ max = 200, maxUtterances = 50 } = {}) {
    this.max = max;
    this.maxUtterances = maxUtterances;
    this.shown = null; // the frame last counted
    this.pending = [];
    this.utterances = []; // {id, sample, heard_ms, drawn_ms}
    this.drawnUtterances = new RecentSet(256); // ids whose first voiced frame has been drawn
  }

  /**
   * After drawing at sample `s` the timeline frame `f` (VisemeTrack.frameAt(s), or null).
   * `correctionMs` is added to each offset: the heard clock's remaining error as measured at
   * speech onsets (ms by which the sound runs ahead of it), less how far ahead of its
   * appearance the frame was drawn. `serverMs`: the server's clock when the frame appears
   * (null while the page's offset to it is unknown).
   */
  frame(f, s, correctionMs = 0, serverMs = null) {
    if (!f || f === this.shown || f.viseme === "sil") return;
    this.shown = f;
    const offset = (s - f.start) / PER_MS + correctionMs;
    if (this.pending.length < this.max) this.pending.push(offset);
    this.#firstOfUtterance(f, offset, serverMs);
  }

  // Only an utterance's first voiced frame drawn counts, timed or not: a later one would say
  // when the page saw the middle of the line, not its start.
  #firstOfUtterance(f, offset, serverMs) {
    const id = f.utterance_id;
    if (id == null || this.drawnUtterances.has(id)) return;
    this.drawnUtterances.add(id);
    if (!Number.isFinite(serverMs) || this.utterances.length >= this.maxUtterances) return;
    this.utterances.push({ id, sample: f.start, heard_ms: serverMs - offset, drawn_ms: serverMs });
  }

  /** The offsets (ms) since the last call. */
  take() {
    const out = this.pending;
    this.pending = [];
    return out;
  }

  /** The utterances' first voiced frames drawn since the last call. */
  takeUtterances() {
    const out = this.utterances;
    this.utterances = [];
    return out;
  }
}

/**
 * Adaptive interpolation (PRODUCT.md): α = 0.9 − 0.6·clamp(|Δt| / 50 ms, 0, 1), Δt the lip-sync
 * error measured now. With the error small the mouth follows the timeline almost exactly; with
 * it large (the heard clock still settling after a jitter-buffer jump) it eases, so an error
 * shows as a softer mouth rather than a snap to the wrong syllable.
 */
export function blendFactor(errorMs) {
  const e = Number.isFinite(errorMs) ? Math.min(1, Math.abs(errorMs) / 50) : 0;
  return 0.9 - 0.6 * e;
}

/**
 * The drawn mouth moves toward the timeline's weights by α per 60 Hz frame (scaled to the real
 * frame interval, so it moves as far per second at any frame rate): a first-order follower
 * with time constant τ = −frame / ln(1 − α). It crosses half of a crossfade later than the
 * timeline does; `leadMs` is by how much, for the caller to read the timeline that much ahead:
 * easing widens each transition without moving its middle. Drawn in frames, the follower lags
 * less than in continuous time (a ramp, steadily: dt·(1 − a)/a for a step of a, not τ; 1.6 ms
 * at 60 fps instead of 7): read ahead by the continuous lag, the mouth crossed 5-7 ms early.
 */
export class MouthBlend {
  constructor({ frameMs = 1000 / 60 } = {}) {
    this.frameMs = frameMs;
    this.shown = {};
  }

  /** The lag (ms) at which the mouth, drawn every `dtMs` (0: continuously), crosses half. */
  leadMs(errorMs, dtMs = 0, rampMs = BLEND_MS) {
    const tau = -this.frameMs / Math.log(1 - blendFactor(errorMs));
    if (dtMs <= 0) return this.#continuousLag(tau, rampMs);
    const a = this.#stepShare(errorMs, dtMs);
    return this.#continuousLag(tau, rampMs) * Math.min(1, (dtMs * (1 - a)) / a / tau);
  }

  #continuousLag(tau, rampMs) {
    const T = rampMs;
    // the follower's output while a 0→1 ramp of T ms runs, and after it (exact solutions)
    const during = (t) => (t - tau * (1 - Math.exp(-t / tau))) / T;
    const atEnd = during(T);
    if (atEnd < 0.5) return T / 2 + tau * Math.log(2 * (1 - atEnd));
    let lo = T / 2;
    let hi = T;
    for (let i = 0; i < 30; i++) {
      const mid = (lo + hi) / 2;
      if (during(mid) < 0.5) lo = mid;
      else hi = mid;
    }
    return (lo + hi) / 2 - T / 2;
  }

  /** The weights to draw, given the timeline's `target` and the frame's interval `dtMs`. */
  step(target, errorMs, dtMs) {
    const a = this.#stepShare(errorMs, dtMs);
    const out = {};
    for (const v of new Set([...Object.keys(this.shown), ...Object.keys(target)])) {
      const from = this.shown[v] ?? 0;
      const w = from + a * ((target[v] ?? 0) - from);
      if (w > 1e-3) out[v] = w;
    }
    this.shown = out;
    return out;
  }

  // how far toward the target one frame of `dtMs` moves the mouth
  #stepShare(errorMs, dtMs) {
    return 1 - (1 - blendFactor(errorMs)) ** (Math.max(0, dtMs) / this.frameMs);
  }

  reset() {
    this.shown = {};
  }
}

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

/** A set that forgets its oldest entries beyond `limit` (an all-night show has many lines). */
export class RecentSet {
  constructor(limit) {
    this.limit = limit;
    this.items = new Set();
  }

  has(x) {
    return this.items.has(x);
  }

  add(x) {
    this.items.add(x);
    if (this.items.size > this.limit) this.items.delete(this.items.values().next().value);
  }
}
