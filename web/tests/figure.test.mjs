import { test } from "node:test";
import assert from "node:assert/strict";

import { Figure, LIGHT_PICTURES } from "../static/stage/figure.js";

// a canvas as far as Figure uses one: it can be cloned and replaced in the page
class FakeCanvas {
  constructor(page) {
    this.page = page;
    page.canvas = this;
  }
  cloneNode() {
    return new FakeCanvas({});
  }
  replaceWith(other) {
    this.page.canvas = other;
    other.page = this.page;
  }
}

function makers(log, { webgl = true } = {}) {
  const avatar = (kind) => (canvas) => {
    if (kind === "webgl" && !webgl) throw new Error("no WebGL here");
    const a = { kind, canvas, disposed: false, dispose() { a.disposed = true; } };
    log.push(a);
    return a;
  };
  return { webgl: avatar("webgl"), canvas2d: avatar("canvas2d") };
}

test("light pictures draw in 2D on a fresh canvas, and back at level 0 in WebGL again", () => {
  const page = {};
  const log = [];
  const figure = new Figure(new FakeCanvas(page), makers(log));
  assert.equal(figure.renderer, "webgl");
  assert.equal(figure.level(LIGHT_PICTURES - 1), false); // levels 1 and 2 keep the picture
  assert.equal(figure.level(LIGHT_PICTURES), true);
  assert.equal(figure.renderer, "canvas2d");
  assert.equal(log[0].disposed, true, "the WebGL avatar let go of its context");
  assert.notEqual(figure.avatar.canvas, log[0].canvas, "2D is drawn on a new canvas");
  assert.equal(page.canvas, figure.avatar.canvas, "which took the old one's place");
  assert.equal(figure.level(LIGHT_PICTURES), false);
  assert.equal(figure.level(0), true);
  assert.equal(figure.renderer, "webgl");
  assert.equal(page.canvas, figure.avatar.canvas);
  assert.deepEqual(log.map((a) => a.kind), ["webgl", "canvas2d", "webgl"]);
});

test("without WebGL the figure is drawn in 2D at every level", () => {
  const log = [];
  const figure = new Figure(new FakeCanvas({}), makers(log, { webgl: false }));
  assert.equal(figure.renderer, "canvas2d");
  assert.equal(figure.level(LIGHT_PICTURES), false);
  assert.equal(figure.level(0), false);
  assert.equal(log.length, 1);
});
