// Allnighter's stage: the cast as stylised figures built in code with three.js (no model
// files), side by side in one scene, each in its own look (the page's facts: server/looks.py).
// Eyes blink and glance around, heads sway and breathe, and each mouth (face.js) carries one
// morph target per Oculus viseme. The caller blends each character's viseme weights over time;
// setVisemes applies them as given on the next render. The one speaking faces the viewer; the
// others turn toward it.
import * as THREE from "three";
import { JAW_OPEN, buildMouth, shapeless, surfaceSampler, eyeTexture, blushTexture } from "./face.js";

export { JAW_OPEN };

// the look of a lone figure (a page without a cast): the first of server/looks.py
const LOOK = { skin: "#f1bd9c", hair: "#3a2622", shirt: "#2f6f8c", iris: ["#1f6f86", "#5fc1cf"] };
const SPACING = 3.4; // between figures' centres: their shoulders (3.3 wide) just clear
const TURN = 0.35; // how far a listener turns toward the one speaking (radians)
const MOUTH_Y = -0.5, EYE = { x: 0.32, y: -0.02, r: 0.16 };

// Unit-sphere direction -> head surface: tapered jaw, longer lower face, fuller skull.
function headPoint(x, y, z) {
  let X = x * 0.9, Y = y, Z = z * 0.95;
  if (y < 0) { const t = -y; X *= 1 - 0.3 * t * t; Z *= 1 - 0.12 * t * t; Y *= 1.08; }
  if (z < 0) Z *= 1 + 0.08 * Math.min(1, Math.max(0, y + 0.4));
  const cheek = Math.exp(-((y + 0.3) ** 2) / 0.05) * Math.max(0, z); // soft cheeks
  X *= 1 + 0.04 * cheek;
  return [X, Y, Z];
}

function deformedSphere(ws, hs, fn) {
  const g = new THREE.SphereGeometry(1, ws, hs), p = g.getAttribute("position");
  for (let i = 0; i < p.count; i++) p.setXYZ(i, ...fn(p.getX(i), p.getY(i), p.getZ(i)));
  g.computeVertexNormals();
  return g;
}

// Hair: a shell over the skull whose vertices below a hairline (with a swept, tufted fringe)
// sink inside the head, so the edge tapers into the skin.
function hairGeometry(seg) {
  const cover = [];
  const g = deformedSphere(seg(56), seg(36), (x, y, z) => {
    const el = Math.asin(Math.max(-1, Math.min(1, y))), az = Math.atan2(x, z), front = Math.cos(az);
    const hl = front > 0 ? 0.1 + 0.5 * front ** 1.5 : 0.1 + 0.62 * front;
    const s = THREE.MathUtils.smoothstep(el, hl - 0.02, hl + 0.07);
    const k = 0.95 + s * (0.1 + 0.05 * Math.max(0, y) + 0.03 * Math.max(0, -z));
    const [X, Y, Z] = headPoint(x, y, z);
    cover.push(s);
    return [X * k, Y * k + 0.02 * s, Z * k];
  });
  const ix = g.index.array, keep = []; // drop triangles wholly under the skin
  for (let t = 0; t < ix.length; t += 3) {
    if (cover[ix[t]] + cover[ix[t + 1]] + cover[ix[t + 2]] > 0) keep.push(ix[t], ix[t + 1], ix[t + 2]);
  }
  g.setIndex(keep);
  return g;
}

// Fringe locks, swept to one side: [root width, [azimuth, elevation] control points root..tip].
const LOCKS = [
  [0.15, [[0.55, 1.0], [0.3, 0.72], [0.02, 0.46], [-0.14, 0.3]]],
  [0.16, [[0.38, 1.02], [0.14, 0.74], [-0.14, 0.47], [-0.3, 0.33]]],
  [0.15, [[0.0, 1.02], [-0.22, 0.74], [-0.5, 0.46], [-0.64, 0.29]]],
  [0.17, [[0.2, 1.05], [-0.02, 0.76], [-0.3, 0.46], [-0.47, 0.3]]],
  [0.16, [[-0.15, 1.0], [-0.4, 0.72], [-0.66, 0.44], [-0.8, 0.24]]],
  [0.13, [[-0.55, 0.95], [-0.82, 0.6], [-1.02, 0.32], [-1.1, 0.1]]],
  [0.12, [[0.8, 0.9], [0.66, 0.64], [0.55, 0.44], [0.46, 0.34]]],
  [0.13, [[1.05, 0.8], [1.12, 0.5], [1.2, 0.22], [1.24, 0.04]]],
];
const onHead = (az, el, k) => {
  const [x, y, z] = headPoint(Math.cos(el) * Math.sin(az), Math.sin(el), Math.cos(el) * Math.cos(az));
  return new THREE.Vector3(x * k, y * k, z * k);
};

// A lock of hair: a tube along the skull, flattened against it and tapering to a point.
function lockGeometry(pts, width, seg) {
  const curve = new THREE.CatmullRomCurve3(pts.map(([az, el], i) => onHead(az, el, 1.05 - 0.017 * i)));
  width *= 1.15;
  const T = seg(16), R = seg(8), g = new THREE.TubeGeometry(curve, T, 1, R, false), p = g.getAttribute("position");
  const v = new THREE.Vector3(), n = new THREE.Vector3();
  for (let i = 0; i <= T; i++) {
    const u = i / T, c = curve.getPointAt(u), taper = (1 - u ** 1.6) * Math.min(1, 0.4 + 2 * u);
    n.copy(c).normalize();
    for (let j = 0; j <= R; j++) {
      v.fromBufferAttribute(p, i * (R + 1) + j).sub(c);
      const along = v.dot(n);
      v.addScaledVector(n, -along).multiplyScalar(width * taper).addScaledVector(n, along * 0.05 * Math.sqrt(taper));
      p.setXYZ(i * (R + 1) + j, c.x + v.x, c.y + v.y, c.z + v.z);
    }
  }
  g.computeVertexNormals();
  return g;
}

// A capsule bent along the face surface (brows): thicker at the inner end, arched.
function browGeometry(side, surf) {
  const len = 0.22, g = new THREE.CapsuleGeometry(0.026, len, 4, 10);
  g.rotateZ(Math.PI / 2);
  const p = g.getAttribute("position");
  for (let i = 0; i < p.count; i++) {
    const lx = p.getX(i), u = lx / (len / 2 + 0.026); // -1 inner .. 1 outer
    const taper = 1 - 0.4 * (u + 1) / 2;
    const X = side * (EYE.x + 0.01 + lx), Y = 0.235 + p.getY(i) * taper * 0.75 - 0.03 * u * u + 0.012 * u;
    p.setXYZ(i, X, Y, surf(X, Y) + 0.012 + p.getZ(i) * taper * 0.6);
  }
  if (side < 0) g.index.array.reverse(); // mirrored: keep triangles facing out
  g.computeVertexNormals();
  return g;
}

// Whether WebGL runs in software (SwiftShader in headless Chromium, llvmpipe). There 4x MSAA
// halves the frame rate, so antialiasing is on by default only on a real GPU.
function softwareGL() {
  try {
    const gl = document.createElement("canvas").getContext("webgl2") || document.createElement("canvas").getContext("webgl");
    if (!gl) return false;
    const info = gl.getExtension("WEBGL_debug_renderer_info");
    const name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
    gl.getExtension("WEBGL_lose_context")?.loseContext();
    return /swiftshader|llvmpipe|softpipe|software/i.test(name);
  } catch {
    return false;
  }
}

// Concatenates indexed geometries into one (position, normal, uv, a colour per part).
function merge(parts) {
  let nv = 0, ni = 0;
  for (const [g] of parts) { nv += g.getAttribute("position").count; ni += g.index.count; }
  const pos = new Float32Array(nv * 3), nrm = new Float32Array(nv * 3), col = new Float32Array(nv * 3);
  const uv = new Float32Array(nv * 2), idx = new Uint32Array(ni), c = new THREE.Color();
  let v = 0, i = 0;
  for (const [g, color = "#ffffff"] of parts) {
    const n = g.getAttribute("position").count;
    pos.set(g.getAttribute("position").array, v * 3);
    nrm.set(g.getAttribute("normal").array, v * 3);
    if (g.getAttribute("uv")) uv.set(g.getAttribute("uv").array, v * 2);
    c.set(color);
    for (let k = 0; k < n; k++) c.toArray(col, (v + k) * 3);
    const ix = g.index.array;
    for (let k = 0; k < ix.length; k++) idx[i + k] = ix[k] + v;
    v += n; i += ix.length;
    g.dispose();
  }
  const out = new THREE.BufferGeometry();
  out.setAttribute("position", new THREE.BufferAttribute(pos, 3));
  out.setAttribute("normal", new THREE.BufferAttribute(nrm, 3));
  out.setAttribute("uv", new THREE.BufferAttribute(uv, 2));
  out.setAttribute("color", new THREE.BufferAttribute(col, 3));
  out.setIndex(new THREE.BufferAttribute(idx, 1));
  return out;
}

export class Avatar {
  // options.visemes: the server's viseme set (the page's facts), "sil" (the rest) first;
  // options.cast: [{name, look}] (the facts' cast), one figure each, left to right
  constructor(canvas, options = {}) {
    this.canvas = canvas;
    this.visemes = options.visemes;
    const unknown = shapeless(this.visemes);
    if (unknown.length) throw new Error(`the mouth has no shape for visemes ${unknown.join(", ")}`);
    const looks = (options.cast?.length ? options.cast : [{ look: LOOK }]).map((c) => ({ ...LOOK, ...c.look }));
    const software = softwareGL();
    // Software GL pays per triangle (SwiftShader: about 1.4 µs each, per frame, on the CPU the
    // show also needs): it draws the figure with half the segments (a quarter of the
    // triangles), where the low resolution it renders at (RenderBudget) hides them anyway;
    // several figures share that budget.
    this.detail = options.detail ?? (software ? 0.5 / Math.sqrt(looks.length) : 1);
    try {
      this.renderer = new THREE.WebGLRenderer({
        canvas, antialias: options.antialias ?? !software, alpha: true, preserveDrawingBuffer: true, stencil: true,
      });
    } catch (e) {
      throw new Error("WebGL is unavailable: " + (e && e.message ? e.message : e));
    }
    const r = this.renderer;
    r.setClearColor(0x000000, 0);
    r.toneMapping = THREE.ACESFilmicToneMapping;
    r.toneMappingExposure = options.exposure ?? 1.05;
    this.scene = new THREE.Scene();
    this.camera = new THREE.PerspectiveCamera(28, 16 / 9, 0.5, 30);
    this._time = 0;
    this._matcaps = new Map();
    this._targets = [];
    this._dummy = new THREE.Object3D();
    this._dummy.rotation.order = "YXZ";
    this.speaking = null; // the index of the figure speaking, if any
    this.figures = looks.map((look, i) => this._build(look, (i - (looks.length - 1) / 2) * SPACING, i));
    if (options.cpuMorph ?? software) for (const f of this.figures) this._morphOnCpu(f);
    if (this._bake) { this._bake.ball.geometry.dispose(); this._bake = null; }
    for (const f of this.figures) this._setBlink(f, 0); // poses the eyes, so a render before any update() looks right
    this.resize();
  }

  _build(look, x, index) {
    const seg = (n) => Math.max(3, Math.round(n * this.detail)); // segments at this detail
    const mat = (l, props) => this._matcap(l, props);
    const skinLook = { color: look.skin, roughness: 0.58, emissive: "#3d150c", emissiveIntensity: 0.25 }; // warm shade
    const skin = mat(skinLook), paint = mat(skinLook, { vertexColors: true });
    const hair = mat({ color: look.hair, roughness: 0.62 }, { vertexColors: true });
    const shirt = mat({ color: look.shirt, roughness: 0.85 }, { vertexColors: true });
    const f = {
      weights: new Float32Array(this.visemes.length).fill(0), mouthOpen: 0, turn: 0,
      phase: index * 1.7, // figures sway out of step
      gaze: { x: 0, y: 0, tx: 0, ty: 0, next: 0 },
      blink: { value: 0, start: -1, next: 1.5 + Math.random() * 2, double: false },
    };
    f.weights[0] = 1;
    // Few draw calls matter more than polygons on software GL: static parts sharing a material
    // are merged, the two eyes (and their lids) are instanced.

    // Body (breathing) and the head rig pivoting at the neck
    f.body = new THREE.Group(); f.body.position.x = x; this.scene.add(f.body);
    const torso = new THREE.LatheGeometry([[0, -1.14], [0.36, -1.16], [0.62, -1.26], [1.12, -1.44], [1.45, -1.7],
      [1.6, -2.14], [1.65, -3.3]].map(([a, b]) => new THREE.Vector2(a, b)), seg(40)).scale(1, 1, 0.6);
    const collar = new THREE.TorusGeometry(0.39, 0.065, seg(10), seg(40)).rotateX(Math.PI / 2).scale(1, 0.8, 1).translate(0, -1.18, -0.08);
    f.body.add(new THREE.Mesh(merge([[torso], [collar]]), shirt));
    const neck = new THREE.Mesh(new THREE.CylinderGeometry(0.31, 0.35, 0.7, seg(28), 1, true), skin);
    neck.position.set(0, -0.88, -0.1); f.body.add(neck);

    f.rig = new THREE.Group(); f.rig.position.y = -0.85; f.body.add(f.rig);
    const head = new THREE.Group(); head.position.y = 0.85; f.rig.add(head);
    const headGeo = deformedSphere(seg(48), seg(34), headPoint), surf = surfaceSampler(headGeo);
    const ears = [-1, 1].map((side) => [new THREE.SphereGeometry(1, seg(12), seg(10)).scale(0.08, 0.17, 0.12).translate(side * 0.84, -0.12, -0.05)]);
    const nose = new THREE.SphereGeometry(1, seg(16), seg(12)).scale(0.085, 0.07, 0.075).translate(0, -0.25, surf(0, -0.25) - 0.012);
    // Draw order front to back (hair, face, eyes, neck, body) so hidden pixels fail the depth test
    const face = new THREE.Mesh(merge([[headGeo], [nose], ...ears]), paint);
    const locks = new THREE.Mesh(merge([[hairGeometry(seg)], ...LOCKS.map(([w, pts]) => [lockGeometry(pts, w, seg)]),
      [browGeometry(-1, surf)], [browGeometry(1, surf)]]), hair);
    face.renderOrder = -2; locks.renderOrder = -3;
    head.add(face, locks);
    const blush = merge([-1, 1].map((side) => {
      const g = new THREE.PlaneGeometry(0.3, 0.2, 6, 4), p = g.getAttribute("position");
      for (let i = 0; i < p.count; i++) {
        const bx = p.getX(i) + side * 0.5, by = p.getY(i) - 0.33;
        p.setXYZ(i, bx, by, surf(bx, by) + 0.004);
      }
      return [g];
    }));
    const cheeks = new THREE.Mesh(blush, new THREE.MeshBasicMaterial({ map: blushTexture(), transparent: true, depthWrite: false }));
    cheeks.renderOrder = 1; head.add(cheeks);

    // Eyes: textured eyeballs (iris at the front pole), fixed catchlights, lids with a lash line
    f.sockets = [-1, 1].map((side) => ({
      side, c: new THREE.Vector3(side * EYE.x, EYE.y, surf(side * EYE.x, EYE.y) - EYE.r * 0.58),
    }));
    const inst = (geo, m) => {
      const im = new THREE.InstancedMesh(geo, m, 2); im.frustumCulled = false; im.renderOrder = -1; head.add(im); return im;
    };
    f.eyeMesh = inst(new THREE.SphereGeometry(EYE.r, seg(24), seg(16)).rotateX(Math.PI / 2), mat({ roughness: 0.18 }, { map: eyeTexture(look.iris) }));
    const lid = (upper) => new THREE.SphereGeometry(EYE.r * 1.045, seg(24), seg(6), 0, Math.PI * 2, upper ? 0 : Math.PI / 2, Math.PI / 2);
    f.upLids = inst(merge([[lid(true), "#eeeeee"],
      [new THREE.TorusGeometry(EYE.r * 1.05, 0.014, 6, 24, Math.PI).rotateX(Math.PI / 2), "#1d1412"]]), paint);
    f.loLids = inst(merge([[lid(false), "#eeeeee"]]), paint);
    const sparks = [];
    for (const { side, c } of f.sockets) {
      for (const [dx, dy, rr] of [[-0.045, 0.05, 0.02], [0.035, -0.035, 0.009]]) {
        sparks.push([new THREE.SphereGeometry(rr, 8, 6).scale(1, 1, 0.25) // flat, so a closing lid covers it
          .lookAt(new THREE.Vector3(dx, dy, EYE.r)).translate(dx, dy, Math.sqrt(EYE.r ** 2 - dx * dx - dy * dy) + 0.001)
          .rotateY(side * 0.12).translate(c.x, c.y, c.z)]);
      }
    }
    head.add(new THREE.Mesh(merge(sparks), new THREE.MeshBasicMaterial({ color: "#ffffff" })));

    const mouth = buildMouth({ y0: MOUTH_Y, surf, skinColor: look.skin, material: mat, visemes: this.visemes });
    head.add(mouth.group);
    f.mouthMeshes = mouth.meshes;
    return f;
  }

  // Poses a figure's eyes (gaze ex, ey) and their lids (rotation about each eye's x axis).
  _placeEyes(f, ex, ey, up, lo) {
    const d = this._dummy;
    f.sockets.forEach(({ side, c }, i) => {
      d.position.copy(c);
      for (const [m, rx, ry] of [[f.eyeMesh, ex, ey], [f.upLids, up, 0], [f.loLids, lo, 0]]) {
        d.rotation.x = rx; d.rotation.y = side * 0.12 + ry; d.updateMatrix();
        m.setMatrixAt(i, d.matrix); m.instanceMatrix.needsUpdate = true;
      }
    });
  }

  // Lighting is baked, not computed per pixel: each look (colour, roughness) is rendered once on a
  // sphere under the key/fill/rim lights into a small HDR "matcap"; meshes then shade with one
  // texture lookup by view-space normal. The camera never moves, so this matches real lights
  // and costs about as much as unlit drawing, which software GL (SwiftShader) needs.
  _matcap(look, props = {}) {
    const key = JSON.stringify(look);
    let tex = this._matcaps.get(key);
    if (!tex) {
      if (!this._bake) {
        const scene = new THREE.Scene(), cam = new THREE.OrthographicCamera(-1.01, 1.01, 1.01, -1.01, 0.1, 10);
        cam.position.z = 5;
        scene.add(new THREE.HemisphereLight("#c9d8ff", "#3a2a24", 0.7));
        for (const [c, i, x, y, z] of [["#fff0e0", 2.4, -2.2, 2.8, 4], ["#b9d2ff", 0.6, 3, 0.2, 3],
          ["#67d4ff", 2.6, 3.2, 1.8, -3], ["#ff7bd5", 1.8, -3.4, 0.8, -2.6]]) {
          const l = new THREE.DirectionalLight(c, i); l.position.set(x, y, z); scene.add(l);
        }
        const ball = new THREE.Mesh(new THREE.SphereGeometry(1, 64, 48));
        scene.add(ball);
        this._bake = { scene, cam, ball };
      }
      const { scene, cam, ball } = this._bake;
      const rt = new THREE.WebGLRenderTarget(256, 256, { type: THREE.HalfFloatType, depthBuffer: false });
      ball.material = new THREE.MeshStandardMaterial({ color: "#ffffff", metalness: 0, ...look });
      const prev = this.renderer.getRenderTarget();
      this.renderer.setRenderTarget(rt);
      this.renderer.clear();
      this.renderer.render(scene, cam);
      this.renderer.setRenderTarget(prev);
      ball.material.dispose();
      this._targets.push(rt);
      tex = rt.texture;
      this._matcaps.set(key, tex);
    }
    return new THREE.MeshMatcapMaterial({ matcap: tex, ...props });
  }

  /** The weights {viseme: 0..1} of figure `index` (the first when not given). */
  setVisemes(weights, index = 0) {
    const f = this.figures[index];
    if (!f) return;
    const w = weights || {};
    for (let i = 0; i < this.visemes.length; i++) {
      const v = Number(w[this.visemes[i]]);
      f.weights[i] = Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : 0;
    }
  }

  /** Figure `index` is speaking (null: no one): it faces the viewer, the others turn to it. */
  setSpeaking(index) {
    this.speaking = Number.isInteger(index) && this.figures[index] ? index : null;
  }

  update(dtSeconds, nowSeconds) {
    const dt = Math.min(0.25, Math.max(0, Number(dtSeconds) || 0));
    const t = this._time = Number.isFinite(nowSeconds) ? nowSeconds : this._time + dt;
    const speaker = this.speaking === null ? null : this.figures[this.speaking];
    for (const f of this.figures) {
      const listening = speaker && speaker !== f ? Math.sign(speaker.body.position.x - f.body.position.x) * TURN : 0;
      f.turn += (listening - f.turn) * (1 - Math.exp(-dt * 4)); // a glance over a quarter second
      this._idle(f, t + f.phase, dt);
    }
  }

  _idle(f, t, dt) {
    // Idle: slow layered sway and breathing
    f.rig.rotation.set(0.035 * Math.sin(0.43 * t + 0.5) + 0.015 * Math.sin(1.1 * t),
      0.09 * Math.sin(0.31 * t) + 0.035 * Math.sin(0.83 * t + 1) + f.turn,
      0.025 * Math.sin(0.27 * t + 2));
    const br = Math.sin((2 * Math.PI * t) / 4.2);
    f.body.position.y = 0.012 * br;
    f.body.scale.set(1 + 0.006 * br, 1, 1);

    // Saccades: jump to a new nearby gaze target now and then; eyes hold on the viewer
    const g = f.gaze;
    if (t >= g.next || t < g.next - 10) {
      const away = Math.random() < 0.3;
      g.tx = (Math.random() * 2 - 1) * (away ? 0.22 : 0.07);
      g.ty = (Math.random() * 2 - 1) * (away ? 0.12 : 0.04);
      g.next = t + 0.5 + Math.random() * (away ? 1 : 2.5);
    }
    const k = 1 - Math.exp(-dt * 30);
    g.x += (g.tx - g.x) * k; g.y += (g.ty - g.y) * k;

    // Blinks every 2-6 s (sometimes a double blink): 70 ms close, 110 ms open
    const b = f.blink;
    if (t < b.start - 1) { b.start = -1; b.next = t + 1; }
    if (b.start < 0 && t >= b.next) { b.start = t; b.double = Math.random() < 0.15; }
    let v = 0;
    if (b.start >= 0) {
      const a = t - b.start;
      v = a < 0 ? 0 : a < 0.07 ? a / 0.07 : Math.max(0, 1 - (a - 0.07) / 0.11);
      if (a > 0.18) {
        if (b.double) { b.double = false; b.start = t + 0.08; } else { b.start = -1; b.next = t + 2 + Math.random() * 4; }
        v = 0;
      }
    }
    this._setBlink(f, v);
  }

  _setBlink(f, v) {
    const g = f.gaze, r = f.rig.rotation, lerp = THREE.MathUtils.lerp;
    f.blink.value = v;
    this._placeEyes(f, -g.y - 0.6 * r.x, g.x - 0.6 * (r.y - f.turn), lerp(-0.74 + g.y * 0.8, 0.14, v), lerp(0.82, 0.2, v));
  }

  render() {
    for (const f of this.figures) {
      let open = 0;
      for (let i = 0; i < this.visemes.length; i++) open += f.weights[i] * JAW_OPEN[this.visemes[i]];
      f.mouthOpen = Math.min(1, Math.max(0, open));
      if (f.cpuMorphs) this._blendOnCpu(f);
      else {
        for (const m of f.mouthMeshes) {
          const inf = m.morphTargetInfluences;
          for (let i = 0; i < this.visemes.length; i++) inf[i] = f.weights[i];
        }
      }
    }
    this.renderer.render(this.scene, this.camera);
  }

  // Software GL runs the vertex shader on the CPU, and three.js's morphing fetches all 15
  // targets for every vertex, every frame: the mouth's three small meshes took about a third of
  // a core there, as much as the rest of the figure. The mouth is blended here instead, from
  // the targets in use (two or three), and drawn as plain geometry. The same sum three.js
  // forms for absolute targets: base·(1 − Σw) + Σ w·target.
  _morphOnCpu(f) {
    f.cpuMorphs = [];
    for (const m of f.mouthMeshes) {
      const g = m.geometry;
      for (const name of Object.keys(g.morphAttributes)) {
        const attr = g.getAttribute(name);
        f.cpuMorphs.push({ attr, base: attr.array.slice(), targets: g.morphAttributes[name].map((a) => a.array) });
      }
      g.morphAttributes = {};
      m.morphTargetInfluences = undefined;
      m.morphTargetDictionary = undefined;
    }
    f.blended = new Float32Array(this.visemes.length).fill(-1);
  }

  _blendOnCpu(f) {
    const w = f.weights;
    if (w.every((x, i) => x === f.blended[i])) return; // the mouth holds still: nothing to upload
    f.blended.set(w);
    let sum = 0;
    for (let i = 0; i < w.length; i++) sum += w[i];
    for (const { attr, base, targets } of f.cpuMorphs) {
      const out = attr.array;
      for (let j = 0; j < out.length; j++) out[j] = base[j] * (1 - sum);
      for (let i = 0; i < w.length; i++) {
        if (w[i] === 0) continue;
        const t = targets[i], k = w[i];
        for (let j = 0; j < out.length; j++) out[j] += t[j] * k;
      }
      attr.needsUpdate = true;
    }
  }

  /** How open the widest mouth on the stage is (0..1). */
  get mouthOpen() { return Math.max(...this.figures.map((f) => f.mouthOpen)); }

  /** How open figure `index`'s mouth is (0..1). */
  mouthOpenOf(index) { return this.figures[index]?.mouthOpen ?? 0; }

  /** Render at this fraction of the display's resolution (the page lowers it when frames run late). */
  setResolutionScale(scale) {
    this.scale = Math.max(0.25, Math.min(1, scale));
    this.resize();
  }

  resize() {
    const c = this.canvas, w = Math.max(1, c.clientWidth || c.width), h = Math.max(1, c.clientHeight || c.height);
    this.renderer.setPixelRatio(Math.min(2, globalThis.devicePixelRatio || 1) * (this.scale ?? 1));
    this.renderer.setSize(w, h, false);
    const cam = this.camera, dist = 7 + 2 * (this.figures.length - 1), aspect = w / h;
    // Keep heads and shoulders in frame: 3 units tall, at least 2.8 wide a figure (narrow canvases).
    const halfWidth = 1.4 + (SPACING / 2) * (this.figures.length - 1);
    const half = Math.max(1.5, halfWidth / aspect);
    cam.fov = THREE.MathUtils.radToDeg(2 * Math.atan(half / dist));
    cam.aspect = aspect;
    cam.position.set(0, -0.1, dist);
    cam.lookAt(0, -0.22, 0);
    cam.updateProjectionMatrix();
  }

  dispose() {
    const seen = new Set();
    this.scene.traverse((o) => {
      if (o.geometry) o.geometry.dispose();
      for (const m of [].concat(o.material || [])) {
        if (seen.has(m)) continue;
        seen.add(m);
        if (m.map) m.map.dispose(); // matcaps are render targets, disposed below
        m.dispose();
      }
    });
    for (const rt of this._targets) rt.dispose();
    this.renderer.dispose();
    // the context goes now, not when its canvas is collected: a browser holds only so many
    this.renderer.forceContextLoss();
  }
}
