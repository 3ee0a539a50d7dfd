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

/** MIN_WINDOW is the least time, in seconds, the lag chart's axis spans. */
export const MIN_WINDOW = 60;

/**
 * timeWindow is the lag chart's time axis: from its first point to its
 * last, and at least MIN_WINDOW ending at the last point. With no point
 * yet (before the history has loaded) it is the minute up to now, not
 * uPlot's default of years.
 */
function timeWindow(u, min, max) {
  if (min == null || max == null || !isFinite(min) || !isFinite(max)) {
    const now = Date.now() / 1000;
    return [now - MIN_WINDOW, now];
  }
  return max - min < MIN_WINDOW ? [max - MIN_WINDOW, max] : [min, max];
}

/**
 * clock labels the time axis on one line, with seconds when the ticks
 * are less than a minute apart: 17:05:30, or 17:05 (uPlot's two-line
 * default overlaps itself on a phone).
 */
function clock(u, splits, axis, space, incr) {
  const opts = incr < 60 ? { hour: "2-digit", minute: "2-digit", second: "2-digit" } : { hour: "2-digit", minute: "2-digit" };
  return splits.map((s) => new Date(s * 1000).toLocaleTimeString([], { ...opts, hour12: false }));
}

/**
 * setLagData gives a lag chart its data. uPlot leaves a time axis of no
 * point or of one point to its own devices (a span of years, or of 1,000
 * days): those get timeWindow's too.
 */
export function setLagData(u, data) {
  u.setData(data);
  const xs = data[0];
  if (xs.length < 2) {
    const [min, max] = timeWindow(u, xs[0], xs[0]);
    u.setScale("x", { min, max });
  }
}

/**
 * lagChart draws a consumer's lag, one line per topic, with axes. The
 * element keeps the time axis's range in data-x-min and data-x-max, and
 * its points' in data-first and data-last (Unix seconds) with their
 * number in data-points, for whoever wants to check what it shows.
 */
export function lagChart(el, width, height, topics, colors) {
  const axis = { stroke: css("--muted"), grid: { stroke: css("--line"), width: 1 }, ticks: { show: false }, font: "12px " + css("--font") };
  const opts = {
    width, height,
    legend: { show: false },
    cursor: { points: { size: 6 } },
    scales: { x: { time: true, range: timeWindow }, y: { range: (u, min, max) => [0, Math.max(10, (max ?? 0) * 1.1)] } },
    hooks: {
      setScale: [(u, key) => {
        if (key === "x") { el.dataset.xMin = u.scales.x.min; el.dataset.xMax = u.scales.x.max; }
      }],
      setData: [(u) => {
        const xs = u.data[0];
        el.dataset.points = xs.length;
        if (xs.length) { el.dataset.first = xs[0]; el.dataset.last = xs[xs.length - 1]; }
      }],
    },
    axes: [{ ...axis, space: 70, values: clock }, { ...axis, size: 64, values: (u, vals) => vals.map((v) => n(v)) }],
    series: [{}, ...topics.map((t, i) => ({ label: t, stroke: css(colors[i]), fill: alpha(css(colors[i]), 0.07), width: 2, points: { show: false } }))],
  };
  return new uPlot(opts, [[], ...topics.map(() => [])], el);
}
