// Charts, drawn with uPlot (vendor/uPlot.iife.min.js, MIT).

import { n, rate } from "./model.js";

const css = (v) => getComputedStyle(document.documentElement).getPropertyValue(v).trim();

function alpha(hex, a) {
  const m = /^#([0-9a-f]{6})$/i.exec(hex);
  if (!m) return hex;
  const x = parseInt(m[1], 16);
  return `rgba(${x >> 16}, ${(x >> 8) & 255}, ${x & 255}, ${a})`;
}

/** rateChart is a small area chart of a topic's records per second. */
export function rateChart(el, width, height) {
  const stroke = css("--accent");
  const opts = {
    width, height,
    cursor: { show: true, x: false, y: false, points: { show: false } },
    select: { show: false },
    legend: { show: false },
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.15)] } },
    axes: [{ show: false }, { show: false }],
    series: [{}, { stroke, width: 1.5, fill: alpha(stroke, 0.12), points: { show: false }, value: (u, v) => rate(v) + "/s" }],
  };
  return new uPlot(opts, [[], []], el);
}

/** lagChart draws a consumer's lag, one line per topic, with axes. */
export function lagChart(el, width, height, topics, colors) {
  const axis = { stroke: css("--muted"), grid: { stroke: css("--line"), width: 1 }, ticks: { show: false }, font: "12px " + css("--font") };
  const opts = {
    width, height,
    legend: { show: false },
    cursor: { points: { size: 6 } },
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(10, max * 1.1)] } },
    axes: [axis, { ...axis, size: 64, values: (u, vals) => vals.map((v) => n(v)) }],
    series: [{}, ...topics.map((t, i) => ({ label: t, stroke: css(colors[i]), fill: alpha(css(colors[i]), 0.07), width: 2, points: { show: false } }))],
  };
  return new uPlot(opts, [[], ...topics.map(() => [])], el);
}
