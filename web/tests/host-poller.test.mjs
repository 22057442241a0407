// The desk's live refresh: once a second while signed in, whatever comes back.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ShowPoller, failedPoll, unshowable } from "../static/host/poller.js";

/** Timers the test runs by hand: `fire()` runs the one pending (there is at most one). */
function manualTimers() {
  const t = { pending: new Map(), next: 1, delays: [] };
  t.setTimeout = (fn, ms) => {
    t.pending.set(t.next, fn);
    t.delays.push(ms);
    return t.next++;
  };
  t.clearTimeout = (id) => t.pending.delete(id);
  t.fire = async () => {
    assert.equal(t.pending.size, 1, "one poll is scheduled");
    const [[id, fn]] = t.pending;
    t.pending.delete(id);
    await fn();
  };
  return t;
}

/** A poller whose answers are `answers`, in turn; what it did is in `seen`. */
function poller(answers, { show } = {}) {
  const timers = manualTimers();
  const seen = { shown: [], links: [], unauthorized: 0, errors: [] };
  const p = new ShowPoller({
    fetchShow: async () => answers.shift(),
    show: show ?? ((data) => seen.shown.push(data)),
    link: (l) => seen.links.push(l),
    unauthorized: () => {
      seen.unauthorized++;
      p.stop();
    },
    timers,
    log: { error: (...a) => seen.errors.push(a) },
  });
  return { p, timers, seen };
}

test("it polls a second after each answer, and shows each state", async () => {
  const { p, timers, seen } = poller([{ status: 200, data: { n: 1 } }, { status: 200, data: { n: 2 } }]);
  p.start();
  assert.deepEqual(timers.delays, [1000]);
  await timers.fire();
  await timers.fire();
  assert.deepEqual(seen.shown, [{ n: 1 }, { n: 2 }]);
  assert.equal(timers.pending.size, 1, "and polls on");
});

test("bad answers are shown on the pill, and polling goes on", async () => {
  const { p, timers, seen } = poller(
    [
      { status: 0, data: { error: "the server cannot be reached" } },
      { status: 502, data: { error: "502 Bad Gateway: the answer was not JSON" } },
      { status: 200, data: { fine: true } },
    ],
  );
  p.start();
  await timers.fire();
  await timers.fire();
  await timers.fire();
  assert.deepEqual(seen.links, [
    { state: "offline", text: "offline", why: "The server cannot be reached" },
    { state: "offline", text: "error 502", why: "502 Bad Gateway: the answer was not JSON" },
  ]);
  assert.deepEqual(seen.shown, [{ fine: true }]);
  assert.equal(timers.pending.size, 1);
});

test("a state that cannot be shown is said so, and polling goes on", async () => {
  const answers = [{ status: 200, data: { recent: 5 } }, { status: 200, data: { recent: [] } }];
  const shown = [];
  const { p, timers, seen } = poller(answers, {
    show: (data) => {
      if (!Array.isArray(data.recent)) throw new TypeError("show.recent.map is not a function");
      shown.push(data);
    },
  });
  p.start();
  await timers.fire();
  assert.deepEqual(seen.links, [unshowable(new TypeError("show.recent.map is not a function"))]);
  assert.equal(seen.links[0].text, "bad answer");
  assert.equal(seen.errors.length, 1, "and logged");
  await timers.fire();
  assert.deepEqual(shown, [{ recent: [] }]);
});

test("a wrong token ends polling", async () => {
  const { p, timers, seen } = poller([{ status: 401, data: { error: "unauthorized" } }]);
  p.start();
  await timers.fire();
  assert.equal(seen.unauthorized, 1);
  assert.equal(timers.pending.size, 0);
});

test("stopped while a poll waits, its answer is dropped and nothing more is polled", async () => {
  let answer;
  const timers = manualTimers();
  const shown = [];
  const p = new ShowPoller({
    fetchShow: () => new Promise((resolve) => (answer = resolve)),
    show: (d) => shown.push(d),
    link: () => {},
    unauthorized: () => {},
    timers,
  });
  p.start();
  const polled = timers.fire();
  p.poll(); // a second poll while one waits does nothing
  p.stop();
  answer({ status: 200, data: {} });
  await polled;
  assert.deepEqual(shown, []);
  assert.equal(timers.pending.size, 0);
});

test("starting again replaces the poll scheduled, never adds one", () => {
  const { p, timers } = poller([]);
  p.start();
  p.start();
  assert.equal(timers.pending.size, 1);
  p.stop();
  assert.equal(timers.pending.size, 0);
});

test("what the pill says of an answer that is not the show's", () => {
  assert.deepEqual(failedPoll(503, { error: "loading" }), {
    state: "offline", text: "error 503", why: "The show is still loading its models.",
  });
  assert.equal(unshowable(new Error("boom")).why, "The show's state could not be shown: boom");
});

test("started now, it polls at once and then a period after the answer, one chain only", async () => {
  const { p, timers, seen } = poller([{ status: 200, data: 1 }, { status: 200, data: 2 }]);
  p.start(); // scheduled a period from now...
  await p.startNow(); // ...replaced by a poll now
  assert.deepEqual(seen.shown, [1]);
  assert.equal(timers.pending.size, 1);
  await timers.fire();
  assert.deepEqual(seen.shown, [1, 2]);
  assert.equal(timers.pending.size, 1);
});
