// The last hour's charts: the history's columns as uPlot takes them.
import assert from "node:assert/strict";
import { test } from "node:test";

import { CHARTS, chartData, latest } from "../static/host/chartdata.js";

const HISTORY = {
  series: ["ttfa_p99_ms", "lipsync_p95_ms", "fps", "viewers", "rss_mb", "fallback_level", "alerts"],
  t: [1000, 1010, 1020],
  ttfa_p99_ms: [410.5, null, 395.25],
  lipsync_p95_ms: [8.2, 7.9, null],
  fps: [59.8, 60, 60],
  viewers: [3, 4, 4],
  rss_mb: [1180.4, 1181, 1182.6],
  fallback_level: [0, 1, 1],
  alerts: [0, 2, 0],
};

test("each chart takes the times and its own series, gaps kept as gaps", () => {
  const ttfa = CHARTS.find((c) => c.id === "chart-ttfa");
  assert.deepEqual(chartData(HISTORY, ttfa), [[1000, 1010, 1020], [410.5, null, 395.25]]);
  const night = CHARTS.find((c) => c.id === "chart-night");
  assert.deepEqual(chartData(HISTORY, night), [[1000, 1010, 1020], [0, 1, 1], [0, 2, 0]]);
  // every series the server keeps is drawn somewhere
  const drawn = new Set(CHARTS.flatMap((c) => c.series));
  assert.deepEqual([...drawn].sort(), [...HISTORY.series].sort());
});

test("a chart's title carries its latest known figure", () => {
  const by = (id) => CHARTS.find((c) => c.id === id);
  assert.equal(latest(HISTORY, by("chart-ttfa")), "395.3 ms");
  assert.equal(latest(HISTORY, by("chart-lipsync")), "7.9 ms");
  assert.equal(latest(HISTORY, by("chart-viewers")), "4");
  assert.equal(latest({ t: [] }, by("chart-rss")), "—");
  // an empty history (a show just started) draws empty charts, not errors
  assert.deepEqual(chartData({ t: [] }, by("chart-fps")), [[], []]);
});
