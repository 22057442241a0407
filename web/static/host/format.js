// The host desk's figures as text: durations, offsets, shares, times of day. No DOM.

/** A duration: "—" when unknown, in ms, or in seconds from 10 s on. */
export function ms(value) {
  if (value === null || value === undefined) return "—";
  return value >= 10000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`;
}

/** An offset with its sign ("+12 ms", "-3 ms"), "—" when unknown. */
export function signedMs(x) {
  if (x === null || x === undefined) return "—";
  return `${x > 0 ? "+" : ""}${x.toFixed(0)} ms`;
}

/** A share of 0..1 as a percentage, "—" when unknown. */
export function share(x) {
  return x === null || x === undefined ? "—" : `${(100 * x).toFixed(0)} %`;
}

/** Seconds as h:mm:ss. */
export function clock(seconds) {
  const s = Math.floor(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = (n) => String(n).padStart(2, "0");
  return `${h}:${pad(m)}:${pad(s % 60)}`;
}

/** The hour and minute of a time (ms since the Unix epoch), in the viewer's locale. */
export function timeOfDay(msEpoch) {
  return new Date(msEpoch).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

// Text → audio → heard → picture, each against the one before: where an utterance's time went
export function crossModal(x) {
  const parts = [`text→audio ${ms(x.audio_minus_text_ms)}`];
  if (x.viewers) {
    parts.push(`audio→heard ${ms(x.heard_minus_audio_ms)}`);
    const who = `${x.viewers} viewer${x.viewers === 1 ? "" : "s"}`;
    parts.push(`picture−heard ${signedMs(x.picture_minus_heard_ms)} (${who})`);
  }
  return parts.join(" · ");
}

// the viewers' output device latency: median (and most), and how many pages cannot know theirs
export function outputLatency(v) {
  const ms = (x) => `${x.toFixed(0)} ms`;
  let text = v.output_latency_ms_median == null ? "—" : ms(v.output_latency_ms_median);
  if (v.output_latency_ms_max != null && v.output_latency_ms_max !== v.output_latency_ms_median) {
    text += ` (up to ${ms(v.output_latency_ms_max)})`;
  }
  return v.output_latency_unknown ? `${text}; ${v.output_latency_unknown} unknown` : text;
}
