// The stage page: wires the link, the heard-audio clock, the viseme timeline and the avatar,
// and exposes `window.allnighter` (docs/api.md, "The browser hook"). The frame loop and what it keeps
// between frames are in frameloop.js.

import { pageFacts } from "../common/facts.js";
import { Avatar } from "./avatar.js";
import { Figure } from "./figure.js";
import { FlatAvatar } from "./flatavatar.js";
import { ChatColumn } from "./chat.js";
import { FrameLoop } from "./frameloop.js";
import { RenderBudget } from "./framestats.js";
import { Hearing } from "./hearing.js";
import { Link } from "./link.js";
import { TimeSync } from "./timesync.js";

const STATS_PERIOD_MS = 5000;
// the server's sample rate, viseme set and onset thresholds (server/facts.py)
const facts = pageFacts();
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

const options = { visemes: facts.visemes, cast: facts.cast, ...(DETAIL === null ? {} : { detail: DETAIL }) };
const figure = new Figure($("avatar"), {
  webgl: (el) => new Avatar(el, options),
  canvas2d: (el) => new FlatAvatar(el, facts.cast),
});
const hearing = new Hearing($("stage-audio"), { latencyHint: LATENCY_HINT, sampleRate: facts.sample_rate });
const timesync = new TimeSync((event, data) => link.call(event, data));
const loop = new FrameLoop({
  facts, avatar: figure.avatar, hearing, timesync, leadMs: LEAD_MS, holdMs: HOLD_MS, calibrate: CALIBRATE,
  showCaption: captionLine($("caption")),
});
let timesyncSession = 0;

const link = new Link({
  onEvent(name, data) {
    if (!data || typeof data !== "object") return;
    if (name === "chat") chat.show(data);
    else if (name === "state") showLevel(data.fallback_level);
    else loop.event(name, data);
  },
  onTrack(stream, receiver, info) {
    hearing.attach(stream);
    loop.listen(receiver, info);
    showSoundGate();
  },
  onState(state, detail) {
    const el = $("link-state");
    el.dataset.state = state;
    el.textContent = state === "live" ? "live" : state === "connecting" ? "connecting…" : "reconnecting…";
    el.title = detail;
    $("live-badge").hidden = state !== "live";
    if (state === "live") {
      loop.joinedAt = performance.now();
      const session = ++timesyncSession; // one exchange loop per session
      timesync.run(() => link.connected && session === timesyncSession);
    }
  },
  onReset() {
    loop.reset();
    timesync.reset();
  },
});
const chat = new ChatColumn(
  { log: $("chat-log"), form: $("chat-form"), input: $("chat-text"), error: $("chat-error") },
  (text) => link.call("chat", { text }),
);

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

// The show's fallback level (the `state` event): from level 3 the avatar is drawn in 2D
function showLevel(level) {
  if (!Number.isInteger(level) || !figure.level(level)) return;
  loop.avatar = figure.avatar;
  figure.avatar.setResolutionScale(budget.scale);
}

// Browsers may hold audio until the viewer's first click: say so, and start on that click.
function showSoundGate() {
  $("sound-gate").hidden = hearing.running || loop.clock === null;
}
hearing.onchange = showSoundGate;
$("sound-gate").addEventListener("click", () => hearing.resume().then(showSoundGate));

// The caption line: shows a phrase (or none), touching the page only when it changes.
function captionLine(el) {
  let shown = null;
  return (phrase) => {
    if (phrase === shown) return;
    shown = phrase;
    el.textContent = phrase ? phrase.text : "";
    el.classList.toggle("on", Boolean(phrase));
  };
}

function frame(now) {
  loop.frame(now);
  requestAnimationFrame(frame);
}

function state() {
  const now = performance.now();
  const { clock, heard, frames } = loop;
  return {
    connected: link.connected,
    audio_playing: Boolean(clock && hearing.running && clock.live(now)),
    current_sample: heard.sample,
    viseme: heard.viseme,
    mouth_open: heard.mouth,
    // each character's own mouth, by role (the cast's figures, left to right)
    mouths: Object.fromEntries(loop.cast.map((role, i) => [role, figure.avatar.mouthOpenOf(i)])),
    renderer: figure.renderer,
    fps: frames.fps(),
  };
}

function stats() {
  const { calibration, clock, frames, visemes, latency } = loop;
  const all = {
    lipsync_offset_ms: calibration.offsetMs(),
    lipsync_calibration_ms: clock ? clock.calibrationMs : loop.calibrationMs,
    fps: frames.fps(),
    dropped_frames: frames.dropped,
    frame_jitter_ms: frames.jitterMs(),
    clock_offset_ms: timesync.offsetMs,
    clock_uncertainty_ms: timesync.uncertaintyMs,
    render_scale: budget.scale,
    visemes_seen_share: visemes.seenShare(),
    // when the browser reports no latency the page cannot know when it is heard: it says so
    output_latency_ms: latency.source === "none" ? null : latency.ms,
    lookahead_ms: hearing.lookaheadMs, // how long the page holds the stream before playing it
  };
  const known = Object.entries(all).filter(([, v]) => Number.isFinite(v));
  return { ...Object.fromEntries(known), output_latency_source: latency.source };
}

// `output()`: the audio the page plays, as a MediaStream; `heard()`: the WebAudio nodes the
// page hears through, for a meter that should hear exactly what it does (tests, tools)
window.allnighter = { state, stats, output: () => hearing.tap.stream, heard: () => hearing.nodes() };
window.addEventListener("resize", () => figure.avatar.resize());
// each report also carries the lip-sync offsets drawn since the last one (picture − sound, ms)
// with whose mouth each was, and when each utterance's first voiced viseme was heard and seen
// (server clock)
setInterval(() => {
  link.send("client_stats", { ...stats(), ...loop.onsets.report() });
}, STATS_PERIOD_MS);
const budget = new RenderBudget();
watchRenderBudget();
link.start();
requestAnimationFrame(frame);

// Each second, the frames missed since the last check set the figure's resolution.
function watchRenderBudget() {
  let missedBefore = 0;
  setInterval(() => {
    const scale = budget.check(loop.frames.missed - missedBefore);
    missedBefore = loop.frames.missed;
    if (scale !== null) figure.avatar.setResolutionScale(scale);
  }, 1000);
}
