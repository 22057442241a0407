// An independent observer injected into a stage page by the tests and `bench lipsync`.
// Every animation frame it records what the page draws (`allnighter.state()`) beside the
// energy of the audio the page hears, measured with its OWN analysers and its own onset
// logic: the page's lip-sync is judged by a meter it does not control. The analysers listen
// where the viewer hears (`allnighter.heard()`): the stream as heard (after the page's
// look-ahead) in the very AudioContext that plays it, and what that context plays after the
// page's interrupt ducking. (A context of the probe's own would take the stream through a
// buffer of its own, tens of ms apart.)
(() => {
  if (window.__probe) return;
  const LOUD = 0.02; // the amplitude an onset crosses (decoded silence stays below 1e-3)
  const QUIET = 0.005; // below this a sample counts as silence
  const records = [];
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
      analyser = ctx.createAnalyser();
      analyser.fftSize = 4096; // 85 ms: longer than a frame down to 12 fps, so no onset
      buf = new Float32Array(analyser.fftSize); // falls between two reads
      outAnalyser = ctx.createAnalyser();
      outAnalyser.fftSize = 4096;
      outBuf = new Float32Array(outAnalyser.fftSize);
      received = played = null;
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
  // sample inside one the buffer begins in) and the last above QUIET were heard, and the
  // energy of the last 256 samples
  function read(an, b, t) {
    an.getFloatTimeDomainData(b);
    const ms = (i) => t - ((b.length - i) * 1000) / ctx.sampleRate;
    let sum = 0;
    for (let i = b.length - 256; i < b.length; i++) sum += b[i] * b[i];
    const quietRun = (5 * ctx.sampleRate) / 1000;
    let first = -1;
    for (let i = 0, run = 0, armed = false; i < b.length && first < 0; i++) {
      const x = Math.abs(b[i]);
      if (x <= QUIET) armed ||= ++run >= quietRun;
      else if (x > LOUD && armed) first = i;
      else run = 0; // sound, or a softer rise: that ends the quiet but keeps an onset coming
    }
    let last = b.length - 1;
    while (last >= 0 && Math.abs(b[last]) <= QUIET) last--;
    return {
      rms: Math.sqrt(sum / 256),
      loudAt: first >= 0 ? ms(first) : null,
      until: last >= 0 ? ms(last + 1) : null,
    };
  }

  // When the context rendered the newest sample its analysers hold (epoch ms). It renders in
  // bursts, so that is up to a burst before this frame: the context's output timestamp says
  // when a context time is played, and rendering runs its base and output latencies ahead.
  function rendered(t) {
    const ts = ctx && ctx.getOutputTimestamp ? ctx.getOutputTimestamp() : null;
    if (!ts || !(ts.performanceTime > 0)) return t;
    const ahead = (ctx.baseLatency || 0) + (ctx.outputLatency || 0);
    const at = performance.timeOrigin + ts.performanceTime + (ctx.currentTime - ts.contextTime - ahead) * 1000;
    return at <= t && at > t - 100 ? at : t;
  }

  function frame(stamp) {
    listen();
    const t = now();
    const end = rendered(t);
    const heard = received ? read(analyser, buf, end) : { rms: 0, loudAt: null, until: null };
    const out = played ? read(outAnalyser, outBuf, end) : { until: null };
    const s = window.allnighter ? window.allnighter.state() : {};
    records.push({
      t,
      frame: performance.timeOrigin + stamp, // the frame's timestamp: the vsync it was begun at
      rms: heard.rms,
      loudAt: heard.loudAt, // when the first sample above LOUD in the buffer was heard
      soundUntil: heard.until, // when its last sample above QUIET was heard
      playedUntil: out.until, // the same for what the page plays
      mouth: s.mouth_open ?? 0,
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
    // how many ms of [from, to] the main thread spent in long tasks
    busy: (from, to) =>
      busy.reduce((ms, [a, b]) => ms + Math.max(0, Math.min(b, to) - Math.max(a, from)), 0),
  };
})();
