// The captions: the phrase being heard, on the broadcast clock.

import { requireRate } from "./rate.js";

/** Phrases for captions: {start, end, text}, cut and pruned like the visemes. */
export class CaptionTrack {
  constructor({ sampleRate } = {}) {
    this.second = requireRate(sampleRate); // how long a phrase stays up after it ends
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
  at(s, linger = this.second) {
    while (this.phrases.length && this.phrases[0].end + linger < s) this.phrases.shift();
    let found = null;
    for (const p of this.phrases) {
      if (p.start > s) break;
      if (s < p.end + linger) found = p;
    }
    return found;
  }
}
