// The cast drawn in Canvas 2D: where WebGL is unavailable (and the render fallback). Same
// interface as Avatar; each face side by side, in its look's skin, its mouth opening by the
// same per-viseme jaw amounts.

import { JAW_OPEN } from "./avatar.js";

const WIDE = { E: 1, I: 1, SS: 0.8, CH: 0.2, O: 0.1, U: 0, aa: 0.6 };
const SKIN = "#e8b894";

export class FlatAvatar {
  // cast: [{name, look}] (the page's facts), one face each, left to right
  constructor(canvas, cast = []) {
    this.canvas = canvas;
    this.g = canvas.getContext("2d");
    this.faces = (cast.length ? cast : [{}]).map((c) => ({ skin: c.look?.skin ?? SKIN, weights: {}, open: 0 }));
    this.speaking = null;
    this.blink = 0;
    this.nextBlink = 2;
    this.resize();
  }

  setVisemes(weights, index = 0) {
    if (this.faces[index]) this.faces[index].weights = weights;
  }

  setSpeaking(index) {
    this.speaking = Number.isInteger(index) && this.faces[index] ? index : null;
  }

  update(dt, now) {
    if (now > this.nextBlink) {
      this.blink = 1;
      this.nextBlink = now + 2 + Math.random() * 4;
    }
    this.blink = Math.max(0, this.blink - dt * 8);
    this.now = now;
  }

  render() {
    const { g, canvas } = this;
    const w = canvas.width;
    const h = canvas.height;
    g.clearRect(0, 0, w, h);
    const n = this.faces.length;
    this.faces.forEach((face, i) => this.#face(face, (w * (i + 0.5)) / n, h / 2, Math.min(w / n, h) * 0.3, i));
  }

  #face(face, cx, cy0, r, index) {
    const { g } = this;
    const cy = cy0 + Math.sin((this.now ?? 0) * 0.8 + index) * r * 0.01;
    let open = 0;
    let wide = 0;
    for (const [v, x] of Object.entries(face.weights)) {
      open += x * (JAW_OPEN[v] ?? 0);
      wide += x * (WIDE[v] ?? 0.4);
    }
    face.open = Math.min(1, open);
    g.globalAlpha = this.speaking === null || this.speaking === index ? 1 : 0.75; // the speaker lit
    g.fillStyle = face.skin;
    g.beginPath();
    g.ellipse(cx, cy, r * 0.8, r, 0, 0, Math.PI * 2);
    g.fill();
    g.fillStyle = "#1d1f2b";
    const eyeH = r * 0.08 * (1 - this.blink);
    for (const side of [-1, 1]) {
      g.beginPath();
      g.ellipse(cx + side * r * 0.3, cy - r * 0.15, r * 0.08, Math.max(1, eyeH), 0, 0, Math.PI * 2);
      g.fill();
    }
    g.fillStyle = "#5a1f24";
    g.beginPath();
    g.ellipse(cx, cy + r * 0.45, r * (0.18 + 0.1 * Math.min(1, wide)), Math.max(1.5, r * 0.2 * face.open), 0, 0, Math.PI * 2);
    g.fill();
    g.globalAlpha = 1;
  }

  get mouthOpen() {
    return Math.max(...this.faces.map((f) => f.open));
  }

  mouthOpenOf(index) {
    return this.faces[index]?.open ?? 0;
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, Math.round(this.canvas.clientWidth * dpr));
    this.canvas.height = Math.max(1, Math.round(this.canvas.clientHeight * dpr));
  }

  setResolutionScale() {} // 2D drawing is cheap at any size

  dispose() {}
}
