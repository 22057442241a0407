// The sample the mouth is drawn at: the heard clock's reading, never going back over what it
// has shown.

import { requireRate } from "./rate.js";

/**
 * The broadcast sample the mouth is drawn at. The heard clock's reading can step back (the
 * jitter buffer grew, the calibration moved); a mouth that followed it would say a syllable
 * twice, or one an interrupt has just cut. So the playhead never goes back over what it has
 * shown: it holds still until the reading passes it. Only a step back of more than `restart`
 * samples, a new stream, moves it back.
 */
export class Playhead {
  constructor({ sampleRate, restart = requireRate(sampleRate) } = {}) {
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
