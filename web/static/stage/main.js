// The stage page: wires the link, the heard-audio clock, the viseme timeline and the avatar,
// and exposes `window.allnighter` (API.md's browser hook).

import { Avatar } from "./avatar.js";
import { FlatAvatar } from "./flatavatar.js";
import { ChatColumn } from "./chat.js";
import { Hearing, HeardClock, OnsetCalibration } from "./hearing.js";
import { Link } from "./link.js";
import { CaptionTrack, DrawnOnsets, Playhead, SAMPLE_RATE, VisemeTrack, slew } from "./lipsync.js";
import { FrameStats, RenderBudget } from "./framestats.js";
import { TimeSync } from "./timesync.js";

const STATS_PERIOD_MS = 5000;
// `?calibration=off` keeps measuring but never corrects: the benchmark's uncalibrated baseline
const CALIBRATE = new URLSearchParams(location.search).get("calibration") !== "off";
const $ = (id) => document.getElementById(id);

const canvas = $("avatar");
const { avatar, renderer } = makeAvatar(canvas);
const visemes = new VisemeTrack();
const captions = new CaptionTrack();
const calibration = new OnsetCalibration();
const playhead = new Playhead();
const onsets = new DrawnOnsets();
const frames = new FrameStats();
const hearing = new Hearing($("stage-audio"));
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
    clock = new HeardClock(receiver, info?.rtp_base ?? 0);
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
  const heardNow = clock ? clock.sampleAt(performance.now()) : null;
  if (heardNow === null) return data.at_sample;
  duck = { at: data.at_sample, next: null };
  hearing.duck();
  return Math.min(heardNow, data.at_sample);
}

function heardNext(phrase) {
  captions.add(phrase);
  if (duck && duck.next === null && Number.isFinite(phrase.start_sample)) duck.next = phrase.start_sample;
}

/** A set that forgets its oldest entries beyond `size` (an all-night show interrupts often). */
function RecentSet(size) {
  const set = new Set();
  return {
    has: (x) => set.has(x),
    add(x) {
      set.add(x);
      if (set.size > size) set.delete(set.values().next().value);
    },
  };
}

function makeAvatar(el) {
  try {
    return { avatar: new Avatar(el), renderer: "webgl" };
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
  const dt = frames.tick(now);
  let sample = null;
  if (clock) {
    clock.poll();
    const samples = hearing.read();
    if (samples && !duck) { // while ducked the stream plays what the timeline no longer holds
      calibration.step(samples, now, clock, visemes);
      const suggested = calibration.suggestedMs();
      if (CALIBRATE && suggested !== null) {
        clock.calibrationMs = calibrationMs = slew(clock.calibrationMs, suggested, dt);
      }
    }
    // A frame is seen for one frame interval after it is drawn: draw the mouth for the middle
    // of that interval, not its start (at 25 fps that is 20 ms).
    sample = playhead.at(clock.sampleAt(now + Math.min(frames.interval(), 100) / 2));
    if (duck?.next != null && clock.sampleAt(now) >= Math.max(duck.at, duck.next - REOPEN_LEAD)) {
      duck = null;
      hearing.open();
    }
  }
  avatar.setVisemes(sample === null ? {} : visemes.weightsAt(sample));
  avatar.update(dt / 1000, now / 1000);
  avatar.render();
  const shown = sample === null ? null : visemes.frameAt(sample);
  heard = { sample, viseme: shown?.viseme ?? "sil", mouth: avatar.mouthOpen };
  if (sample !== null) {
    // what the clock still gets wrong at heard onsets (positive: the mouth leads) counts too
    onsets.frame(shown, sample, -(calibration.remainingMs(clock.calibrationMs) ?? 0));
    visemes.prune(sample);
    showCaption(captions.at(sample));
  }
  requestAnimationFrame(frame);
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
  };
  return Object.fromEntries(Object.entries(all).filter(([, v]) => Number.isFinite(v)));
}

// `output()`: the audio the page plays, as a MediaStream (for meters and tests)
window.allnighter = { state, stats, output: () => hearing.tap.stream };
window.addEventListener("resize", () => avatar.resize());
// each report also carries the lip-sync offsets drawn since the last one (picture − sound, ms)
setInterval(() => link.send("client_stats", { ...stats(), lipsync_onsets_ms: onsets.take() }), STATS_PERIOD_MS);
const budget = new RenderBudget();
setInterval(() => {
  const scale = budget.check(frames.fps());
  if (scale !== null) avatar.setResolutionScale(scale);
}, 1000);
link.start();
requestAnimationFrame(frame);
