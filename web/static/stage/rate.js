// The broadcast's sample rate as the stage's modules take it: from the page's facts
// (../common/facts.js), handed on by main.js, never assumed.

/** `sampleRate`, if it is one (samples a second, positive); else a TypeError. */
export function requireRate(sampleRate) {
  if (!(Number.isFinite(sampleRate) && sampleRate > 0)) {
    throw new TypeError(`a sample rate is needed (the page's facts), not ${sampleRate}`);
  }
  return sampleRate;
}
