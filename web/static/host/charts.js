// The last hour's charts, drawn with uPlot (from npm, served at /vendor/uplot/): one small
// chart per figure (chartdata.js says which), updated in place every ten seconds.

import uPlot from "/vendor/uplot/uPlot.esm.js";

import { $, el, setText } from "./dom.js";
import { CHARTS, LABELS, chartData, latest } from "./chartdata.js";

const COLOURS = ["#7dd3fc", "#fbbf24"];
const lastHour = (u, min, max) => {
  const end = max ?? Date.now() / 1000;
  return [end - 3600, end];
};
const clockTime = (s) => new Date(s * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
const plots = new Map();

function make(chart, data) {
  const box = $(chart.id);
  const width = Math.max(240, box.clientWidth || 280);
  const series = [
    {},
    ...chart.series.map((name, i) => ({
      label: LABELS[name] || name,
      stroke: COLOURS[i % COLOURS.length],
      width: 1.5,
      spanGaps: false,
    })),
  ];
  const opts = {
    width,
    height: 110,
    series,
    legend: { show: false },
    // always the whole last hour, ending at the newest sample (one sample is a point, not a
    // chart of its own scale)
    scales: { x: { time: true, range: lastHour } },
    axes: [
      // the hour of the night, not the date: every point of the chart is within the last hour
      { stroke: "#9ca3af", grid: { stroke: "#ffffff14" }, values: (u, splits) => splits.map(clockTime) },
      { stroke: "#9ca3af", grid: { stroke: "#ffffff14" }, size: 44 },
    ],
  };
  return new uPlot(opts, data, box.querySelector(".plot"));
}

/** Draw (or update) every chart from GET /api/v1/history's columns. */
export function drawCharts(history) {
  for (const chart of CHARTS) {
    const data = chartData(history, chart);
    setText($(chart.id).querySelector(".now"), latest(history, chart));
    const plot = plots.get(chart.id);
    if (plot) plot.setData(data);
    else plots.set(chart.id, make(chart, data));
  }
}

/** The chart boxes, in the panel's "Last hour" card. */
export function chartBoxes() {
  return CHARTS.map((c) =>
    el(
      "figure",
      { id: c.id, class: "chart", "data-testid": c.id },
      el("figcaption", {}, el("span", { text: c.title }), el("span", { class: "now" })),
      el("div", { class: "plot" }),
    ),
  );
}
