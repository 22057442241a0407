// The avatar drawn in Canvas 2D: where WebGL is unavailable (and the render fallback).
// Same interface as Avatar; the mouth opens by the same per-viseme jaw amounts.

import { JAW_OPEN } from "./avatar.js";

const WIDE = { E: 1, I: 1, SS: 0.8, CH: 0.2, O: 0.1, U: 0, aa: 0.6 };

export class FlatAvatar {
  constructor(canvas) {
    this.canvas = canvas;
    this.g = canvas.getContext("2d");
    this.weights = {};
    this.open = 0;
    this.blink = 0;
    this.nextBlink = 2;
    this.resize();
  }

  setVisemes(weights) {
    this.weights = weights;
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
    const r = Math.min(w, h) * 0.3;
    const cx = w / 2;
    const cy = h / 2 + Math.sin((this.now ?? 0) * 0.8) * r * 0.01;
    let open = 0;
    let wide = 0;
    for (const [v, x] of Object.entries(this.weights)) {
      open += x * (JAW_OPEN[v] ?? 0);
      wide += x * (WIDE[v] ?? 0.4);
    }
    this.open = Math.min(1, open);
    g.clearRect(0, 0, w, h);
    g.fillStyle = "#e8b894";
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
    g.ellipse(cx, cy + r * 0.45, r * (0.18 + 0.1 * Math.min(1, wide)), Math.max(1.5, r * 0.2 * this.open), 0, 0, Math.PI * 2);
    g.fill();
  }

  get mouthOpen() {
    return this.open;
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, Math.round(this.canvas.clientWidth * dpr));
    this.canvas.height = Math.max(1, Math.round(this.canvas.clientHeight * dpr));
  }

  setResolutionScale() {} // 2D drawing is cheap at any size

  dispose() {}
}
