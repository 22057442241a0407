// The stage page: wires the link, the heard-audio clock, the viseme timeline and the avatar,
// and exposes `window.allnighter` (API.md's browser hook).

import { pageFacts } from "../shared/facts.js";
import { Avatar } from "./avatar.js";
import { FlatAvatar } from "./flatavatar.js";
import { CaptionTrack } from "./captions.js";
import { ChatColumn } from "./chat.js";
import { DrawnOnsets } from "./drawnonsets.js";
import { HeardClock } from "./heardclock.js";
import { Hearing } from "./hearing.js";
import { lateGuardMs } from "./lateguard.js";
import { OutputLatency, reportedLatency } from "./latency.js";
import { Link } from "./link.js";
import { MouthBlend } from "./mouthblend.js";
import { OnsetCalibration } from "./onsetcalibration.js";
import { Playhead } from "./playhead.js";
import { RecentSet } from "./recentset.js";
import { VisemeTrack } from "./visemetrack.js";
import { FrameStats, Presentation, RenderBudget } from "./framestats.js";
import { TimeSync } from "./timesync.js";

const STATS_PERIOD_MS = 5000;
// the server's sample rate, viseme set and onset thresholds (server/facts.py)
const facts = pageFacts();
const SAMPLE_RATE = facts.sample_rate;
// `?calibration=off` keeps measuring but never corrects: the benchmark's uncalibrated baseline
const params = new URLSearchParams(location.search);
const CALIBRATE = params.get("calibration") !== "off";
// The lips are drawn this far ahead of the sound (the server's `stage.viseme_lead_ms`;
// `?lead=` overrides it, for tuning against `bench lipsync`)
const LEAD_MS = msSetting(params.get("lead") ?? document.body.dataset.visemeLeadMs, 100);
// A short viseme inside a word stays in the mouth's shape this long (`stage.viseme_hold_ms`;
// `?hold=` overrides it)
const HOLD_MS = msSetting(params.get("hold") ?? document.body.dataset.visemeHoldMs, 200);
// `?detail=0.2..1` sets the figure's tessellation (the avatar's own choice by default)
const DETAIL = ((d) => (d >= 0.2 && d <= 1 ? d : null))(Number(params.get("detail") ?? NaN));
// `?latency=0.25` (seconds, or a hint's name) asks the audio context for that output latency:
// the tests stand in for a slow device with it
const LATENCY_HINT = latencyHint(params.get("latency"));
const $ = (id) => document.getElementById(id);

const canvas = $("avatar");
const { avatar, renderer } = makeAvatar(canvas);
const visemes = new VisemeTrack({ sampleRate: SAMPLE_RATE, holdMs: HOLD_MS });
const mouth = new MouthBlend();
const captions = new CaptionTrack({ sampleRate: SAMPLE_RATE });
const { loud, quiet } = facts.onsets;
const calibration = new OnsetCalibration({ sampleRate: SAMPLE_RATE, loud, quiet });
const playhead = new Playhead({ sampleRate: SAMPLE_RATE });
const onsets = new DrawnOnsets({ sampleRate: SAMPLE_RATE });
const frames = new FrameStats();
const presentation = new Presentation();
let drawnLast = null; // the last frame drawn: its lip-sync figure waits for the next frame
const hearing = new Hearing($("stage-audio"), { latencyHint: LATENCY_HINT, sampleRate: SAMPLE_RATE });
const latency = new OutputLatency(); // the device's: what is rendered is heard that much later
let clock = null;
let calibrationMs = 0; // a property of this browser's audio path: kept across reconnects
let heard = { sample: null, viseme: "sil", mouth: 0 };
let timesyncSession = 0;
let duck = null; // after an interrupt: {at, next}, its sample and the next line's start
// sound comes back this long before the next line: the heard clock may be some ms behind
const REOPEN_LEAD = (100 * SAMPLE_RATE) / 1000;
const stopped = new RecentSet(256); // interrupted utterances: their late events are dropped

const link = new Link({
  onEvent(name, data) {
    if (!data || typeof data !== "object") return;
    if (name === "visemes") stopped.has(data.utterance_id) || visemes.add(data);
    else if (name === "utterance") stopped.has(data.id) || heardNext(data);
    else if (name === "interrupt") {
      for (const id of data.utterances ?? []) stopped.add(id);
      const role = data.role ?? null;
      const at = role === null ? duckUntil(data) : data.at_sample;
      visemes.cut(at, role);
      captions.cut(at, role);
    } else if (name === "chat") chat.show(data);
  },
  onTrack(stream, receiver, info) {
    hearing.attach(stream);
    clock = new HeardClock(receiver, {
      sampleRate: SAMPLE_RATE, rtpBase: info?.rtp_base ?? 0, lookaheadMs: hearing.lookaheadMs,
    });
    clock.calibrationMs = calibrationMs;
    showSoundGate();
  },
  onState(state, detail) {
    const el = $("link-state");
    el.dataset.state = state;
    el.textContent = state === "live" ? "live" : state === "connecting" ? "connecting…" : "reconnecting…";
    el.title = detail;
    $("live-badge").hidden = state !== "live";
    if (state === "live") {
      const session = ++timesyncSession; // one exchange loop per session
      timesync.run(() => link.connected && session === timesyncSession);
    }
  },
  onReset() {
    duck = null;
    hearing.open();
    // a new session may face a restarted server: its sample clock starts afresh
    visemes.clear();
    captions.clear();
    playhead.reset();
    mouth.reset();
    hearing.detach();
    timesync.reset();
    clock = null;
  },
});
const timesync = new TimeSync((event, data) => link.call(event, data));
const chat = new ChatColumn(
  { log: $("chat-log"), form: $("chat-form"), input: $("chat-text"), error: $("chat-error") },
  (text) => link.call("chat", { text }),
);

// An interrupt of the whole show silences the audio already buffered here at once, rather than
// when the heard sample reaches the cut (a role's interrupt leaves the others' speech alone).
// The page ducks even when its clock says the cut has been heard (the clock can be tens of ms
// off while the jitter buffer stretches), and opens again just before the next line: the
// stream carries only silence until then. Returns where the timeline is cut: the mouth stops
// with the sound, at the sample heard now if that comes before the interrupt's.
function duckUntil(data) {
  // ducked as it is rendered: what the output device holds already is still heard
  const lastHeard = clock ? clock.renderedSampleAt(performance.now()) : null;
  if (lastHeard === null) return data.at_sample;
  duck = { at: data.at_sample, next: null };
  hearing.duck();
  return Math.min(lastHeard, data.at_sample);
}

function latencyHint(value) {
  if (["interactive", "balanced", "playback"].includes(value)) return value;
  const s = Number(value);
  return value !== null && Number.isFinite(s) && s > 0 && s <= 2 ? s : "interactive";
}

// a setting in ms from the URL or the page: 0 unless a number from 0 to `most`
function msSetting(value, most) {
  const ms = Number(value);
  return Number.isFinite(ms) && ms >= 0 && ms <= most ? ms : 0;
}

function heardNext(phrase) {
  captions.add(phrase);
  if (duck && duck.next === null && Number.isFinite(phrase.start_sample)) duck.next = phrase.start_sample;
}

function makeAvatar(el) {
  try {
    const options = { visemes: facts.visemes, ...(DETAIL === null ? {} : { detail: DETAIL }) };
    return { avatar: new Avatar(el, options), renderer: "webgl" };
  } catch (err) {
    console.warn("WebGL unavailable, drawing the avatar in 2D:", err);
    return { avatar: new FlatAvatar(el), renderer: "canvas2d" };
  }
}

// Browsers may hold audio until the viewer's first click: say so, and start on that click.
function showSoundGate() {
  $("sound-gate").hidden = hearing.running || clock === null;
}
hearing.onchange = showSoundGate;
$("sound-gate").addEventListener("click", () => hearing.resume().then(showSoundGate));

function frame(now) {
  const begun = performance.now();
  const dt = frames.tick(now);
  if (drawnLast) countOnset(drawnLast, now);
  const displayMs = frames.displayMs();
  // A frame's picture is seen from the vsync after the one it was begun at (`now`, the
  // frame's timestamp) until the next frame's replaces it: the mouth is drawn for the middle
  // of that time. Timed from the callback's own start instead, which comes 1-20 ms after the
  // timestamp by how busy the main thread is, the drawn sample jumped by that much between
  // frames, and a viseme starting in a jump was shown up to that much late. A frame begun so
  // late that its scripts will run past that vsync is seen a vsync later (Presentation).
  const appears = now + frames.period * presentation.forecast(begun - now, frames.period);
  const seen = appears + Math.min(displayMs, 100) / 2;
  const lead = LEAD_MS + lateGuardMs(displayMs);
  let sample = null;
  let errorMs = 0; // what the heard clock still gets wrong at speech onsets: the mouth eases
  // the device's latency, followed at once while the mouth rests and slewed while it moves
  const reading = reportedLatency(hearing.ctx);
  latency.update(reading, now, avatar.mouthOpen < 0.05);
  if (clock) {
    clock.poll();
    clock.outputLatencyMs = latency.ms ?? 0;
    const samples = hearing.read(reading.ms);
    if (samples) {
      // timed when rendered (see renderedAt), not at the frame's timestamp. (After an
      // interrupt the stream still carries speech that was cut: its onsets were cut from the
      // timeline too, so nothing is matched with them.)
      calibration.step(samples, hearing.readEnd, clock, visemes, hearing.perMs);
      // the onset is found a look-ahead before it is heard: the clock moves for what entered
      // from the quiet before it on, and the viewer sees no jump
      const anchor = calibration.anchorMs();
      if (CALIBRATE && anchor !== null) {
        clock.calibrate(anchor, calibration.anchorFrom);
        calibrationMs = anchor;
      }
    }
    errorMs = calibration.offsetMs() ?? 0;
    sample = playhead.at(clock.sampleAt(seen + lead));
    const rendered = clock.renderedSampleAt(now); // what passes the ducking now
    if (duck?.next != null && rendered >= Math.max(duck.at, duck.next - REOPEN_LEAD)) {
      duck = null;
      hearing.open();
    }
  }
  // the timeline is read ahead by the easing's lag, so easing widens a transition, not delays it
  const ahead = (mouth.leadMs(errorMs, displayMs) * SAMPLE_RATE) / 1000;
  const drawn = mouth.step(sample === null ? {} : visemes.weightsAt(sample + ahead), errorMs, dt);
  avatar.setVisemes(drawn);
  avatar.update(dt / 1000, now / 1000);
  avatar.render();
  const shown = sample === null ? null : visemes.frameAt(sample);
  // the sample heard now (API.md's current_sample); the mouth shows `sample`, a little ahead
  heard = { sample: clock ? clock.sampleAt(performance.now()) : null, viseme: shown?.viseme ?? "sil", mouth: avatar.mouthOpen };
  drawnLast = null;
  if (sample !== null) {
    visemes.markSeen(sample, drawn);
    visemes.prune(sample);
    showCaption(captions.at(sample));
    drawnLast = { stamp: now, period: frames.period, shown, sample, drawnFor: seen + lead, errorMs };
  }
  const ended = performance.now();
  presentation.done(ended - begun);
  if (drawnLast) drawnLast.ended = ended;
  requestAnimationFrame(frame);
}

// The picture of a viseme appears when its first frame is seen, though the frame was drawn for
// `drawnFor`: the figure is against the sound heard when it appears, counted once the next
// frame's timestamp `next` says whether the frame made its vsync. What the clock still gets
// wrong at heard onsets (`errorMs`, positive: the mouth leads) counts too.
function countOnset(d, next) {
  const appears = Presentation.seen(d.stamp, d.ended, next, d.period);
  onsets.frame(d.shown, d.sample, appears - d.drawnFor - d.errorMs, serverMs(appears));
}

/** The server's clock (ms since the Unix epoch) at page time `t`; null until timesync measured it. */
function serverMs(t) {
  const offset = timesync.offsetMs;
  return offset === null ? null : performance.timeOrigin + t + offset;
}

let captionShown = null;
function showCaption(phrase) {
  if (phrase === captionShown) return;
  captionShown = phrase;
  const el = $("caption");
  el.textContent = phrase ? phrase.text : "";
  el.classList.toggle("on", Boolean(phrase));
}

function state() {
  const now = performance.now();
  return {
    connected: link.connected,
    audio_playing: Boolean(clock && hearing.running && clock.live(now)),
    current_sample: heard.sample,
    viseme: heard.viseme,
    mouth_open: heard.mouth,
    renderer,
    fps: frames.fps(),
  };
}

function stats() {
  const all = {
    lipsync_offset_ms: calibration.offsetMs(),
    lipsync_calibration_ms: clock ? clock.calibrationMs : calibrationMs,
    fps: frames.fps(),
    dropped_frames: frames.dropped,
    frame_jitter_ms: frames.jitterMs(),
    clock_offset_ms: timesync.offsetMs,
    clock_uncertainty_ms: timesync.uncertaintyMs,
    render_scale: budget.scale,
    visemes_seen_share: visemes.seenShare(),
    // when the browser reports no latency the page cannot know when it is heard: it says so
    output_latency_ms: latency.source === "none" ? null : latency.ms,
  };
  const known = Object.entries(all).filter(([, v]) => Number.isFinite(v));
  return { ...Object.fromEntries(known), output_latency_source: latency.source };
}

// `output()`: the audio the page plays, as a MediaStream; `heard()`: the WebAudio nodes the
// page hears through, for a meter that should hear exactly what it does (tests, tools)
window.allnighter = { state, stats, output: () => hearing.tap.stream, heard: () => hearing.nodes() };
window.addEventListener("resize", () => avatar.resize());
// each report also carries the lip-sync offsets drawn since the last one (picture − sound, ms)
// and when each utterance's first voiced viseme was heard and seen (server clock)
setInterval(() => {
  const report = { lipsync_onsets_ms: onsets.take(), utterance_onsets: onsets.takeUtterances() };
  link.send("client_stats", { ...stats(), ...report });
}, STATS_PERIOD_MS);
const budget = new RenderBudget();
let missedBefore = 0;
setInterval(() => {
  const scale = budget.check(frames.missed - missedBefore);
  missedBefore = frames.missed;
  if (scale !== null) avatar.setResolutionScale(scale);
}, 1000);
link.start();
requestAnimationFrame(frame);
