// What the listener hears, and when: the audio graph and the heard-sample clock.
//
// The broadcast sample being heard is read from the receiver's synchronization source (the
// RTP timestamp of the frame last played out, and when), mapped to broadcast samples with the
// server's `rtp_base`. That mapping is then checked against the audio itself: each speech onset
// found in the WebAudio signal is matched with the planned onset in the viseme timeline, and the
// median difference calibrates the clock. Measured, not assumed (Chromium's playout timestamp
// runs some ms ahead of what reaches WebAudio).

import { SAMPLE_RATE } from "./lipsync.js";

const PER_MS = SAMPLE_RATE / 1000;
const TWO32 = 2 ** 32;
/**
 * Playout readings kept for the median mapping: those of the last quarter second, at least
 * three. A reading is quantised to the 10 ms audio frame, so a few are needed; but the
 * jitter buffer grows and shrinks by stretching audio (often by 100 ms as speech starts), and
 * a longer window would lag behind: the heard clock would read ahead of the sound.
 */
const WINDOW_MS = 250;
const MIN_READINGS = 3;

/** Maps performance.now() to the broadcast sample being played out. */
export class HeardClock {
  constructor(receiver, rtpBase) {
    this.receiver = receiver;
    this.rtpBase = rtpBase >>> 0;
    this.readings = []; // {stamp, offset}: broadcast sample − ms·48 at each playout reading
    this.median = null;
    this.lastStamp = null;
    this.lastRel = null;
    this.unwrapped = 0;
    this.calibrationMs = 0;
  }

  /** Take the newest playout reading; call once per animation frame. */
  poll() {
    const sources = this.receiver.getSynchronizationSources?.() ?? [];
    if (!sources.length) return;
    const src = sources[0];
    if (src.timestamp === this.lastStamp) return;
    this.lastStamp = src.timestamp;
    // Chromium stamps on the wall clock (epoch ms); the spec says performance time
    const stamp = src.timestamp > 1e11 ? src.timestamp - performance.timeOrigin : src.timestamp;
    const rel = (src.rtpTimestamp - this.rtpBase + TWO32) % TWO32;
    if (this.lastRel === null) this.unwrapped = rel;
    else this.unwrapped += ((rel - this.lastRel + TWO32 * 1.5) % TWO32) - TWO32 / 2;
    this.lastRel = rel;
    this.lastPlayout = stamp;
    this.readings.push({ stamp, offset: this.unwrapped - stamp * PER_MS });
    while (this.readings.length > MIN_READINGS && this.readings[0].stamp < stamp - WINDOW_MS) {
      this.readings.shift();
    }
    this.median = median(this.readings.map((r) => r.offset));
  }

  /** True while playout readings keep coming. */
  live(now) {
    return this.lastPlayout !== undefined && now - this.lastPlayout < 300;
  }

  /** The broadcast sample at performance time `now`, before calibration (null until known). */
  rawSampleAt(now) {
    return this.median === null ? null : now * PER_MS + this.median;
  }

  /** The broadcast sample being heard at performance time `now`. */
  sampleAt(now) {
    const raw = this.rawSampleAt(now);
    return raw === null ? null : Math.round(raw - this.calibrationMs * PER_MS);
  }
}

/**
 * Finds speech onsets in the heard signal and matches each with the planned voiced onset;
 * the median error calibrates the HeardClock and is the page's lip-sync offset figure
 * (positive: the mouth leads the sound).
 */
export class OnsetCalibration {
  constructor({ quiet = 0.004, loud = 0.02, quietMs = 120, windowMs = 250, keep = 15 } = {}) {
    Object.assign(this, { quiet, loud, quietMs, windowMs, keep });
    this.quietSince = null;
    this.errors = []; // raw clock error (ms) at each matched onset
    this.residuals = []; // the same, with the calibration in force at that moment
  }

  /**
   * One analysis step: `samples` are the latest heard samples, ending at performance time
   * `now`; `clock` and `track` give the planned onset of speech found there, if any.
   */
  step(samples, now, clock, track) {
    const n = samples.length;
    let first = -1;
    for (let i = 0; i < n; i++) {
      if (Math.abs(samples[i]) > this.loud) {
        first = i;
        break;
      }
    }
    if (first < 0) {
      if (rms(samples) < this.quiet) this.quietSince ??= now;
      else this.quietSince = null;
      return;
    }
    const wasQuiet = this.quietSince !== null && now - this.quietSince >= this.quietMs;
    this.quietSince = null;
    const onsetTime = now - (n - first) / PER_MS;
    const raw = wasQuiet ? clock.rawSampleAt(onsetTime) : null;
    if (raw === null) return;
    const span = this.windowMs * PER_MS;
    const planned = track.voicedOnsetBetween(raw - span, raw + span);
    if (planned === null) return;
    const error = (raw - planned) / PER_MS;
    this.residuals.push(error - clock.calibrationMs);
    this.errors.push(error);
    if (this.errors.length > this.keep) this.errors.shift();
    if (this.residuals.length > this.keep) this.residuals.shift();
  }

  /**
   * The correction the matched onsets call for (ms), null before the first. A viewer's first
   * seconds are when the clock is most off (the jitter buffer fills as speech starts), so the
   * first match counts at once; the median of more takes over as they come.
   */
  suggestedMs() {
    return this.errors.length ? clampMs(median(this.errors), 200) : null;
  }

  /**
   * What the clock still gets wrong (ms; positive: the mouth leads the sound), with
   * `calibrationMs` in force: the matched onsets' median error beyond it; null before any.
   */
  remainingMs(calibrationMs) {
    return this.errors.length ? median(this.errors) - calibrationMs : null;
  }

  /** The recent lip-sync offset as heard (ms), null before the first matched onset. */
  offsetMs() {
    return this.residuals.length ? median(this.residuals) : null;
  }
}

/**
 * The page's audio: a muted <audio> element keeps the WebRTC stream flowing into WebAudio; one
 * context plays it, a second one with no output device measures it. The meter sees the stream
 * as it enters WebAudio, free of the output device's buffering, which differs by machine and
 * is not what the viewer's ears and eyes share.
 */
export class Hearing {
  constructor(audioElement) {
    this.audio = audioElement;
    this.ctx = new AudioContext({ latencyHint: "interactive" });
    this.meter = meterContext() ?? this.ctx;
    this.analyser = this.meter.createAnalyser();
    this.analyser.fftSize = 1024; // ~21 ms at 48 kHz: an onset is timed within that window
    this.buffer = new Float32Array(this.analyser.fftSize);
    this.sources = [];
    this.gain = this.ctx.createGain(); // what the viewer hears passes here: ducked on interrupt
    this.gain.connect(this.ctx.destination);
    this.tap = this.ctx.createMediaStreamDestination(); // the same signal, for meters and tests
    this.gain.connect(this.tap);
    this.onchange = null; // called when the browser starts or stops letting audio play
    this.ctx.onstatechange = () => this.onchange?.();
  }

  attach(stream) {
    this.detach();
    this.audio.srcObject = stream;
    this.audio.muted = true; // heard through WebAudio, not twice
    this.audio.play().catch(() => {});
    const played = this.ctx.createMediaStreamSource(stream);
    played.connect(this.gain);
    const measured = this.meter === this.ctx ? played : this.meter.createMediaStreamSource(stream);
    measured.connect(this.analyser);
    this.sources = [played, measured];
    if (!this.running) this.resume().catch(() => {}); // allowed where autoplay is
  }

  detach() {
    for (const s of this.sources) s.disconnect();
    this.sources = [];
  }

  /**
   * Silence what is already buffered (WebRTC's jitter buffer holds 40–200 ms): after an
   * interrupt the viewer should not sit through speech the host has just stopped. `open()`
   * lets sound through again once the heard sample reaches the interrupt's.
   */
  duck() {
    this.gain.gain.setTargetAtTime(0, this.ctx.currentTime, 0.003);
  }

  open() {
    this.gain.gain.setTargetAtTime(1, this.ctx.currentTime, 0.003);
  }

  /** Whether the browser lets audio play (it may wait for the viewer's first click). */
  get running() {
    return this.ctx.state === "running";
  }

  resume() {
    this.audio.play().catch(() => {});
    return Promise.all([this.ctx.resume(), this.meter.resume()]);
  }

  /** The latest heard samples (a reused buffer), or null while the meter is not running. */
  read() {
    if (this.meter.state !== "running") return null;
    this.analyser.getFloatTimeDomainData(this.buffer);
    return this.buffer;
  }
}

function meterContext() {
  try {
    return new AudioContext({ sinkId: { type: "none" } });
  } catch {
    return null; // browsers without silent sinks measure on the playing context
  }
}

export function rms(samples, from = 0) {
  let sum = 0;
  for (let i = from; i < samples.length; i++) sum += samples[i] * samples[i];
  return Math.sqrt(sum / Math.max(1, samples.length - from));
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function clampMs(x, limit) {
  return Math.max(-limit, Math.min(limit, x));
}
