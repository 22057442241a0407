// A GET /api/v1/show answer turned into what the host desk displays: every text, count, state
// and class, ready for the page (host.js) to put in place. No DOM. `facts`: the page's
// (../common/facts.js): the sample rate that times the show, the lip-sync windows.

import { median } from "../common/median.js";
import { clock, crossModal, ms, outputLatency, share, signedMs, timeOfDay } from "./format.js";
import { fpsClass, lipClass } from "./grade.js";

/** Everything the desk shows of `show`; throws where the answer is not the show's shape. */
export function describeShow(show, facts) {
  const h = show.health || {};
  const v = show.viewers || {};
  const ttfa = show.recent.map((u) => u.text_to_first_audio_ms).filter((x) => x !== null);
  return {
    link: linkState(h),
    onAir: clock((h.current_sample || 0) / (h.sample_rate || facts.sample_rate)),
    viewerCount: String(Math.max(v.webrtc ?? 0, v.sockets ?? 0)),
    queueCount: `${show.queue.length} / ${show.queue_max}`,
    queueFull: show.queue.length >= show.queue_max,
    ttfaMedian: ttfa.length ? ms(median(ttfa)) : "—",
    now: nowSpeaking(show),
    queue: show.queue.map((u) => utterance(u, show)),
    recent: [...show.recent].reverse().map((u) => utterance(u, show)),
    viewers: viewers(v, facts.sync_windows),
    speechCheck: speechCheck(show.speech_check, facts.sync_windows),
    chat: [...show.chat].reverse().map(chatMessage),
    alerts: [...(show.alerts || [])].reverse().map(alertItem),
    autopilot: autopilot(show.autopilot),
    fallback: fallback(h.fallback),
  };
}

/** The night's ladder: the level, why, and the pin's choice ("auto" when not pinned). */
export function fallback(f) {
  if (!f) return { choice: "auto", state: "" };
  const night = f.night ? " · night window" : "";
  return {
    choice: f.pinned ? String(f.level) : "auto",
    state: `Level ${f.level}: ${f.reason}${night}`,
  };
}

const DOING = { greeting: "greeted new viewers", answer: "answered a viewer", topic: "talked about a topic" };

/** The autopilot's switch, what it did last, and the chat it would not answer on air. */
export function autopilot(a) {
  if (!a) return { on: false, state: "", refused: [] };
  const last = a.last ? `; last ${DOING[a.last] || a.last}` : "";
  return {
    on: a.enabled,
    state: `${a.enabled ? "On" : "Off"} · answers chat ${a.answer_chat.replace("_", " ")}${last}`,
    refused: [...a.refused].reverse().map((r) => ({ id: r.id, text: r.text, why: `refused: ${r.why}` })),
  };
}

/** The show's state pill: {state, text, why} (`why`: the whole message, on hover). */
export function linkState(h) {
  if (h.status === "ok") {
    const level = h.fallback_level || 0;
    const f = h.fallback;
    const why = f ? `fallback ${f.level}: ${f.reason}${f.pinned ? " (pinned)" : ""}` : "";
    if (level > 0) return { state: "degraded", text: `live · fallback ${level}`, why };
    return { state: "live", text: h.night ? "live · night" : "live", why };
  }
  return { state: "loading", text: h.step ? `loading · ${h.step}` : "loading", why: "" };
}

// What the listeners hear right now: the speaking utterance whose audio has started at the
// broadcast's live edge (the stage schedules lines ahead, so several can be "speaking").
export function onAir(show) {
  const now = show.health.current_sample || 0;
  const started = show.recent.filter(
    (u) => u.state === "speaking" && u.start_sample !== null && u.start_sample <= now,
  );
  if (started.length) return started.reduce((a, b) => (b.start_sample > a.start_sample ? b : a));
  return show.current || show.recent.find((u) => u.state === "speaking") || null;
}

// The chip's words: a "speaking" utterance is on air, or up next (being made or scheduled,
// not heard yet).
export function phase(u, show) {
  if (u.state !== "speaking") return u.state;
  const heard = u.start_sample !== null && u.start_sample <= (show.health.current_sample || 0);
  return heard ? "on air" : "up next";
}

function who(u) {
  return `${u.role} · ${u.mode === "chat" ? "prompt" : "verbatim"}`;
}

/** The "Now speaking" card: null in silence. */
export function nowSpeaking(show) {
  const cur = onAir(show);
  if (!cur) return null;
  const spoken = cur.mode === "chat" ? cur.spoken_text : "";
  return {
    id: cur.id,
    who: who(cur),
    ttfa:
      cur.text_to_first_audio_ms === null
        ? "waiting for audio…"
        : `first audio ${ms(cur.text_to_first_audio_ms)}`,
    text: cur.text,
    reply: spoken ? `↳ ${spoken}` : "",
    replyHidden: !spoken,
  };
}

/** One utterance of the queue or the last ones. */
export function utterance(u, show) {
  const words = phase(u, show);
  const x = u.cross_modal || {};
  const spoken = u.mode === "chat" ? u.spoken_text : "";
  const err = u.error ? `error: ${u.error}` : "";
  return {
    id: u.id,
    state: u.state,
    mode: u.mode,
    phase: words,
    phaseKey: words.replace(" ", "-"),
    who: who(u),
    ttfa: u.text_to_first_audio_ms === null ? "" : ms(u.text_to_first_audio_ms),
    crossModal: crossModal(x),
    crossModalHidden: x.audio_minus_text_ms == null,
    text: u.text,
    reply: spoken ? `↳ ${spoken}` : err,
    replyHidden: !spoken && !err,
  };
}

/** The viewers' card: who reports, and [label, value, class] figures. */
export function viewers(v, windows) {
  const lip = (x) => lipClass(x, windows);
  const figs = [
    ["Listening (audio)", String(v.webrtc ?? 0), "big"],
    ["Connected", String(v.sockets ?? 0), "big"],
    ["Median fps", v.fps_median === null ? "—" : v.fps_median.toFixed(0), fpsClass(v.fps_median)],
    ["Lowest fps", v.fps_min === null ? "—" : v.fps_min.toFixed(0), fpsClass(v.fps_min)],
    ["Dropped", v.dropped_frames === null ? "—" : String(v.dropped_frames)],
    ["Lip-sync", signedMs(v.lipsync_offset_ms_median), lip(v.lipsync_offset_ms_median)],
    ["Worst sync", signedMs(v.lipsync_offset_ms_worst), lip(v.lipsync_offset_ms_worst)],
    ["Clock offset", signedMs(v.clock_offset_ms_median)],
    ["Mouth − sound", signedMs(v.lipsync_drawn_ms_p50), lip(v.lipsync_drawn_ms_p50)],
    ["|p95|", v.lipsync_drawn_ms_p95_abs == null ? "—" : `${v.lipsync_drawn_ms_p95_abs.toFixed(0)} ms`, lip(v.lipsync_drawn_ms_p95_abs)],
    ["In ATSC window", share(v.lipsync_drawn_in_atsc)],
    ["In EBU R37", share(v.lipsync_drawn_in_r37)],
    ["Frame jitter", v.frame_jitter_ms_worst == null ? "—" : `${v.frame_jitter_ms_worst.toFixed(0)} ms`],
    ["Audio out latency", outputLatency(v)],
  ];
  return { reporting: v.reporting ? `${v.reporting} reporting` : "", figs };
}

/** The speech check (ASR feedback) card; `c` null when it is off. */
export function speechCheck(c, windows) {
  const figs = c
    ? [
        ["Flagged", String(c.flagged), c.flagged ? "warn" : "good"],
        ["Timing drift", signedMs(c.drift_ms), lipClass(c.drift_ms, windows)],
        ["Viseme correction", signedMs(c.correction_ms)],
      ]
    : [];
  const flagged = (c ? c.flagged_recent : []).map((f) => ({
    id: f.id,
    utteranceId: f.utterance_id,
    text: f.text,
    heard: `heard: ${f.heard || "(nothing)"} · WER ${f.wer.toFixed(2)}`,
  }));
  return { state: c ? `${c.checked} checked · ${c.skipped} skipped` : "off", figs, flagged };
}

const SERIES = {
  text_to_first_audio: "Text → audio",
  llm_first_token: "LLM first token",
  tts_first_audio: "TTS first audio",
  loop_lag: "Event loop lag",
  rss: "Server memory",
  gpu_fragmentation: "GPU fragmentation",
};

// a figure of an alert in its unit: a latency in ms, memory in MB, a share in per cent
function alertFigure(x, unit) {
  if (unit === "ms") return ms(x);
  if (unit === "bytes") return `${(x / 2 ** 20).toFixed(0)} MB`;
  return share(x);
}

/** An alert of the night (server/anomalies.py): what, how far over, when. */
export function alertItem(a) {
  const over = a.unit === "ms" ? "its p99 of the last minutes" : "its line";
  return {
    id: `${a.series}@${a.at_ms}`,
    what: SERIES[a.series] || a.series,
    figure: `${alertFigure(a.value, a.unit)}, over ${over} (${alertFigure(a.baseline, a.unit)})`,
    time: timeOfDay(a.at_ms),
  };
}

/** A viewer's chat message. */
export function chatMessage(m) {
  return { id: m.id, answered: Boolean(m.answered), from: m.from, time: timeOfDay(m.time), text: m.text };
}
