// The last hour's charts: which figures each one draws, and the history's columns shaped as
// uPlot takes them. No DOM (charts.js draws).

export const HISTORY_MS = 10_000; // the server samples every ten seconds

export const CHARTS = [
  { id: "chart-ttfa", title: "Text → audio p99", unit: "ms", series: ["ttfa_p99_ms"] },
  { id: "chart-lipsync", title: "Lip-sync |p95|", unit: "ms", series: ["lipsync_p95_ms"] },
  { id: "chart-fps", title: "Frame rate", unit: "fps", series: ["fps"] },
  { id: "chart-viewers", title: "Viewers", unit: "", series: ["viewers"] },
  { id: "chart-rss", title: "Server memory", unit: "MB", series: ["rss_mb"] },
  { id: "chart-night", title: "Fallback level · alerts", unit: "", series: ["fallback_level", "alerts"] },
];

export const LABELS = {
  ttfa_p99_ms: "text → audio p99",
  lipsync_p95_ms: "lip-sync |p95|",
  fps: "fps",
  viewers: "viewers",
  rss_mb: "MB",
  fallback_level: "level",
  alerts: "alerts",
};

/** uPlot's data for `chart`: the times, then each series (null where unknown). */
export function chartData(history, chart) {
  const t = history.t || [];
  return [t, ...chart.series.map((name) => (history[name] || t.map(() => null)).slice(0, t.length))];
}

/** The latest known figure of a chart's first series, for its title ("—" when none). */
export function latest(history, chart) {
  const values = history[chart.series[0]] || [];
  for (let i = values.length - 1; i >= 0; i--) {
    if (values[i] !== null && values[i] !== undefined) {
      return `${Math.round(values[i] * 10) / 10}${chart.unit ? ` ${chart.unit}` : ""}`;
    }
  }
  return "—";
}
