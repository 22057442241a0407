// The avatar's face: mostly the mouth (lips, a dark interior, teeth and tongue, each carrying
// one morph target per Oculus viseme, named viseme_<name> as in Ready Player Me), plus the
// skin-depth sampler that lays features on the head and the eye, blush and teeth textures.
//
// The mouth is a 2.5D layer laid on the face surface (surfZ gives the skin depth at x, y):
// the interior disc is the lips' opening and writes stencil 1; teeth and tongue draw only where
// the stencil is 1, so they show exactly through the opening and never poke out of the face.
// Lips draw last. Targets are absolute (base = sil), so blended weights summing to 1 interpolate
// between shapes, and sum(weight * JAW_OPEN) is the jaw opening the geometry really shows.
import * as THREE from "three";

// The viseme set is the server's (the page's facts: server/show/visemes.py), "sil" first; the
// tables below give each of its visemes a shape (`shapeless` names any they miss).

// How far each viseme opens the jaw, 0..1. The lower teeth drop by exactly JAW_OPEN * JAW_DROP.
export const JAW_OPEN = {
  sil: 0, PP: 0, FF: 0.08, TH: 0.18, DD: 0.22, kk: 0.35, CH: 0.15, SS: 0.06,
  nn: 0.2, RR: 0.25, aa: 1, E: 0.55, I: 0.3, O: 0.7, U: 0.3,
};

export const JAW_DROP = 0.19; // head units at jaw = 1

// Shape of each viseme. w: half width of the opening; up / dn: how far the upper / lower lip's
// inner edge leaves the seam (dn < 0 lifts the lower lip, for FF); q < 1 makes the opening
// boxier (wide vowels), 1 elliptical; round/pout: rounded lips pushed forward; press: lips
// pressed thin; tuck: lower lip rolled back under the teeth; follow: how much of the jaw drop
// the lower lip follows; tongue: y offset of its centre from the seam (before the jaw drop),
// half sizes rx/ry and front (0 behind the teeth, 1 in front of the lower teeth).
const BASE = {
  w: 0.19, up: 0, dn: 0, q: 0.8, smile: 0, round: 0, pout: 0, press: 0, tuck: 0, follow: 0.9,
  tongue: { y: -0.12, rx: 0.12, ry: 0.05, front: 0 },
};
const SHAPES = {
  sil: { smile: 0.014 },
  PP: { w: 0.165, press: 1 },
  FF: { w: 0.2, up: 0.05, dn: -0.028, q: 0.6, tuck: 1, follow: 0.4 },
  TH: { w: 0.19, up: 0.035, dn: 0.03, q: 0.65, tongue: { y: -0.018, rx: 0.095, ry: 0.05, front: 1 } },
  DD: { w: 0.2, up: 0.03, dn: 0.03, q: 0.6, tongue: { y: -0.045, rx: 0.1, ry: 0.055 } },
  kk: { w: 0.195, up: 0.035, dn: 0.035, q: 0.7, tongue: { y: -0.085, rx: 0.13, ry: 0.05 } },
  CH: { w: 0.14, up: 0.042, dn: 0.03, q: 0.8, round: 0.6, pout: 0.035 },
  SS: { w: 0.23, up: 0.032, dn: 0.028, q: 0.45, smile: 0.01 },
  nn: { w: 0.195, up: 0.025, dn: 0.025, q: 0.65, tongue: { y: -0.04, rx: 0.1, ry: 0.055 } },
  RR: { w: 0.15, up: 0.035, dn: 0.025, q: 0.85, round: 0.5, pout: 0.025 },
  aa: { w: 0.215, up: 0.05, dn: 0.04, q: 0.75, tongue: { y: -0.03, rx: 0.13, ry: 0.05 } },
  E: { w: 0.24, up: 0.04, dn: 0.03, q: 0.5, smile: 0.008 },
  I: { w: 0.25, up: 0.03, dn: 0.02, q: 0.42, smile: 0.02 },
  O: { w: 0.12, up: 0.06, dn: 0.03, q: 1, round: 1, pout: 0.05 },
  U: { w: 0.075, up: 0.028, dn: 0.012, q: 1, round: 1, pout: 0.075, follow: 0.45 },
};
/** The visemes of `visemes` that the mouth has no shape for (none, for the server's set). */
export function shapeless(visemes) {
  return visemes.filter((v) => !(v in SHAPES && v in JAW_OPEN));
}

const shapeOf = (v) => ({
  ...BASE, ...SHAPES[v], jaw: JAW_OPEN[v], tongue: { ...BASE.tongue, ...SHAPES[v].tongue },
});

const N = 48; // samples around the opening
const ROWS = [-1, 0, 0.2, 0.42, 0.68, 1]; // lip cross-section: -1 rolls into the mouth, 1 meets skin
const LIP = new THREE.Color("#c9736c"), LIP_IN = new THREE.Color("#7a3438");

// Lip profile height across the lip (0 inner edge .. 1 skin): a full rolled lip.
const prof = (u) => (u < 0.3 ? 0.6 + 0.4 * Math.sin((u / 0.3) * Math.PI / 2)
  : Math.pow(Math.cos(((u - 0.3) / 0.7) * Math.PI / 2), 1.3));

// Lip ring vertex positions for shape s; also returns the opening centre and its roll lift.
function lipPositions(s, y0, surf) {
  const pos = new Float32Array(ROWS.length * N * 3);
  const drop = s.jaw * JAW_DROP * s.follow;
  for (let i = 0; i < N; i++) {
    const t = (i / N) * Math.PI * 2, c = Math.cos(t), sn = Math.sin(t);
    const upper = sn >= 0, f = Math.pow(Math.abs(sn), s.q);
    const ys = y0 + s.smile * c * c; // a smile lifts the corners
    const x0 = s.w * c, yi = upper ? ys + s.up * f : ys - (s.dn + drop) * f;
    const T = (upper ? 0.05 : 0.064) * (1 + 0.35 * s.round) * (1 - 0.45 * s.press);
    const c0 = 0.22 + 0.45 * s.round; // corners thin on a wide mouth, full on a round one
    const th = T * (c0 + (1 - c0) * Math.pow(Math.abs(sn), 0.7));
    let dx = (0.5 + 0.5 * s.round) * c, dy = sn;
    const dl = Math.hypot(dx, dy); dx /= dl; dy /= dl;
    const B = (upper ? 0.03 : 0.036) * (1 + 0.4 * s.round) * (1 - 0.6 * s.press) * (upper ? 1 : 1 - 0.6 * s.tuck);
    for (let r = 0; r < ROWS.length; r++) {
      const u = ROWS[r], k = Math.max(u, 0);
      const x = x0 + dx * th * k, y = yi + dy * th * k;
      const lift = u < 0 ? 0.004 + s.pout * 0.5 : 0.0025 + B * prof(u) + s.pout * Math.pow(1 - u, 1.5);
      const o = (r * N + i) * 3;
      pos[o] = x; pos[o + 1] = y; pos[o + 2] = surf(x, y) + lift;
    }
  }
  return pos;
}

// Interior disc: centre + 3 rings interpolated towards the lips' rolled-in row.
function discPositions(lip, surf) {
  const pos = new Float32Array((1 + 3 * N) * 3);
  let top = -Infinity, bot = Infinity;
  for (let i = 0; i < N; i++) { const y = lip[i * 3 + 1]; top = Math.max(top, y); bot = Math.min(bot, y); }
  const cy = (top + bot) / 2;
  pos[0] = 0; pos[1] = cy; pos[2] = surf(0, cy) + 0.003;
  for (let k = 1; k <= 3; k++) {
    for (let i = 0; i < N; i++) {
      const a = k / 3, o = (1 + (k - 1) * N + i) * 3;
      const x = lip[i * 3] * a, y = cy + (lip[i * 3 + 1] - cy) * a;
      pos[o] = x; pos[o + 1] = y;
      pos[o + 2] = k === 3 ? lip[i * 3 + 2] : surf(x, y) + 0.003;
    }
  }
  return pos;
}

const TEETH_W = 0.15, TONGUE_N = 28, TONGUE_R = 4;

// Teeth band: cols x rows grid; edge is the biting edge (upper: bottom, lower: top).
function teethPositions(upper, yShift, y0, surf) {
  const cols = 16, rows = 4, pos = new Float32Array((cols + 1) * (rows + 1) * 3);
  const w = upper ? TEETH_W : TEETH_W * 0.92, layer = upper ? 0.011 : 0.006;
  for (let r = 0; r <= rows; r++) {
    for (let c = 0; c <= cols; c++) {
      const x = (c / cols * 2 - 1) * w, a = (x / w) ** 2;
      const edge = upper ? y0 + 0.006 + 0.035 * a : y0 - 0.002 - 0.025 * a;
      const y = edge + (upper ? 1 : -1) * 0.1 * (r / rows) - yShift;
      const o = (r * (cols + 1) + c) * 3;
      pos[o] = x; pos[o + 1] = y; pos[o + 2] = surf(x, y) + layer;
    }
  }
  return pos;
}

function tonguePositions(s, y0, surf) {
  const tg = s.tongue, pos = new Float32Array((1 + TONGUE_R * TONGUE_N) * 3), nrm = new Float32Array(pos.length);
  const cx = 0, cy = y0 + tg.y - s.jaw * JAW_DROP * 0.85;
  const put = (o, x, y, front) => {
    pos[o] = x; pos[o + 1] = y; pos[o + 2] = surf(x, y) + 0.004 + 0.005 * tg.front * front;
    const nx = (x - cx) / tg.rx * 0.7, ny = (y - cy) / tg.ry * 0.5, l = Math.hypot(nx, ny, 1);
    nrm[o] = nx / l; nrm[o + 1] = ny / l; nrm[o + 2] = 1 / l;
  };
  put(0, cx, cy, 1);
  for (let k = 1; k <= TONGUE_R; k++) {
    for (let i = 0; i < TONGUE_N; i++) {
      const t = (i / TONGUE_N) * Math.PI * 2, a = k / TONGUE_R;
      const ry = Math.sin(t) >= 0 ? tg.ry : 0.12; // the body below reaches out of sight
      put((1 + (k - 1) * TONGUE_N + i) * 3, cx + Math.cos(t) * tg.rx * a, cy + Math.sin(t) * ry * a,
        Math.max(0, Math.sin(t)) * a);
    }
  }
  return { pos, nrm };
}

function fanIndex(rings, n) { // centre vertex 0, then `rings` rings of n vertices
  const idx = [];
  for (let i = 0; i < n; i++) idx.push(0, 1 + i, 1 + ((i + 1) % n));
  for (let k = 1; k < rings; k++) {
    const a = 1 + (k - 1) * n, b = 1 + k * n;
    for (let i = 0; i < n; i++) {
      const j = (i + 1) % n;
      idx.push(a + i, b + i, b + j, a + i, b + j, a + j);
    }
  }
  return idx;
}

// Normals of a position set on this geometry's topology.
function normalsFor(geo, pos) {
  const g = new THREE.BufferGeometry();
  g.setAttribute("position", new THREE.BufferAttribute(pos, 3));
  g.setIndex(geo.getIndex());
  g.computeVertexNormals();
  const n = g.getAttribute("normal").array;
  g.dispose();
  return n;
}

// Attach one absolute morph target per viseme of `visemes`; the base shape is the first, sil.
function addMorphs(geo, make, withNormals, visemes) {
  const P = [], Nn = [];
  for (const v of visemes) {
    const { pos, nrm } = make(v);
    const pa = new THREE.BufferAttribute(pos, 3); pa.name = "viseme_" + v; P.push(pa);
    if (withNormals) {
      const na = new THREE.BufferAttribute(nrm || normalsFor(geo, pos), 3); na.name = pa.name; Nn.push(na);
    }
  }
  geo.setAttribute("position", new THREE.BufferAttribute(P[0].array.slice(), 3));
  if (withNormals) geo.setAttribute("normal", new THREE.BufferAttribute(Nn[0].array.slice(), 3));
  geo.morphAttributes.position = P;
  if (withNormals) geo.morphAttributes.normal = Nn;
  geo.computeBoundingSphere();
}

function teethTexture() {
  const cv = document.createElement("canvas"); cv.width = 256; cv.height = 64;
  const g = cv.getContext("2d"), widths = [0.8, 0.9, 1.05, 1.3, 1.3, 1.05, 0.9, 0.8];
  const total = widths.reduce((a, b) => a + b, 0);
  let x = 0;
  for (const w of widths) {
    const px = (w / total) * 256, r = 6;
    const grad = g.createLinearGradient(0, 0, 0, 64);
    grad.addColorStop(0, "#d8d2c8"); grad.addColorStop(1, "#fbf9f4");
    g.fillStyle = grad;
    g.beginPath(); // rounded at the biting edge (canvas bottom)
    g.moveTo(x + 1, 0); g.lineTo(x + px - 1, 0); g.lineTo(x + px - 1, 64 - r);
    g.quadraticCurveTo(x + px - 1, 64, x + px - 1 - r, 64); g.lineTo(x + 1 + r, 64);
    g.quadraticCurveTo(x + 1, 64, x + 1, 64 - r); g.closePath(); g.fill();
    x += px;
  }
  const tex = new THREE.CanvasTexture(cv);
  tex.colorSpace = THREE.SRGBColorSpace;
  return tex;
}

// Skin depth z at (x, y) on the face: the head's front triangles rasterised into a grid.
export function surfaceSampler(geo) {
  const X0 = -0.95, Y0 = -1.15, S = 0.01, W = 191, H = 196, z = new Float32Array(W * H).fill(-1);
  const p = geo.getAttribute("position"), ix = geo.getIndex();
  const v = [0, 1, 2].map(() => new THREE.Vector3());
  for (let t = 0; t < ix.count; t += 3) {
    for (let k = 0; k < 3; k++) v[k].fromBufferAttribute(p, ix.getX(t + k));
    if (v[0].z < 0.2 && v[1].z < 0.2 && v[2].z < 0.2) continue;
    const [a, b, c] = v;
    const d = (b.y - c.y) * (a.x - c.x) + (c.x - b.x) * (a.y - c.y);
    if (Math.abs(d) < 1e-12) continue;
    const gx0 = Math.max(0, Math.ceil((Math.min(a.x, b.x, c.x) - X0) / S));
    const gx1 = Math.min(W - 1, Math.floor((Math.max(a.x, b.x, c.x) - X0) / S));
    const gy0 = Math.max(0, Math.ceil((Math.min(a.y, b.y, c.y) - Y0) / S));
    const gy1 = Math.min(H - 1, Math.floor((Math.max(a.y, b.y, c.y) - Y0) / S));
    for (let gy = gy0; gy <= gy1; gy++) {
      for (let gx = gx0; gx <= gx1; gx++) {
        const px = X0 + gx * S, py = Y0 + gy * S;
        const l1 = ((b.y - c.y) * (px - c.x) + (c.x - b.x) * (py - c.y)) / d;
        const l2 = ((c.y - a.y) * (px - c.x) + (a.x - c.x) * (py - c.y)) / d, l3 = 1 - l1 - l2;
        if (l1 < -1e-6 || l2 < -1e-6 || l3 < -1e-6) continue;
        const zz = l1 * a.z + l2 * b.z + l3 * c.z, o = gy * W + gx;
        if (zz > z[o]) z[o] = zz;
      }
    }
  }
  return (x, y) => {
    const fx = Math.min(W - 1.001, Math.max(0, (x - X0) / S)), fy = Math.min(H - 1.001, Math.max(0, (y - Y0) / S));
    const i = Math.floor(fx), j = Math.floor(fy), u = fx - i, w = fy - j, o = j * W + i;
    return (z[o] * (1 - u) + z[o + 1] * u) * (1 - w) + (z[o + W] * (1 - u) + z[o + W + 1] * u) * w;
  };
}

// Eyeball texture, equirectangular: the iris and pupil sit around the front (top) pole.
export function eyeTexture(IRIS) {
  const cv = document.createElement("canvas"); cv.width = 256; cv.height = 128;
  const g = cv.getContext("2d");
  g.fillStyle = "#f4efec"; g.fillRect(0, 0, 256, 128);
  const iris = 30, pupil = 12; // rows from the front pole (128 rows = pi)
  const grad = g.createLinearGradient(0, 0, 0, iris);
  grad.addColorStop(0, IRIS[1]); grad.addColorStop(0.65, IRIS[0]); grad.addColorStop(1, "#0b2a35");
  g.fillStyle = grad; g.fillRect(0, 0, 256, iris);
  for (let i = 0; i < 90; i++) { // radial iris fibres
    g.fillStyle = `rgba(${Math.random() < 0.5 ? "255,255,255" : "0,20,30"},0.18)`;
    g.fillRect(Math.random() * 256, pupil, 1.5, iris - pupil - 3);
  }
  g.fillStyle = "#05080a"; g.fillRect(0, 0, 256, pupil);
  const tex = new THREE.CanvasTexture(cv);
  tex.colorSpace = THREE.SRGBColorSpace;
  return tex;
}

export function blushTexture() {
  const cv = document.createElement("canvas"); cv.width = cv.height = 64;
  const g = cv.getContext("2d"), grad = g.createRadialGradient(32, 32, 0, 32, 32, 32);
  grad.addColorStop(0, "rgba(240,110,110,0.55)"); grad.addColorStop(1, "rgba(240,110,110,0)");
  g.fillStyle = grad; g.fillRect(0, 0, 64, 64);
  const tex = new THREE.CanvasTexture(cv);
  tex.colorSpace = THREE.SRGBColorSpace;
  return tex;
}

// Builds the mouth centred at x = 0, y = y0 on the face; surf(x, y) is the skin's z there.
// skinColor: the lips fade into it at their outer edge. material(look, props) makes a lit
// material (look: colour/roughness; props: map, vertexColors, stencil...). visemes: the set the
// morph targets follow, in order. Returns { group, meshes }.
export function buildMouth({ y0, surf, skinColor, material, visemes }) {
  const group = new THREE.Group(), meshes = [];
  const skin = new THREE.Color(skinColor);
  const stencilIn = { stencilWrite: true, stencilRef: 1, stencilFunc: THREE.EqualStencilFunc };

  // Lips
  const lipGeo = new THREE.BufferGeometry(), idx = [];
  for (let r = 0; r < ROWS.length - 1; r++) {
    for (let i = 0; i < N; i++) {
      const j = (i + 1) % N, a = r * N, b = (r + 1) * N;
      idx.push(a + i, b + i, b + j, a + i, b + j, a + j);
    }
  }
  lipGeo.setIndex(idx);
  const col = new Float32Array(ROWS.length * N * 3), c = new THREE.Color();
  ROWS.forEach((u, r) => {
    if (u < 0) c.copy(LIP_IN); else if (u === 0) c.copy(LIP).lerp(LIP_IN, 0.35);
    else c.copy(LIP).lerp(skin, THREE.MathUtils.smoothstep(u, 0.45, 1));
    for (let i = 0; i < N; i++) c.toArray(col, (r * N + i) * 3);
  });
  lipGeo.setAttribute("color", new THREE.BufferAttribute(col, 3));
  addMorphs(lipGeo, (v) => ({ pos: lipPositions(shapeOf(v), y0, surf) }), true, visemes);
  const lips = new THREE.Mesh(lipGeo, material({ roughness: 0.42 }, { vertexColors: true }));
  lips.renderOrder = 3;

  // Interior: dark, writes the stencil, no depth (so teeth and tongue behind it still draw)
  const discGeo = new THREE.BufferGeometry();
  discGeo.setIndex(fanIndex(3, N));
  const dcol = new Float32Array((1 + 3 * N) * 3);
  for (let k = 0, v = 0; k <= 3; k++) {
    c.set(k === 0 ? "#12040a" : k === 3 ? "#4a1a20" : "#21080e");
    for (let i = 0; i < (k === 0 ? 1 : N); i++, v++) c.toArray(dcol, v * 3);
  }
  discGeo.setAttribute("color", new THREE.BufferAttribute(dcol, 3));
  addMorphs(discGeo, (v) => ({ pos: discPositions(lipPositions(shapeOf(v), y0, surf), surf) }), false, visemes);
  const disc = new THREE.Mesh(discGeo, new THREE.MeshBasicMaterial({
    vertexColors: true, depthWrite: false, stencilWrite: true, stencilRef: 1,
    stencilFunc: THREE.AlwaysStencilFunc, stencilZPass: THREE.ReplaceStencilOp,
  }));
  disc.renderOrder = 1;

  // Teeth (upper fixed to the skull, lower dropping with the jaw) and tongue: one mesh, one draw
  const TC = 16, TR = 4, TV = (TC + 1) * (TR + 1), uv = [], tc = [], tn = [], ix = [];
  for (const upper of [true, false]) {
    const o = upper ? 0 : TV;
    for (let r = 0; r <= TR; r++) {
      for (let q = 0; q <= TC; q++) {
        uv.push(q / TC, upper ? r / TR : 1 - r / TR);
        const shade = upper ? 1 - 0.5 * (r / TR) : 0.88 - 0.45 * (r / TR); // in the lips' shadow
        tc.push(shade, shade, shade);
        const n = new THREE.Vector3(((q / TC) * 2 - 1) * 0.7, (upper ? -0.35 : 0.35) * (1 - r / TR), 1).normalize();
        tn.push(n.x, n.y, n.z);
        if (r < TR && q < TC) {
          const a = o + r * (TC + 1) + q, b = a + TC + 1;
          if (upper) ix.push(a, a + 1, b + 1, a, b + 1, b); else ix.push(a, b + 1, a + 1, a, b, b + 1);
        }
      }
    }
  }
  for (const k of fanIndex(TONGUE_R, TONGUE_N)) ix.push(2 * TV + k);
  for (let k = 0; k <= TONGUE_R; k++) { // the tongue samples an opaque, near-white texel
    c.set("#e07a84").lerp(new THREE.Color("#8a3040"), (k / TONGUE_R) ** 2);
    for (let i = 0; i < (k === 0 ? 1 : TONGUE_N); i++) { tc.push(c.r, c.g, c.b); uv.push(0.42, 0.75); }
  }
  const inGeo = new THREE.BufferGeometry();
  inGeo.setIndex(ix);
  inGeo.setAttribute("uv", new THREE.Float32BufferAttribute(uv, 2));
  inGeo.setAttribute("color", new THREE.Float32BufferAttribute(tc, 3));
  const cat = (...a) => { const out = new Float32Array(a.reduce((n, x) => n + x.length, 0)); let o = 0; for (const x of a) { out.set(x, o); o += x.length; } return out; };
  const upperPos = teethPositions(true, 0, y0, surf);
  addMorphs(inGeo, (v) => {
    const t = tonguePositions(shapeOf(v), y0, surf);
    return { pos: cat(upperPos, teethPositions(false, JAW_OPEN[v] * JAW_DROP, y0, surf), t.pos), nrm: cat(tn, t.nrm) };
  }, true, visemes);
  const inside = new THREE.Mesh(inGeo, material({ roughness: 0.35 }, {
    map: teethTexture(), alphaTest: 0.5, vertexColors: true, ...stencilIn,
  }));
  inside.renderOrder = 2;

  for (const m of [disc, inside, lips]) {
    m.updateMorphTargets();
    m.frustumCulled = false;
    group.add(m);
    meshes.push(m);
  }
  return { group, meshes };
}
