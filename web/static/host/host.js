// The host desk: sign in with the host token, say lines, prompt characters, answer viewer chat,
// interrupt, and watch the show (GET /api/v1/show, once a second). No framework; every piece of
// text from the server or a viewer goes into the page with textContent, never as HTML.

const TOKEN_KEY = "allnighter.hostToken"; // sessionStorage: remembered for this tab only
const POLL_MS = 1000;
const SAMPLE_RATE = 48000;

const $ = (id) => document.getElementById(id);
let token = null;
let pollTimer = null;
let polling = false;

// ---- small DOM helpers ----------------------------------------------------------------------
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c) node.append(c);
  return node;
}

function setText(node, text) {
  const t = text ?? "";
  if (node.textContent !== t) node.textContent = t;
}

// Update a list in place, keyed by id, so buttons under the pointer are not rebuilt each second.
function syncList(list, items, make, update, emptyNode) {
  const existing = new Map([...list.children].map((li) => [li.dataset.key, li]));
  let prev = null;
  for (const item of items) {
    let li = existing.get(item.id);
    if (li) existing.delete(item.id);
    else {
      li = make(item);
      li.dataset.key = item.id;
    }
    update(li, item);
    const want = prev ? prev.nextSibling : list.firstChild;
    if (want !== li) list.insertBefore(li, want);
    prev = li;
  }
  for (const li of existing.values()) li.remove();
  if (emptyNode) emptyNode.hidden = items.length > 0;
}

function ms(value) {
  if (value === null || value === undefined) return "—";
  return value >= 10000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`;
}

function clock(seconds) {
  const s = Math.floor(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = (n) => String(n).padStart(2, "0");
  return `${h}:${pad(m)}:${pad(s % 60)}`;
}

function timeOfDay(msEpoch) {
  return new Date(msEpoch).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

// ---- the API --------------------------------------------------------------------------------
async function api(method, path, body, withToken = token) {
  const headers = { Authorization: `Bearer ${withToken}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
  } catch (err) {
    return { status: 0, data: { error: "the server cannot be reached" } };
  }
  try {
    return { status: res.status, data: await res.json() };
  } catch {
    // not JSON (a proxy's error page, a body cut short): an error, whatever the status said
    const error = `${res.status} ${res.statusText}: the answer was not JSON`;
    return { status: res.ok ? 502 : res.status, data: { error } };
  }
}

function explain(status, data) {
  const msg = data && data.error ? data.error : `error ${status}`;
  if (status === 429) return `Queue full — ${msg}. Wait for a line to finish.`;
  if (status === 413) return `Too long — ${msg}.`;
  if (status === 401) return "Wrong host token — sign in again.";
  if (status === 503) return "The show is still loading its models.";
  return msg.charAt(0).toUpperCase() + msg.slice(1);
}

// ---- sign in / out --------------------------------------------------------------------------
async function signIn(candidate, { quiet = false } = {}) {
  const button = $("login");
  button.disabled = true;
  setText($("login-error"), quiet ? "" : "Checking…");
  $("login-error").classList.remove("error");
  const { status, data } = await api("GET", "/api/v1/show", undefined, candidate);
  button.disabled = false;
  $("login-error").classList.add("error");
  if (status === 200) {
    token = candidate;
    sessionStorage.setItem(TOKEN_KEY, candidate);
    setText($("login-error"), "");
    $("token").value = "";
    $("login-card").hidden = true;
    $("desk").hidden = false;
    render(data);
    startPolling();
    $("say-text").focus();
    return true;
  }
  setText($("login-error"), status === 401 ? "Wrong host token" : explain(status, data));
  $("token").select();
  return false;
}

function signOut(message = "") {
  token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  clearTimeout(pollTimer);
  pollTimer = null;
  $("desk").hidden = true;
  $("login-card").hidden = false;
  setText($("login-error"), message);
  $("token").focus();
}

// ---- live refresh ---------------------------------------------------------------------------
function startPolling() {
  clearTimeout(pollTimer);
  pollTimer = setTimeout(poll, POLL_MS);
}

async function poll() {
  if (!token || polling) return;
  polling = true;
  const { status, data } = await api("GET", "/api/v1/show");
  polling = false;
  if (!token) return;
  if (status === 401) {
    signOut("Wrong host token");
    return;
  }
  // whatever comes back, the panel polls on: one bad answer must not freeze it for the night
  try {
    if (status === 200) render(data);
    else showLink("offline", status === 0 ? "offline" : `error ${status}`, explain(status, data));
  } catch (err) {
    console.error("the show's state could not be shown", err);
    showLink("offline", "bad answer", `The show's state could not be shown: ${err.message}`);
  }
  pollTimer = setTimeout(poll, POLL_MS);
}

async function refreshNow() {
  if (!token) return;
  const { status, data } = await api("GET", "/api/v1/show");
  if (status !== 200) return; // the next poll says what is wrong
  try {
    render(data);
  } catch (err) {
    console.error("the show's state could not be shown", err);
  }
}

// `why`: the whole message, on hover (the pill has room for a word or two)
function showLink(state, text, why = "") {
  const pill = $("show-state");
  pill.dataset.state = state;
  setText(pill, text);
  pill.title = why;
}

let lastShow = null;

function render(show) {
  lastShow = show;
  const h = show.health || {};
  if (h.status === "ok") {
    const level = h.fallback_level || 0;
    if (level > 0) showLink("degraded", `live · fallback ${level}`);
    else showLink("live", h.night ? "live · night" : "live");
  } else {
    showLink("loading", h.step ? `loading · ${h.step}` : "loading");
  }
  setText($("on-air"), clock((h.current_sample || 0) / (h.sample_rate || SAMPLE_RATE)));
  const v = show.viewers || {};
  setText($("viewer-count"), String(Math.max(v.webrtc ?? 0, v.sockets ?? 0)));
  setText($("queue-count"), `${show.queue.length} / ${show.queue_max}`);
  $("queue-count").dataset.full = show.queue.length >= show.queue_max ? "true" : "false";
  setText($("queue-cap"), `${show.queue.length} / ${show.queue_max}`);
  const ttfa = show.recent.map((u) => u.text_to_first_audio_ms).filter((x) => x !== null);
  setText($("ttfa-median"), ttfa.length ? ms(median(ttfa)) : "—");

  renderNow(show);
  const update = (li, u) => updateUtterance(li, u, show);
  syncList($("queue"), show.queue, makeUtterance, update, $("queue-empty"));
  const recent = [...show.recent].reverse();
  syncList($("recent"), recent, makeUtterance, update, $("recent-empty"));
  renderViewers(v);
  renderSpeechCheck(show.speech_check);
  const chat = [...show.chat].reverse();
  syncList($("chat-list"), chat, makeChat, updateChat, $("chat-empty"));
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

// ---- utterances -----------------------------------------------------------------------------
function makeUtterance(u) {
  return el(
    "li",
    { class: "utt" },
    el(
      "div",
      { class: "utt-head" },
      el("span", { class: "chip" }),
      el("span", { class: "who" }),
      el("span", { class: "ttfa", title: "text-to-first-audio" }),
    ),
    el("p", {
      class: "xmodal",
      title: "cross-modal offsets: audio − text, heard − audio, picture − heard (median of viewers)",
    }),
    el("p", { class: "utt-text" }),
    el("p", { class: "utt-reply" }),
  );
}

function updateUtterance(li, u, show) {
  li.dataset.id = u.id;
  li.dataset.state = u.state;
  li.dataset.mode = u.mode;
  const [chip, who, ttfa] = li.firstChild.children;
  const words = phase(u, show);
  setText(chip, words);
  chip.dataset.state = u.state;
  chip.dataset.phase = words.replace(" ", "-");
  li.dataset.phase = chip.dataset.phase;
  setText(who, `${u.role} · ${u.mode === "chat" ? "prompt" : "verbatim"}`);
  setText(ttfa, u.text_to_first_audio_ms === null ? "" : ms(u.text_to_first_audio_ms));
  const x = u.cross_modal || {};
  const xmodal = li.children[1];
  setText(xmodal, crossModal(x));
  xmodal.hidden = x.audio_minus_text_ms == null;
  setText(li.children[2], u.text);
  const reply = li.children[3];
  const spoken = u.mode === "chat" ? u.spoken_text : "";
  const err = u.error ? `error: ${u.error}` : "";
  setText(reply, spoken ? `↳ ${spoken}` : err);
  reply.hidden = !spoken && !err;
}

// Text → audio → heard → picture, each against the one before: where an utterance's time went
function crossModal(x) {
  const parts = [`text→audio ${ms(x.audio_minus_text_ms)}`];
  if (x.viewers) {
    parts.push(`audio→heard ${ms(x.heard_minus_audio_ms)}`);
    const who = `${x.viewers} viewer${x.viewers === 1 ? "" : "s"}`;
    parts.push(`picture−heard ${signedMs(x.picture_minus_heard_ms)} (${who})`);
  }
  return parts.join(" · ");
}

// What the listeners hear right now: the speaking utterance whose audio has started at the
// broadcast's live edge (the stage schedules lines ahead, so several can be "speaking").
function onAir(show) {
  const now = show.health.current_sample || 0;
  const started = show.recent.filter(
    (u) => u.state === "speaking" && u.start_sample !== null && u.start_sample <= now,
  );
  if (started.length) return started.reduce((a, b) => (b.start_sample > a.start_sample ? b : a));
  return show.current || show.recent.find((u) => u.state === "speaking") || null;
}

// The chip's words: a "speaking" utterance is on air, or up next (being made or scheduled,
// not heard yet).
function phase(u, show) {
  if (u.state !== "speaking") return u.state;
  const heard = u.start_sample !== null && u.start_sample <= (show.health.current_sample || 0);
  return heard ? "on air" : "up next";
}

function renderNow(show) {
  const box = $("now");
  const cur = onAir(show);
  if (!cur) {
    if (!box.querySelector(".empty")) {
      box.replaceChildren(el("p", { class: "empty", text: "Silence — nothing on air." }));
    }
    box.dataset.id = "";
    return;
  }
  if (box.dataset.id !== cur.id) {
    box.dataset.id = cur.id;
    box.replaceChildren(
      el(
        "div",
        { class: "now-head" },
        el("span", { class: "live-dot", "aria-hidden": "true" }),
        el("span", { class: "who" }),
        el("span", { class: "ttfa" }),
      ),
      el("p", { class: "now-text" }),
      el("p", { class: "utt-reply" }),
    );
  }
  const [, who, ttfa] = box.firstChild.children;
  setText(who, `${cur.role} · ${cur.mode === "chat" ? "prompt" : "verbatim"}`);
  setText(ttfa, cur.text_to_first_audio_ms === null ? "waiting for audio…" : `first audio ${ms(cur.text_to_first_audio_ms)}`);
  setText(box.children[1], cur.text);
  const reply = box.children[2];
  const spoken = cur.mode === "chat" ? cur.spoken_text : "";
  setText(reply, spoken ? `↳ ${spoken}` : "");
  reply.hidden = !spoken;
}

// ---- viewers --------------------------------------------------------------------------------
function renderViewers(v) {
  setText($("viewers-reporting"), v.reporting ? `${v.reporting} reporting` : "");
  const figs = [
    ["Listening (audio)", String(v.webrtc ?? 0), "big"],
    ["Connected", String(v.sockets ?? 0), "big"],
    ["Median fps", v.fps_median === null ? "—" : v.fps_median.toFixed(0), fpsClass(v.fps_median)],
    ["Lowest fps", v.fps_min === null ? "—" : v.fps_min.toFixed(0), fpsClass(v.fps_min)],
    ["Dropped", v.dropped_frames === null ? "—" : String(v.dropped_frames)],
    ["Lip-sync", signedMs(v.lipsync_offset_ms_median), lipClass(v.lipsync_offset_ms_median)],
    ["Worst sync", signedMs(v.lipsync_offset_ms_worst), lipClass(v.lipsync_offset_ms_worst)],
    ["Clock offset", signedMs(v.clock_offset_ms_median)],
    ["Mouth − sound", signedMs(v.lipsync_drawn_ms_p50), lipClass(v.lipsync_drawn_ms_p50)],
    ["|p95|", v.lipsync_drawn_ms_p95_abs == null ? "—" : `${v.lipsync_drawn_ms_p95_abs.toFixed(0)} ms`, lipClass(v.lipsync_drawn_ms_p95_abs)],
    ["In ATSC window", share(v.lipsync_drawn_in_atsc)],
    ["In EBU R37", share(v.lipsync_drawn_in_r37)],
    ["Frame jitter", v.frame_jitter_ms_worst == null ? "—" : `${v.frame_jitter_ms_worst.toFixed(0)} ms`],
    ["Audio out latency", outputLatency(v)],
  ];
  fillStats($("viewers"), figs);
}

// the viewers' output device latency: median (and most), and how many pages cannot know theirs
function outputLatency(v) {
  const ms = (x) => `${x.toFixed(0)} ms`;
  let text = v.output_latency_ms_median == null ? "—" : ms(v.output_latency_ms_median);
  if (v.output_latency_ms_max != null && v.output_latency_ms_max !== v.output_latency_ms_median) {
    text += ` (up to ${ms(v.output_latency_ms_max)})`;
  }
  return v.output_latency_unknown ? `${text}; ${v.output_latency_unknown} unknown` : text;
}

/** A grid of [label, value, class] figures, its cells kept across refreshes. */
function fillStats(box, figs) {
  if (box.children.length !== figs.length) {
    box.replaceChildren(
      ...figs.map(() => el("div", { class: "stat" }, el("span", { class: "k" }), el("span", { class: "v" }))),
    );
  }
  figs.forEach(([k, val, cls], i) => {
    const cell = box.children[i];
    cell.className = `stat ${cls || ""}`.trim();
    setText(cell.children[0], k);
    setText(cell.children[1], val);
  });
}

// ---- speech check (ASR feedback) --------------------------------------------------------------
function renderSpeechCheck(c) {
  setText($("check-state"), c ? `${c.checked} checked · ${c.skipped} skipped` : "off");
  const figs = c
    ? [
        ["Flagged", String(c.flagged), c.flagged ? "warn" : "good"],
        ["Timing drift", signedMs(c.drift_ms), lipClass(c.drift_ms)],
        ["Viseme correction", signedMs(c.correction_ms)],
      ]
    : [];
  fillStats($("speech-check"), figs);
  const flagged = c ? c.flagged_recent : [];
  syncList($("flagged"), flagged, makeFlagged, updateFlagged, $("flagged-empty"));
}

function makeFlagged() {
  return el("li", { class: "utt flagged" }, el("p", { class: "utt-text" }), el("p", { class: "utt-reply" }));
}

function updateFlagged(li, f) {
  li.dataset.id = f.utterance_id;
  setText(li.children[0], f.text);
  setText(li.children[1], `heard: ${f.heard || "(nothing)"} · WER ${f.wer.toFixed(2)}`);
}

function signedMs(x) {
  if (x === null || x === undefined) return "—";
  return `${x > 0 ? "+" : ""}${x.toFixed(0)} ms`;
}

function share(x) {
  return x === null || x === undefined ? "—" : `${(100 * x).toFixed(0)} %`;
}

function fpsClass(x) {
  if (x === null || x === undefined) return "";
  return x >= 50 ? "good" : x >= 24 ? "warn" : "bad";
}

function lipClass(x) {
  if (x === null || x === undefined) return "";
  const a = Math.abs(x);
  return a <= 45 ? "good" : a <= 100 ? "warn" : "bad";
}

// ---- viewer chat ----------------------------------------------------------------------------
function makeChat(m) {
  const button = el("button", {
    type: "button",
    class: "btn small",
    "data-testid": "answer",
    text: "Answer",
    onclick: () => answer(m.id, li),
  });
  const li = el(
    "li",
    { class: "msg" },
    el(
      "div",
      { class: "msg-head" },
      el("span", { class: "from" }),
      el("span", { class: "time muted" }),
      button,
    ),
    el("p", { class: "msg-text" }),
    el("p", { class: "error small-text" }),
  );
  return li;
}

function updateChat(li, m) {
  li.dataset.id = m.id;
  li.dataset.answered = m.answered ? "true" : "false";
  const [from, time, button] = li.firstChild.children;
  setText(from, m.from);
  setText(time, timeOfDay(m.time));
  setText(li.children[1], m.text);
  if (m.answered) {
    button.disabled = true;
    setText(button, "Answered");
    button.classList.add("done");
  } else if (!button.dataset.busy) {
    button.disabled = false;
    setText(button, "Answer");
    button.classList.remove("done");
  }
}

async function answer(id, li) {
  const button = li.querySelector("button");
  const errLine = li.children[2];
  button.disabled = true;
  button.dataset.busy = "1";
  setText(button, "Sending…");
  setText(errLine, "");
  const { status, data } = await api("POST", "/api/v1/chat/answer", { id, role: $("chat-role").value });
  delete button.dataset.busy;
  if (status === 202 || status === 409) {
    li.dataset.answered = "true";
    setText(button, "Answered");
    button.classList.add("done");
  } else {
    button.disabled = false;
    setText(button, "Answer");
    setText(errLine, explain(status, data));
    if (status === 401) signOut("Wrong host token");
  }
  refreshNow();
}

// ---- say and interrupt ----------------------------------------------------------------------
async function say(mode) {
  const text = $("say-text").value.trim();
  setText($("say-ok"), "");
  if (!text) {
    setText($("say-error"), mode === "chat" ? "Type a prompt first." : "Type a line first.");
    $("say-text").focus();
    return;
  }
  setText($("say-error"), "");
  const buttons = [$("say-verbatim"), $("say-chat")];
  buttons.forEach((b) => (b.disabled = true));
  const { status, data } = await api("POST", "/api/v1/say", { text, mode, role: $("say-role").value });
  buttons.forEach((b) => (b.disabled = false));
  if (status === 202) {
    $("say-text").value = "";
    updateCount();
    setText($("say-ok"), mode === "chat" ? "Prompt queued." : "Line queued.");
    setTimeout(() => setText($("say-ok"), ""), 2500);
    refreshNow();
  } else {
    setText($("say-error"), explain(status, data));
    if (status === 401) signOut("Wrong host token");
  }
  $("say-text").focus();
}

async function interrupt() {
  const button = $("interrupt");
  button.disabled = true;
  const { status, data } = await api("POST", "/api/v1/interrupt", {});
  button.disabled = false;
  const msg = $("interrupt-msg");
  if (status === 200) {
    setText(msg, `Interrupted at ${clock(data.at_sample / SAMPLE_RATE)}.`);
    msg.className = "muted center";
  } else {
    setText(msg, explain(status, data));
    msg.className = "error center";
  }
  setTimeout(() => setText(msg, ""), 4000);
  refreshNow();
}

function updateCount() {
  const n = $("say-text").value.length;
  setText($("say-count"), `${n} / 2000`);
}

// ---- wiring ---------------------------------------------------------------------------------
$("login-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const candidate = $("token").value.trim();
  if (!candidate) {
    setText($("login-error"), "Enter the host token.");
    return;
  }
  signIn(candidate);
});
$("signout").addEventListener("click", () => signOut(""));
$("say-form").addEventListener("submit", (e) => {
  e.preventDefault();
  say("verbatim");
});
$("say-chat").addEventListener("click", () => say("chat"));
$("say-text").addEventListener("input", updateCount);
$("say-text").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    say("verbatim");
  }
});
$("interrupt").addEventListener("click", interrupt);

const remembered = sessionStorage.getItem(TOKEN_KEY);
if (remembered) signIn(remembered, { quiet: true });
else $("token").focus();

// for tests and tools: the last snapshot the desk rendered
window.allnighterHost = { show: () => lastShow };
