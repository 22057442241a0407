// The host desk: sign in with the host token, say lines, prompt characters, answer viewer chat,
// interrupt, and watch the show (GET /api/v1/show, once a second). This module is the page:
// what to show is worked out without it (showview.js, from the answer and the page's facts),
// as are the calls (api.js) and the polling (poller.js). No framework; every piece of text from
// the server or a viewer goes into the page with textContent, never as HTML.

import { pageFacts } from "../shared/facts.js";
import { callApi, explain } from "./api.js";
import { el, fillStats, setText, syncList } from "./dom.js";
import { clock } from "./format.js";
import { ShowPoller } from "./poller.js";
import { describeShow } from "./showview.js";

const TOKEN_KEY = "allnighter.hostToken"; // sessionStorage: remembered for this tab only

// the server's sample rate, lip-sync windows and text limits (server/facts.py)
const facts = pageFacts();
const $ = (id) => document.getElementById(id);
let token = null;
let lastShow = null;

const api = (method, path, body, withToken = token) => callApi(method, path, body, withToken);
const poller = new ShowPoller({
  fetchShow: () => api("GET", "/api/v1/show"),
  show: render,
  link: showLink,
  unauthorized: () => signOut("Wrong host token"),
});

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
    poller.start();
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
  poller.stop();
  $("desk").hidden = true;
  $("login-card").hidden = false;
  setText($("login-error"), message);
  $("token").focus();
}

// ---- live refresh ---------------------------------------------------------------------------
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

// the show's state pill; `why`: the whole message, on hover (the pill has room for a word or two)
function showLink({ state, text, why }) {
  const pill = $("show-state");
  pill.dataset.state = state;
  setText(pill, text);
  pill.title = why;
}

function render(show) {
  lastShow = show;
  const view = describeShow(show, facts);
  showLink(view.link);
  setText($("on-air"), view.onAir);
  setText($("viewer-count"), view.viewerCount);
  setText($("queue-count"), view.queueCount);
  $("queue-count").dataset.full = view.queueFull ? "true" : "false";
  setText($("queue-cap"), view.queueCount);
  setText($("ttfa-median"), view.ttfaMedian);

  renderNow(view.now);
  syncList($("queue"), view.queue, makeUtterance, updateUtterance, $("queue-empty"));
  syncList($("recent"), view.recent, makeUtterance, updateUtterance, $("recent-empty"));
  setText($("viewers-reporting"), view.viewers.reporting);
  fillStats($("viewers"), view.viewers.figs);
  renderSpeechCheck(view.speechCheck);
  syncList($("chat-list"), view.chat, makeChat, updateChat, $("chat-empty"));
}

// ---- utterances -----------------------------------------------------------------------------
function makeUtterance() {
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

function updateUtterance(li, u) {
  li.dataset.id = u.id;
  li.dataset.state = u.state;
  li.dataset.mode = u.mode;
  const [chip, who, ttfa] = li.firstChild.children;
  setText(chip, u.phase);
  chip.dataset.state = u.state;
  chip.dataset.phase = u.phaseKey;
  li.dataset.phase = chip.dataset.phase;
  setText(who, u.who);
  setText(ttfa, u.ttfa);
  const xmodal = li.children[1];
  setText(xmodal, u.crossModal);
  xmodal.hidden = u.crossModalHidden;
  setText(li.children[2], u.text);
  const reply = li.children[3];
  setText(reply, u.reply);
  reply.hidden = u.replyHidden;
}

function renderNow(cur) {
  const box = $("now");
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
  setText(who, cur.who);
  setText(ttfa, cur.ttfa);
  setText(box.children[1], cur.text);
  const reply = box.children[2];
  setText(reply, cur.reply);
  reply.hidden = cur.replyHidden;
}

// ---- speech check (ASR feedback) --------------------------------------------------------------
function renderSpeechCheck(c) {
  setText($("check-state"), c.state);
  fillStats($("speech-check"), c.figs);
  syncList($("flagged"), c.flagged, makeFlagged, updateFlagged, $("flagged-empty"));
}

function makeFlagged() {
  return el("li", { class: "utt flagged" }, el("p", { class: "utt-text" }), el("p", { class: "utt-reply" }));
}

function updateFlagged(li, f) {
  li.dataset.id = f.utteranceId;
  setText(li.children[0], f.text);
  setText(li.children[1], f.heard);
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
  setText(time, m.time);
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
    setText(msg, `Interrupted at ${clock(data.at_sample / facts.sample_rate)}.`);
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
  setText($("say-count"), `${n} / ${facts.text_limits.say}`);
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
