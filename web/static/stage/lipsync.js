// The viseme timeline on the broadcast clock, and the mouth weights at any heard sample.
//
// Frames arrive over socket.io ahead of their audio; they are kept sorted by sample and looked
// up by the sample the listener is hearing now, so the mouth follows the audio actually played,
// not the arrival time of messages. Pure logic: no DOM, tested with `node --test`.

export const SAMPLE_RATE = 48000;

/** Crossfade between neighbouring visemes, centred on each boundary (ms). */
const PER_MS = SAMPLE_RATE / 1000;
const BLEND_MS = 40;
/** Frames this far behind the listener are forgotten (ms). */
const KEEP_MS = 2000;

export class VisemeTrack {
  constructor({ blendMs = BLEND_MS, sampleRate = SAMPLE_RATE } = {}) {
    this.frames = []; // {start, end, viseme, weight, role}, sorted by start
    this.blend = Math.round((blendMs * sampleRate) / 1000);
    this.keep = Math.round((KEEP_MS * sampleRate) / 1000);
  }

  /** Add a `visemes` event's frames; silence frames are kept as rests. */
  add(event) {
    const role = event.role ?? null;
    for (const f of event.frames ?? []) {
      if (!Number.isFinite(f.sample) || !Number.isFinite(f.duration) || f.duration <= 0) continue;
      const frame = {
        start: f.sample,
        end: f.sample + f.duration,
        viseme: String(f.viseme),
        weight: Number.isFinite(f.weight) ? f.weight : 1,
        role,
      };
      const at = this.#indexAfter(frame.start);
      this.frames.splice(at, 0, frame);
    }
  }

  /** An interrupt: drop everything of `role` (all roles when null) from `at` on. */
  cut(at, role = null) {
    const kept = [];
    for (const f of this.frames) {
      if (role !== null && f.role !== role) kept.push(f);
      else if (f.start < at) kept.push(f.end > at ? { ...f, end: at } : f);
    }
    this.frames = kept;
  }

  clear() {
    this.frames = [];
  }

  /** Forget frames long played (keeps lookups short in an all-night show). */
  prune(heard) {
    let n = 0;
    while (n < this.frames.length && this.frames[n].end < heard - this.keep) n++;
    if (n) this.frames.splice(0, n);
  }

  /**
   * Weights {viseme: 0..1} at broadcast sample `s`. Each frame fades in over a window centred
   * on its start and out over one centred on its end, so neighbours crossfade linearly and
   * their weights sum to one; silence frames weigh nothing, so the mouth rests in pauses.
   */
  weightsAt(s) {
    const weights = {};
    const half = this.blend / 2;
    let i = Math.max(0, this.#indexAfter(s - this.blend * 4) - 1);
    for (; i < this.frames.length; i++) {
      const f = this.frames[i];
      if (f.start - half > s) break;
      if (f.end + half <= s || f.viseme === "sil") continue;
      const fade = Math.min(half, (f.end - f.start) / 2) || 1;
      const rise = clamp01((s - (f.start - fade)) / (2 * fade));
      const fall = clamp01((f.end + fade - s) / (2 * fade));
      const w = Math.min(rise, fall) * f.weight;
      if (w > 0) weights[f.viseme] = Math.max(weights[f.viseme] ?? 0, w);
    }
    return weights;
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

  /** The first voiced frame starting within [from, to), for onset matching. */
  voicedOnsetBetween(from, to) {
    for (let i = Math.max(0, this.#indexAfter(from) - 1); i < this.frames.length; i++) {
      const f = this.frames[i];
      if (f.start >= to) break;
      if (f.start >= from && f.viseme !== "sil" && this.#silentBefore(i)) return f.start;
    }
    return null;
  }

  // a voiced frame whose previous frame is silence (or absent, or not adjacent) starts speech
  #silentBefore(i) {
    if (i === 0) return true;
    const prev = this.frames[i - 1];
    return prev.viseme === "sil" || prev.end < this.frames[i].start;
  }

  #indexAfter(sample) {
    let lo = 0;
    let hi = this.frames.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.frames[mid].start <= sample) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
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
 * Moves a clock correction toward `target` by at most `rate` ms per ms of wall time (`dtMs`):
 * the mouth then runs at most 10 % fast or slow while a calibration settles, instead of
 * jumping a syllable.
 */
export function slew(current, target, dtMs, rate = 0.1) {
  const step = Math.max(0, dtMs) * rate;
  return current + Math.min(step, Math.max(-step, target - current));
}

/**
 * Lip-sync as the viewer sees it, at every viseme onset: the first frame that shows a viseme
 * (its planned start reached at the frame's drawn sample) is late by the drawn sample minus
 * that start; the heard clock's own remaining error, measured at speech onsets, is added.
 * Positive: the picture is late. Collected between reports, at most `max` of them.
 */
export class DrawnOnsets {
  constructor({ max = 200 } = {}) {
    this.max = max;
    this.shown = null; // the frame last counted
    this.pending = [];
  }

  /**
   * After drawing at sample `s` the timeline frame `f` (VisemeTrack.frameAt(s), or null).
   * `correctionMs` is added to each offset: the heard clock's remaining error as measured at
   * speech onsets (ms by which the sound runs ahead of it).
   */
  frame(f, s, correctionMs = 0) {
    if (!f || f === this.shown || f.viseme === "sil") return;
    this.shown = f;
    if (this.pending.length < this.max) this.pending.push((s - f.start) / PER_MS + correctionMs);
  }

  /** The offsets (ms) since the last call. */
  take() {
    const out = this.pending;
    this.pending = [];
    return out;
  }
}
