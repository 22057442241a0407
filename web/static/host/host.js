// The host desk: sign in with the host token, say lines, prompt characters, answer viewer chat,
// interrupt, and watch the show (GET /api/v1/show, once a second). This module signs in and
// out and acts on the host's clicks; what to show is worked out without the DOM (showview.js,
// from the answer and the page's facts), as are the calls (api.js) and the polling
// (poller.js), and page.js puts it in place. No framework.

import { pageFacts } from "../common/facts.js";
import { callApi, explain } from "./api.js";
import { $, setText } from "./dom.js";
import { clock } from "./format.js";
import { renderView, showLink } from "./page.js";
import { chartBoxes, drawCharts } from "./charts.js";
import { HISTORY_MS } from "./chartdata.js";
import { ShowPoller } from "./poller.js";
import { describeShow } from "./showview.js";

const TOKEN_KEY = "allnighter.hostToken"; // sessionStorage: remembered for this tab only

// the server's sample rate, lip-sync windows and text limits (server/facts.py)
const facts = pageFacts();
let token = null;
let lastShow = null;

const api = (method, path, body, withToken = token) => callApi(method, path, body, withToken);
const poller = new ShowPoller({
  fetchShow: () => api("GET", "/api/v1/show"),
  show: render,
  link: showLink,
  unauthorized: () => signOut("Wrong host token"),
});

// the last hour's charts: the history every ten seconds (a failed one waits for the next)
const hourPoller = new ShowPoller({
  fetchShow: () => api("GET", "/api/v1/history"),
  show: drawCharts,
  link: () => {},
  unauthorized: () => {},
  periodMs: HISTORY_MS,
});
$("charts").append(...chartBoxes());

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
    hourPoller.startNow();
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
  hourPoller.stop();
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

function render(show) {
  lastShow = show;
  renderView(describeShow(show, facts), answer);
}

// ---- viewer chat ----------------------------------------------------------------------------
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

async function switchAutopilot() {
  const box = $("autopilot");
  const { status, data } = await api("POST", "/api/v1/autopilot", { enabled: box.checked });
  if (status !== 200) {
    box.checked = !box.checked;
    setText($("autopilot-state"), explain(status, data));
  }
  refreshNow();
}

async function pinFallback() {
  const choice = $("fallback").value;
  const level = choice === "auto" ? null : Number(choice);
  const { status, data } = await api("POST", "/api/v1/fallback", { level });
  if (status !== 200) setText($("fallback-state"), explain(status, data));
  $("fallback").blur();
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
$("autopilot").addEventListener("change", switchAutopilot);
$("fallback").addEventListener("change", pinFallback);

const remembered = sessionStorage.getItem(TOKEN_KEY);
if (remembered) signIn(remembered, { quiet: true });
else $("token").focus();

// for tests and tools: the last snapshot the desk rendered
window.allnighterHost = { show: () => lastShow };
