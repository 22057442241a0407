// The stage page's own reconnect backoff (web/static/stage/link.js: backoffDelay), run for
// `viewers` pages whose server went away for `downMs`: each page tries again after each delay
// until the server answers. Prints, as JSON, when each page is back (ms after the server went
// away). Seeded, so that a bench can be repeated: `node backoff.mjs viewers downMs seed`.
import { backoffDelay } from "../../web/static/stage/link.js";

const [viewers, downMs, seed] = process.argv.slice(2).map(Number);
let state = seed >>> 0;
function random() { // mulberry32
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const back = [];
for (let v = 0; v < viewers; v++) {
  let t = 0;
  for (let attempt = 0; t < downMs; attempt++) t += backoffDelay(attempt, undefined, random);
  back.push(Math.round(t));
}
console.log(JSON.stringify(back));
