// The host desk's page: what showview.js worked out of the show's state, put in place. Lists
// are updated in place, so a button under the pointer is not rebuilt each second; every piece
// of text from the server or a viewer goes in with textContent, never as HTML.

import { $, el, fillStats, setText, syncList } from "./dom.js";

// the show's state pill; `why`: the whole message, on hover (the pill has room for a word or two)
export function showLink({ state, text, why }) {
  const pill = $("show-state");
  pill.dataset.state = state;
  setText(pill, text);
  pill.title = why;
}

/** Put the desk's view (showview.js) in place; `answer(id, li)` answers a viewer's message. */
export function renderView(view, answer) {
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
  const makeChat = (m) => chatItem(m, answer);
  syncList($("chat-list"), view.chat, makeChat, updateChat, $("chat-empty"));
  syncList($("alerts"), view.alerts, makeAlert, updateAlert, $("alerts-empty"));
  renderAutopilot(view.autopilot);
  const pick = $("fallback");
  if (document.activeElement !== pick) pick.value = view.fallback.choice;
  setText($("fallback-state"), view.fallback.state);
}

// ---- autopilot ------------------------------------------------------------------------------
function renderAutopilot(a) {
  const box = $("autopilot");
  if (document.activeElement !== box) box.checked = a.on; // not under the host's click
  setText($("autopilot-state"), a.state);
  syncList($("refused"), a.refused, makeFlagged, updateRefused, $("refused-empty"));
}

function updateRefused(li, r) {
  setText(li.children[0], r.text);
  setText(li.children[1], r.why);
}

// ---- alerts ---------------------------------------------------------------------------------
function makeAlert() {
  const head = el("div", { class: "utt-head" }, el("span", { class: "who" }), el("span", { class: "ttfa" }));
  return el("li", { class: "utt alert" }, head, el("p", { class: "utt-text" }));
}

function updateAlert(li, a) {
  const [what, time] = li.firstChild.children;
  setText(what, a.what);
  setText(time, a.time);
  setText(li.children[1], a.figure);
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
function chatItem(m, answer) {
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
