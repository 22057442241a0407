// The stage's frame loop: each animation frame, the heard clock is read, checked against the
// audio, and the mouth drawn for the sample heard when the frame appears. Everything the loop
// keeps between frames is here, in one object; main.js wires it to the link, the audio and the
// page, and reads it for `window.allnighter`.

import { CaptionTrack } from "./captions.js";
import { DrawnOnsets } from "./drawnonsets.js";
import { FrameStats, Presentation } from "./framestats.js";
import { HeardClock } from "./heardclock.js";
import { lateGuardMs } from "./lateguard.js";
import { Lookahead } from "./lookahead.js";
import { OutputLatency, reportedLatency } from "./latency.js";
import { MouthBlend } from "./mouthblend.js";
import { OnsetCalibration } from "./onsetcalibration.js";
import { Playhead } from "./playhead.js";
import { RecentSet } from "./recentset.js";
import { VisemeTrack } from "./visemetrack.js";

// events handled this soon after the link goes live are the speech under way, sent to a page
// that (re)joins: not late
const REPLAYS_MS = 2000;
// a change of the hold waits for silence this much wider than the stretch it moves over: the
// audio thread renders a burst ahead of the read
const HOLD_MARGIN_MS = 30;

export class FrameLoop {
  /**
   * `facts`: the page's (../common/facts.js). `avatar` draws, `hearing` plays and measures the
   * audio, `timesync` knows the server's clock. `leadMs`: how far ahead of the sound the lips
   * are drawn; `holdMs`: how long a short viseme stays in the mouth's shape; `calibrate`: false
   * keeps measuring but never corrects. `showCaption(phrase)` shows the phrase heard (or null).
   */
  constructor({ facts, avatar, hearing, timesync, leadMs, holdMs, calibrate, showCaption }) {
    const sampleRate = facts.sample_rate;
    const { loud, quiet } = facts.onsets;
    Object.assign(this, { sampleRate, avatar, hearing, timesync, leadMs, calibrate, showCaption });
    this.visemes = new VisemeTrack({ sampleRate, holdMs });
    this.mouth = new MouthBlend(); // every voice's: what the page measures and reports
    // the cast, left to right: each figure's own mouth follows its own role's visemes
    this.cast = (facts.cast ?? []).map((c) => c.name);
    this.mouths = this.cast.map(() => new MouthBlend());
    this.voiced = null; // {index, at}: the figure last heard speaking, and when
    this.captions = new CaptionTrack({ sampleRate });
    this.calibration = new OnsetCalibration({ sampleRate, loud, quiet });
    this.playhead = new Playhead({ sampleRate });
    this.onsets = new DrawnOnsets({ sampleRate, track: this.visemes });
    this.frames = new FrameStats();
    this.presentation = new Presentation();
    this.latency = new OutputLatency(); // the device's: what is rendered is heard that much later
    this.stopped = new RecentSet(256); // interrupted utterances: their late events are dropped
    // sound comes back this long before the next line: the heard clock may be some ms behind
    this.reopenLead = (100 * sampleRate) / 1000;
    this.drawnLast = null; // the last frame drawn: its lip-sync figure waits for the next frame
    this.clock = null;
    this.calibrationMs = 0; // a property of this browser's audio path: kept across reconnects
    this.heard = { sample: null, viseme: "sil", mouth: 0 };
    this.duck = null; // after an interrupt: {at, next}, its sample and the next line's start
    this.lookahead = new Lookahead(); // how long the stream is held: as its events need
    this.joinedAt = -Infinity; // when the link last went live (performance time)
  }

  /** A `visemes`, `utterance` or `interrupt` event of the show. */
  event(name, data) {
    if (name === "visemes" && !this.stopped.has(data.utterance_id)) {
      this.visemes.add(this.#cast(data));
      this.#handled(data);
    } else if (name === "utterance") this.stopped.has(data.id) || this.#heardNext(data);
    else if (name === "interrupt") {
      for (const id of data.utterances ?? []) this.stopped.add(id);
      const role = data.role == null ? null : this.#cast(data).role;
      const at = role === null ? this.#duckUntil(data) : data.at_sample;
      this.visemes.cut(at, role);
      this.captions.cut(at, role);
    }
  }

  /** The show's audio arrived (its stream attached to `hearing`): a new heard clock for it. */
  listen(receiver, info) {
    this.clock = new HeardClock(receiver, {
      sampleRate: this.sampleRate, rtpBase: info?.rtp_base ?? 0, lookaheadMs: this.hearing.lookaheadMs,
    });
    this.clock.calibrationMs = this.calibrationMs;
  }

  /** A new session: it may face a restarted server, whose sample clock starts afresh. */
  reset() {
    this.duck = null;
    this.hearing.open();
    this.visemes.clear();
    this.captions.clear();
    this.playhead.reset();
    this.mouth.reset();
    for (const m of this.mouths) m.reset();
    this.voiced = null;
    this.hearing.detach();
    this.clock = null;
    this.onsets.gap(); // samples before it say nothing of the new clock's
  }

  // An interrupt of the whole show silences the audio already buffered here at once, rather
  // than when the heard sample reaches the cut (a role's interrupt leaves the others' speech
  // alone). The page ducks even when its clock says the cut has been heard (the clock can be
  // tens of ms off while the jitter buffer stretches), and opens again just before the next
  // line: the stream carries only silence until then. Returns where the timeline is cut: the
  // mouth stops with the sound, at the sample heard now if that comes before the interrupt's.
  #duckUntil(data) {
    // ducked as it is rendered: what the output device holds already is still heard
    const lastHeard = this.clock ? this.clock.renderedSampleAt(performance.now()) : null;
    if (lastHeard === null) return data.at_sample;
    this.duck = { at: data.at_sample, next: null };
    this.hearing.duck();
    return Math.min(lastHeard, data.at_sample);
  }

  // A line's pictures handled now: how long before its first voiced sample is heard, for the
  // hold (Lookahead). Those sent as the page (re)joins are of speech already under way.
  #handled(data) {
    const now = performance.now();
    const clock = this.clock;
    if (!clock || !this.hearing.running || now - this.joinedAt < REPLAYS_MS) return;
    const first = (data.frames ?? []).find((f) => f.viseme !== "sil" && Number.isFinite(f.sample));
    const heard = first ? clock.sampleAt(now) : null;
    if (heard === null) return;
    const untilMs = (first.sample - heard) / (this.sampleRate / 1000);
    this.lookahead.arrived(untilMs, clock.lookaheadMs, this.frames.usualMs(), now);
  }

  // The hold the events need, taken where the stretch of the stream it moves the output over
  // (played twice where it grows, skipped where it shrinks) is silence, by the read just made.
  #hold() {
    const now = performance.now();
    const want = this.lookahead.wanted(now);
    const held = this.hearing.lookaheadMs;
    if (want === held) return;
    const [from, to] = [Math.max(0, Math.min(want, held) - HOLD_MARGIN_MS), Math.max(want, held) + HOLD_MARGIN_MS];
    if (!this.hearing.quietFor(from, to, this.calibration.quiet)) return;
    this.hearing.setLookahead(want);
    this.clock.setLookahead(want, now);
  }

  // An event whose role the page has no figure for is the first figure's to speak.
  #cast(data) {
    if (this.cast.length === 0 || this.cast.includes(data.role)) return data;
    return { ...data, role: this.cast[0] };
  }

  #heardNext(phrase) {
    this.captions.add(phrase);
    const duck = this.duck;
    if (duck && duck.next === null && Number.isFinite(phrase.start_sample)) duck.next = phrase.start_sample;
  }

  /** One animation frame, `now` its timestamp. */
  frame(now) {
    const { avatar, hearing, frames, presentation, latency, calibration, visemes, mouth } = this;
    const begun = performance.now();
    const dt = frames.tick(now);
    if (this.drawnLast) this.#countOnset(this.drawnLast, now);
    else this.onsets.gap();
    const displayMs = frames.displayMs();
    // A frame's picture is seen from the vsync after the one it was begun at (`now`, the
    // frame's timestamp) until the next frame's replaces it: the mouth is drawn for the middle
    // of that time. Timed from the callback's own start instead, which comes 1-20 ms after the
    // timestamp by how busy the main thread is, the drawn sample jumped by that much between
    // frames, and a viseme starting in a jump was shown up to that much late. A frame begun so
    // late that its scripts will run past that vsync is seen a vsync later (Presentation).
    const appears = now + frames.period * presentation.forecast(begun - now, frames.period);
    const seen = appears + Math.min(displayMs, 100) / 2;
    const lead = this.leadMs + lateGuardMs(displayMs);
    let sample = null;
    let errorMs = 0; // what the heard clock still gets wrong at speech onsets: the mouth eases
    // the device's latency, followed at once while the mouth rests and slewed while it moves
    const reading = reportedLatency(hearing.ctx);
    latency.update(reading, now, avatar.mouthOpen < 0.05);
    const clock = this.clock;
    if (clock) {
      clock.poll();
      clock.outputLatencyMs = latency.ms ?? 0;
      const samples = hearing.read(reading.ms);
      if (samples) {
        this.#hold();
        // timed when rendered (see renderedAt), not at the frame's timestamp. (After an
        // interrupt the stream still carries speech that was cut: its onsets were cut from the
        // timeline too, so nothing is matched with them.)
        calibration.step(samples, hearing.readEnd, clock, visemes, hearing.perMs);
        // the onset is found a look-ahead before it is heard: the clock moves for what entered
        // from the quiet before it on, and the viewer sees no jump
        const anchor = calibration.anchorMs();
        if (this.calibrate && anchor !== null) {
          clock.calibrate(anchor, calibration.anchorFrom);
          this.calibrationMs = anchor;
        }
      }
      errorMs = calibration.offsetMs() ?? 0;
      sample = this.playhead.at(clock.sampleAt(seen + lead));
      const rendered = clock.renderedSampleAt(now); // what passes the ducking now
      const duck = this.duck;
      if (duck?.next != null && rendered >= Math.max(duck.at, duck.next - this.reopenLead)) {
        this.duck = null;
        hearing.open();
      }
    }
    // the timeline is read ahead by the easing's lag, so easing widens a transition, not delays it
    const ahead = (mouth.leadMs(errorMs, displayMs) * this.sampleRate) / 1000;
    const drawn = mouth.step(sample === null ? {} : visemes.weightsAt(sample + ahead), errorMs, dt);
    const shown = sample === null ? null : visemes.frameAt(sample);
    if (this.cast.length > 1) {
      this.cast.forEach((role, i) => {
        const own = sample === null ? {} : visemes.weightsAt(sample + ahead, role);
        avatar.setVisemes(this.mouths[i].step(own, errorMs, dt), i);
      });
      avatar.setSpeaking(this.#speaker(shown, now));
    } else avatar.setVisemes(drawn);
    avatar.update(dt / 1000, now / 1000);
    avatar.render();
    // the sample heard now (docs/api.md: `state().current_sample`); the mouth shows `sample`, a little ahead
    this.heard = { sample: clock ? clock.sampleAt(performance.now()) : null, viseme: shown?.viseme ?? "sil", mouth: avatar.mouthOpen };
    this.drawnLast = null;
    if (sample !== null) {
      visemes.markSeen(sample, drawn);
      visemes.prune(sample);
      this.showCaption(this.captions.at(sample));
      const held = frames.held(dt);
      this.drawnLast = { stamp: now, period: frames.period, shown, sample, drawnFor: seen + lead, errorMs, held };
    }
    const ended = performance.now();
    presentation.done(ended - begun);
    if (this.drawnLast) this.drawnLast.ended = ended;
  }

  // The figure speaking: the one whose voice is heard, kept through the pauses between its
  // words (800 ms), so that the others do not turn away and back at every comma.
  #speaker(shown, now) {
    const index = shown && shown.viseme !== "sil" ? this.cast.indexOf(shown.role) : -1;
    if (index >= 0) this.voiced = { index, at: now };
    return this.voiced && now - this.voiced.at < 800 ? this.voiced.index : null;
  }

  // The picture of a viseme appears when its first frame is seen, though the frame was drawn
  // for `drawnFor`: the figure is against the sound heard when it appears, counted once the
  // next frame's timestamp `next` says whether the frame made its vsync. What the clock still
  // gets wrong at heard onsets (`errorMs`, positive: the mouth leads) counts too.
  #countOnset(d, next) {
    const appears = Presentation.seen(d.stamp, d.ended, next, d.period);
    this.onsets.frame(d.shown, d.sample, appears - d.drawnFor - d.errorMs, this.serverMs(appears), d.held);
  }

  /** The server's clock (ms since the Unix epoch) at page time `t`; null until timesync measured it. */
  serverMs(t) {
    const offset = this.timesync.offsetMs;
    return offset === null ? null : performance.timeOrigin + t + offset;
  }
}
