// The drawn mouth easing toward the timeline's weights, and how far ahead that makes it read.

import { BLEND_MS } from "./visemetrack.js";

/**
 * Adaptive interpolation (docs/sync.md): α = 0.9 − 0.6·clamp(|Δt| / 50 ms, 0, 1), Δt the lip-sync
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
