// The desk's live refresh: GET /api/v1/show once a second, for as long as the host is signed
// in, whatever comes back. No DOM: the desk hands in how to fetch, show and say what is wrong.

import { explain } from "./api.js";

export const POLL_MS = 1000;

/** What the state pill says of an answer that is not the show's (status 0: none came). */
export function failedPoll(status, data) {
  return { state: "offline", text: status === 0 ? "offline" : `error ${status}`, why: explain(status, data) };
}

/** What the state pill says when an answer could not be shown. */
export function unshowable(err) {
  return { state: "offline", text: "bad answer", why: `The show's state could not be shown: ${err.message}` };
}

/**
 * `fetchShow()` gives {status, data}; `show(data)` shows a 200's state (and may throw);
 * `link({state, text, why})` says what is wrong otherwise; `unauthorized()` is called on a 401,
 * and polling ends there. One poll at a time, each a period after the last one's answer.
 */
export class ShowPoller {
  constructor({
    fetchShow, show, link, unauthorized, periodMs = POLL_MS, timers = globalThis, log = console,
  }) {
    Object.assign(this, { fetchShow, show, link, unauthorized, periodMs, timers, log });
    this.active = false; // between start() and stop()
    this.busy = false; // a poll waits for its answer
    this.timer = null;
  }

  /** Poll a period from now, and on until stop(). */
  start() {
    this.active = true;
    this.timers.clearTimeout(this.timer);
    this.timer = this.timers.setTimeout(() => this.poll(), this.periodMs);
  }

  /** Poll now, and on until stop(). */
  startNow() {
    this.active = true;
    this.timers.clearTimeout(this.timer);
    this.timer = null;
    return this.poll();
  }

  stop() {
    this.active = false;
    this.timers.clearTimeout(this.timer);
    this.timer = null;
  }

  async poll() {
    if (!this.active || this.busy) return;
    this.busy = true;
    const { status, data } = await this.fetchShow();
    this.busy = false;
    if (!this.active) return;
    if (status === 401) {
      this.unauthorized();
      return;
    }
    // whatever comes back, the panel polls on: one bad answer must not freeze it for the night
    try {
      if (status === 200) this.show(data);
      else this.link(failedPoll(status, data));
    } catch (err) {
      this.log.error("the show's state could not be shown", err);
      this.link(unshowable(err));
    }
    this.timer = this.timers.setTimeout(() => this.poll(), this.periodMs);
  }
}
