// The page's link to the show: socket.io for events, one WebRTC peer for the audio.
//
// Both are one session: when either breaks, both are torn down and re-created after an
// exponential backoff with full jitter (so a server restart at 2 a.m. does not bring every
// viewer back in the same second).

import { io } from "socket.io-client";

export const BACKOFF = { baseMs: 500, capMs: 15000 };

/** Full-jitter backoff: a uniform delay in [0, min(cap, base·2^attempt)). */
export function backoffDelay(attempt, { baseMs, capMs } = BACKOFF, random = Math.random) {
  return random() * Math.min(capMs, baseMs * 2 ** attempt);
}

export class Link {
  /**
   * handlers: onEvent(name, data), onTrack(stream, receiver, clock), onState(state, detail),
   * onReset() — the old session's timeline is void (the server's clock may have restarted).
   */
  constructor(handlers) {
    this.h = handlers;
    this.attempt = 0;
    this.socket = null;
    this.pc = null;
    this.state = "connecting";
    this.timer = null;
    this.generation = 0;
  }

  start() {
    // a viewer who leaves says so: the server stops sending to the peer at once, instead of
    // until ICE gives up on it half a minute later
    // (torn down as for a retry, but none is scheduled); restored from the back/forward cache,
    // it joins again
    window.addEventListener("pagehide", () => {
      clearTimeout(this.timer);
      this.#teardown();
    });
    window.addEventListener("pageshow", (ev) => ev.persisted && this.#connect());
    this.#connect();
  }

  get connected() {
    return this.state === "live";
  }

  /** socket.io call with an ack; rejects on timeout or when offline. */
  call(event, data, timeoutMs = 5000) {
    if (!this.socket?.connected) return Promise.reject(new Error("not connected"));
    return this.socket.timeout(timeoutMs).emitWithAck(event, data);
  }

  send(event, data) {
    if (this.socket?.connected) this.socket.emit(event, data);
  }

  async #connect() {
    const gen = ++this.generation;
    this.#setState(this.attempt ? "reconnecting" : "connecting");
    try {
      await this.#openSocket(gen);
      await this.#openPeer(gen);
      if (gen !== this.generation) return;
      this.attempt = 0;
      this.#setState("live");
    } catch (err) {
      if (gen === this.generation) this.#retry(String(err?.message ?? err));
    }
  }

  #openSocket(gen) {
    return new Promise((resolve, reject) => {
      const socket = io({ transports: ["websocket"], reconnection: false, timeout: 5000 });
      this.socket = socket;
      socket.onAny((name, data) => gen === this.generation && this.h.onEvent(name, data));
      socket.on("connect", resolve);
      socket.on("connect_error", (e) => reject(e));
      socket.on("disconnect", () => gen === this.generation && this.#retry("server went away"));
    });
  }

  async #openPeer(gen) {
    const pc = new RTCPeerConnection();
    this.pc = pc;
    pc.addTransceiver("audio", { direction: "recvonly" });
    pc.onconnectionstatechange = () => {
      if (gen !== this.generation) return;
      if (pc.connectionState === "failed" || pc.connectionState === "closed") this.#retry("audio link lost");
    };
    const track = new Promise((resolve) => {
      pc.ontrack = (ev) => resolve(ev);
    });
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc, 2000);
    const res = await fetch("/api/v1/offer", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ sdp: pc.localDescription.sdp, type: "offer" }),
    });
    const answer = await res.json();
    if (!res.ok) throw new Error(answer.error ?? `offer refused (${res.status})`);
    await pc.setRemoteDescription({ sdp: answer.sdp, type: answer.type });
    const ev = await track;
    if (gen !== this.generation) return;
    const stream = ev.streams[0] ?? new MediaStream([ev.track]);
    this.h.onTrack(stream, ev.receiver, answer.clock);
  }

  #retry(reason) {
    this.#teardown();
    const delay = backoffDelay(this.attempt++);
    this.#setState("reconnecting", `${reason}; retrying in ${(delay / 1000).toFixed(1)} s`);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.#connect(), delay);
  }

  #teardown() {
    this.generation++;
    this.h.onReset();
    if (this.socket) {
      this.socket.offAny();
      this.socket.removeAllListeners();
      this.socket.disconnect();
    }
    if (this.pc) this.pc.close();
    this.socket = null;
    this.pc = null;
  }

  #setState(state, detail = "") {
    this.state = state;
    this.h.onState(state, detail);
  }
}

/** Wait for ICE gathering to finish (the server takes the whole offer, no trickle). */
function gathered(pc, timeoutMs) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      if (pc.iceGatheringState === "complete") {
        pc.removeEventListener("icegatheringstatechange", done);
        resolve();
      }
    };
    pc.addEventListener("icegatheringstatechange", done);
    setTimeout(resolve, timeoutMs);
  });
}
