// An independent observer injected into a stage page by the tests and `bench lipsync`.
// Every animation frame it records what the page draws (`allnighter.state()`) beside the
// energy of the audio the page plays, measured with its OWN analysers and its own onset
// logic: the page's lip-sync is judged by a meter it does not control. The analysers listen
// where the viewer hears (`allnighter.heard()`), in the very AudioContext that plays: on the
// node the page connects to its speakers (after its interrupt ducking), and on the stream as
// heard before that ducking. (A context of the probe's own would take the stream through a
// buffer of its own, tens of ms apart.) Each buffer is timed when its newest sample leaves
// the output device, where the context's output timestamp says it is presented: not when it
// was rendered, which is the device's latency earlier (42 ms in headless Chromium, 737 ms
// with a latency hint of a quarter second).
(() => {
  if (window.__probe) return;
  const LOUD = 0.02; // the amplitude an onset crosses (decoded silence stays below 1e-3)
  const QUIET = 0.005; // below this a sample counts as silence
  const records = [];
  const since = new Map(); // analyser → the context time of the newest sample it last read
  const stamps = []; // [read at, performanceTime − contextTime·1000]: the last second's
  let lastStamp = null;
  let ctx = null;
  let analyser, buf, outAnalyser, outBuf;
  let received = null;
  let played = null;
  const now = () => performance.timeOrigin + performance.now();

  // (re)attach to the page's nodes: a reconnect gives the page a new received stream
  function listen() {
    const nodes = window.allnighter && window.allnighter.heard ? window.allnighter.heard() : null;
    if (!nodes) return;
    if (nodes.context !== ctx) {
      ctx = nodes.context;
      // as long as an analyser holds (683 ms at 48 kHz), so that no onset falls between two
      // reads: a starved page (five on a busy core) draws a frame every 100-250 ms, some 500 ms
      // apart, and what the context renders at once comes on top (186 ms with a quarter-second
      // hint). Sized for 12 fps, reads 150 ms apart lost a third of the line starts, and timed
      // others when a read first found the line loud. Each read scans only what is new.
      const size = 32768;
      analyser = ctx.createAnalyser();
      analyser.fftSize = size;
      buf = new Float32Array(size);
      outAnalyser = ctx.createAnalyser();
      outAnalyser.fftSize = size;
      outBuf = new Float32Array(size);
      received = played = null;
      since.clear();
      stamps.length = 0;
    }
    if (nodes.heard !== received) {
      if (received) received.disconnect(analyser);
      received = nodes.heard;
      if (received) received.connect(analyser);
    }
    if (nodes.played !== played) {
      played = nodes.played;
      if (played) played.connect(outAnalyser);
    }
  }

  // when the first sample above LOUD after 5 ms of quiet ones (the start of a sound, not a
  // sample inside one the buffer begins in) that no earlier read held was heard, when the
  // last above QUIET was, the energy of the last 256 samples, and how many ms of audio went
  // by unread since the last read (an onset there is not known); `t`: when the buffer's
  // newest sample is heard, `ct` its context time (null where the copy did not settle: the
  // energy still counts, and what is timed is timed by the next read)
  function read(an, b, t, ct) {
    let sum = 0;
    for (let i = b.length - 256; i < b.length; i++) sum += b[i] * b[i];
    const rms = Math.sqrt(sum / 256);
    if (ct === null) return { rms, loudAt: null, until: null, unread: 0 }; // timed next frame
    const ms = (i) => t - ((b.length - i) * 1000) / ctx.sampleRate;
    // the samples rendered since the last read, counted in context time (not by the timing,
    // which may stray by a few ms: a sample at a burst's edge would be taken for an old one)
    const fresh = since.has(an) ? Math.round((ct - since.get(an)) * ctx.sampleRate) : b.length;
    since.set(an, ct);
    const unread = fresh > b.length ? ((fresh - b.length) * 1000) / ctx.sampleRate : 0;
    const quietRun = (5 * ctx.sampleRate) / 1000;
    // what is new, and the 100 ms before it: the quiet an onset at its start comes after
    const from = Math.max(0, b.length - fresh - ctx.sampleRate / 10);
    let first = -1;
    for (let i = from, run = 0, armed = false; i < b.length && first < 0; i++) {
      const x = Math.abs(b[i]);
      if (x <= QUIET) armed ||= ++run >= quietRun;
      else if (x > LOUD && armed) {
        if (i >= b.length - fresh) first = i; // an older one was found by an earlier read
        armed = false;
        run = 0;
      } else run = 0; // sound, or a softer rise: that ends the quiet but keeps an onset coming
    }
    let last = b.length - 1;
    while (last >= 0 && Math.abs(b[last]) <= QUIET) last--;
    return {
      rms,
      loudAt: first >= 0 ? ms(first) : null,
      until: last >= 0 ? ms(last + 1) : null,
      unread,
    };
  }

  // When context time `ct` (the newest sample the analysers hold) leaves the output device
  // (epoch ms): the context's output timestamp says when a context time is presented. One
  // reading strays from the next by up to ±8 ms where the context renders 50 ms at once, so
  // the median over the last second's readings maps it. null before the first reading.
  function presented(t, ct) {
    const ts = ctx && ctx.getOutputTimestamp ? ctx.getOutputTimestamp() : null;
    if (ts && ts.performanceTime > 0 && ts.performanceTime !== lastStamp) {
      lastStamp = ts.performanceTime;
      stamps.push([t, ts.performanceTime - ts.contextTime * 1000]);
    }
    while (stamps.length > 1 && stamps[0][0] < t - 1000) stamps.shift();
    if (!stamps.length) return null;
    const sorted = stamps.map((s) => s[1]).sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    const origin = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    const at = performance.timeOrigin + origin + ct * 1000;
    const burst = (ctx.baseLatency || 0) * 1000;
    return at > t - 100 - 2 * burst && at < t + 5000 ? at : null;
  }

  // Copy both analysers' samples; the context time they end at, or null where currentTime
  // moved across the copies: the audio thread renders a burst a quantum at a time, and
  // currentTime read after a copy in the middle of one was found 17 ms of audio past it.
  function copy() {
    for (let i = 0; i < 3; i++) {
      const ct = ctx.currentTime;
      if (played) outAnalyser.getFloatTimeDomainData(outBuf);
      if (received) analyser.getFloatTimeDomainData(buf);
      if (ctx.currentTime === ct) return ct;
    }
    return null;
  }

  function frame(stamp) {
    listen();
    const t = now();
    const ct = ctx ? copy() : null;
    const at = ct !== null ? presented(t, ct) : null;
    const end = at ?? t;
    const out = played
      ? read(outAnalyser, outBuf, end, ct)
      : { rms: 0, loudAt: null, until: null, unread: 0 };
    const heard = received ? read(analyser, buf, end, ct) : { until: null };
    const s = window.allnighter ? window.allnighter.state() : {};
    records.push({
      t,
      frame: performance.timeOrigin + stamp, // the frame's timestamp: the vsync it was begun at
      heard: end, // when the buffers' newest sample leaves the speakers (or t, unknown)
      presented: at !== null, // whether the context said so
      // the latency the context reports (ms): a render-time figure subtracts it
      latency: ctx ? ((ctx.baseLatency || 0) + (ctx.outputLatency || 0)) * 1000 : 0,
      rms: out.rms, // of what the page plays
      loudAt: out.loudAt, // when its first sample above LOUD after quiet is heard
      playedUntil: out.until, // when its last sample above QUIET is heard
      unread: out.unread, // ms of what it plays that went by unread before this frame
      soundUntil: heard.until, // the same for the stream before the page's ducking
      mouth: s.mouth_open ?? 0,
      mouths: s.mouths ?? null, // each character's own, by role
      viseme: s.viseme ?? null, // the viseme the frame drew: where the first one's opening ends
      sample: s.current_sample ?? null,
    });
    if (records.length > 60000) records.splice(0, 10000);
    requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);

  // Long tasks (over 50 ms) on the page's main thread, [start, end] in epoch ms: where the
  // browser's own work (in software GL, a frame's paint can hold it for 50-600 ms) kept the
  // page from handling anything, an event included.
  const busy = [];
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const start = performance.timeOrigin + e.startTime;
        busy.push([start, start + e.duration]);
      }
      if (busy.length > 5000) busy.splice(0, 1000);
    }).observe({ type: "longtask", buffered: true });
  } catch (err) {
    // no long task timing in this browser: nothing is counted as busy
  }
  window.__probe = {
    now,
    since: (t) => records.filter((r) => r.t >= t),
    // Drop the records before `t` (epoch ms; by default, all but the last minute's): a long
    // run keeps only what its open window needs, so the page it measures does not carry an
    // hour of them (60,000 at most, otherwise). The JS heap in use after, MB (null unknown).
    forget: (t = now() - 60000) => {
      let n = 0;
      while (n < records.length && records[n].t < t) n++;
      records.splice(0, n);
      return performance.memory ? performance.memory.usedJSHeapSize / 2 ** 20 : null;
    },
    // how many ms of [from, to] the main thread spent in long tasks
    busy: (from, to) =>
      busy.reduce((ms, [a, b]) => ms + Math.max(0, Math.min(b, to) - Math.max(a, from)), 0),
  };
})();
