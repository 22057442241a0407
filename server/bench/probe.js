// An independent observer injected into a stage page by the tests and `bench lipsync`.
// Every animation frame it records what the page draws (`allnighter.state()`) beside the
// energy of the audio the page receives, measured with its OWN WebAudio analyser on the
// page's stream: the page's lip-sync is judged by a meter it does not control.
(() => {
  if (window.__probe) return;
  const LOUD = 0.02; // the amplitude an onset crosses (decoded silence stays below 1e-3)
  const QUIET = 0.005; // below this a sample counts as silence
  const audio = document.getElementById("stage-audio");
  const ctx = new AudioContext({ sinkId: { type: "none" } });
  const analyser = ctx.createAnalyser();
  analyser.fftSize = 2048; // 43 ms: longer than a frame, so no onset falls between reads
  const buf = new Float32Array(analyser.fftSize);
  const records = [];
  let stream = null;
  let source = null;
  // what the page plays (after its own interrupt ducking), when the page offers it
  const outAnalyser = ctx.createAnalyser();
  outAnalyser.fftSize = 2048;
  const outBuf = new Float32Array(outAnalyser.fftSize);
  let outSource = null;
  const now = () => performance.timeOrigin + performance.now();
  function frame() {
    if (audio.srcObject !== stream) {
      if (source) source.disconnect();
      stream = audio.srcObject;
      source = stream ? ctx.createMediaStreamSource(stream) : null;
      if (source) source.connect(analyser);
    }
    const t = now();
    let rms = 0;
    let loudAt = null; // when the first sample above LOUD in the buffer was heard
    let soundUntil = null; // when the last sample above QUIET in the buffer was heard
    if (source) {
      analyser.getFloatTimeDomainData(buf);
      let sum = 0;
      for (let i = buf.length - 256; i < buf.length; i++) sum += buf[i] * buf[i];
      rms = Math.sqrt(sum / 256);
      const first = buf.findIndex((x) => Math.abs(x) > LOUD);
      if (first >= 0) loudAt = t - ((buf.length - first) * 1000) / ctx.sampleRate;
      let last = buf.length - 1;
      while (last >= 0 && Math.abs(buf[last]) <= QUIET) last--;
      if (last >= 0) soundUntil = t - ((buf.length - 1 - last) * 1000) / ctx.sampleRate;
    }
    let playedUntil = null; // when the last sample above QUIET of the page's output was heard
    if (!outSource && window.allnighter && window.allnighter.output) {
      outSource = ctx.createMediaStreamSource(window.allnighter.output());
      outSource.connect(outAnalyser);
    }
    if (outSource) {
      outAnalyser.getFloatTimeDomainData(outBuf);
      let last = outBuf.length - 1;
      while (last >= 0 && Math.abs(outBuf[last]) <= QUIET) last--;
      if (last >= 0) playedUntil = t - ((outBuf.length - 1 - last) * 1000) / ctx.sampleRate;
    }
    const s = window.allnighter ? window.allnighter.state() : {};
    records.push({ t, rms, loudAt, soundUntil, playedUntil, mouth: s.mouth_open ?? 0, sample: s.current_sample ?? null });
    if (records.length > 60000) records.splice(0, 10000);
    requestAnimationFrame(frame);
  }
  ctx.resume();
  requestAnimationFrame(frame);
  window.__probe = {
    now,
    since: (t) => records.filter((r) => r.t >= t),
  };
})();
