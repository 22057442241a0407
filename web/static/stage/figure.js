// Which renderer draws the avatar: WebGL, or Canvas 2D where the browser has no WebGL and at
// the night's fallback level 3 ("light pictures": the show asks viewers' machines for less).
// A canvas that once gave a WebGL context cannot give a 2D one, so a switch draws on a fresh
// canvas put in the old one's place; the old renderer is disposed (its GPU memory let go).

export const LIGHT_PICTURES = 3; // the fallback level from which the page draws in 2D

export class Figure {
  /**
   * `make.webgl(canvas)` and `make.canvas2d(canvas)` build an avatar (Avatar, FlatAvatar);
   * the WebGL one throws where the browser has none, and the figure is drawn in 2D for good.
   */
  constructor(canvas, make) {
    this.canvas = canvas;
    this.make = make;
    this.noWebGL = false;
    this.#draw("webgl");
  }

  /** The show's fallback level changed: 2D from LIGHT_PICTURES up, WebGL below it. True when
   * the avatar was replaced (the caller hands the new one to whatever draws it). */
  level(level) {
    const want = level >= LIGHT_PICTURES || this.noWebGL ? "canvas2d" : "webgl";
    if (want === this.renderer) return false;
    const fresh = this.canvas.cloneNode(false);
    this.canvas.replaceWith(fresh);
    this.avatar.dispose();
    this.canvas = fresh;
    this.#draw(want);
    return true;
  }

  #draw(kind) {
    if (kind === "webgl") {
      try {
        this.avatar = this.make.webgl(this.canvas);
        this.renderer = "webgl";
        return;
      } catch (err) {
        console.warn("WebGL unavailable, drawing the avatar in 2D:", err);
        this.noWebGL = true;
      }
    }
    this.avatar = this.make.canvas2d(this.canvas);
    this.renderer = "canvas2d";
  }
}
