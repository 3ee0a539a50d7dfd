// A partition drawn as a tape: offset 0 at the left, the head at the
// right; retention's deleted range hatched; every consumer a cursor at its
// committed offset, labelled with its name, offset and lag.

import { n, bytes, esc, color, partLag } from "./model.js";

const LABEL_FONT = "12px " + getComputedStyle(document.documentElement).getPropertyValue("--font");
const LANE = 18;       // px per label lane
const MAX_LANES = 4;   // past this, a label is left to the tooltip
let ctx;

function textWidth(s, bold) {
  ctx ??= document.createElement("canvas").getContext("2d");
  ctx.font = (bold ? "600 " : "") + LABEL_FONT;
  return ctx.measureText(s).width;
}

const pct = (x) => (x * 100).toFixed(3) + "%";

/**
 * placeLabels puts each label in the first lane where it does not
 * overlap another, flipping it to the left of its cursor near the end.
 */
function placeLabels(items, width) {
  const lanes = [];
  for (const it of items.sort((a, b) => a.x - b.x)) {
    it.right = it.x + it.w > width && it.x - it.w >= 0;
    const from = it.right ? it.x - it.w : it.x;
    const to = from + it.w;
    let lane = lanes.findIndex((l) => l.every(([a, b]) => to + 10 <= a || from >= b + 10));
    if (lane < 0) { lane = lanes.length; lanes.push([]); }
    it.lane = lane;
    if (lane < MAX_LANES) lanes[lane].push([from, to]);
  }
  return Math.min(lanes.length, MAX_LANES);
}

/**
 * rows renders the partitions parts of topic t with the cursors of groups.
 * opts: width (px of the tape), compact (no labels), focus (a consumer
 * whose cursor stands out while the others are dimmed; or a Set of names).
 */
export function rows(t, parts, groups, opts) {
  const out = [];
  for (const p of parts) {
    const head = p.head;
    const scale = head > 0 ? head : 1;
    const gone = p.start / scale;
    let html = `<div class="prow" data-partition="${p.p}">
      <div class="plabel">${p.p}</div>
      <div class="tape-wrap">
        <div class="tape" data-topic="${esc(t.name)}" data-partition="${p.p}" data-start="${p.start}" data-head="${head}"
          data-tip="${esc(`${t.name} / ${p.p}\nlog start ${n(p.start)}\nhead ${n(head)}\n${n(head - p.start)} records kept`)}">`;
    if (p.start > 0) {
      const label = !opts.compact && gone * opts.width > 110 ? `<span>${n(p.start)} deleted</span>` : "";
      html += `<div class="gone${p.start >= head ? " all" : ""}" style="width:${pct(gone)}"
        data-tip="${esc(`deleted by retention: offsets 0 – ${n(p.start - 1)}`)}">${label}</div>`;
    }
    if (p.cleaned > p.start) {
      // A compacted topic: below the cleaned point each key keeps only its
      // newest record; the offsets in between are gaps readers step over.
      const from = p.start / scale, to = Math.min(p.cleaned, head) / scale;
      const label = !opts.compact && (to - from) * opts.width > 130 ? `<span>compacted to ${n(p.cleaned)}</span>` : "";
      html += `<div class="compacted${p.start > 0 ? " mid" : ""}" style="left:${pct(from)};width:${pct(to - from)}"
        data-tip="${esc(`compacted: offsets ${n(p.start)} – ${n(p.cleaned - 1)} keep only each key's newest record;\nthe offsets between them are gaps that readers step over`)}">${label}</div>`;
    }
    const labels = [];
    let cursors = "";
    for (const g of groups) {
      const c = g.committed[p.p] ?? -1;
      if (c < 0) continue;
      const st = partLag(c, p);
      const x = Math.min(1, c / scale);
      const dim = opts.focus && !opts.focus.has(g.consumer) ? " dim" : "";
      const tip = `${g.consumer}\ncommitted ${n(c)}\nlag ${n(st.lag)}` + (st.missed ? `\nmissed ${n(st.missed)} (deleted before read)` : "");
      const attrs = `data-consumer="${esc(g.consumer)}" data-topic="${esc(t.name)}" data-partition="${p.p}" data-offset="${c}" data-lag="${st.lag}"`;
      if (st.lag > 0 && !dim && !opts.compact) {
        html += `<div class="lagspan" style="left:${pct(x)};width:${pct(1 - x)};--c:${color(g.consumer)}"></div>`;
      }
      cursors += `<div class="cursor${dim}" style="left:${pct(x)};--c:${color(g.consumer)}" ${attrs} data-tip="${esc(tip)}"></div>`;
      if (!opts.compact && !dim) {
        const text = `${g.consumer}  ${n(c)} · lag ${n(st.lag)}` + (st.missed ? ` · missed ${n(st.missed)}` : "");
        labels.push({ g, c, st, x: x * opts.width, w: textWidth(text, true) + 12, attrs, tip });
      }
    }
    html += `<div class="head-mark"></div>${cursors}</div>`;
    if (labels.length) {
      const lanes = placeLabels(labels, opts.width);
      html += `<div class="labels" style="height:${lanes * LANE}px">`;
      for (const l of labels) {
        if (l.lane >= MAX_LANES) continue;
        html += `<div class="clabel${l.right ? " right" : ""}" style="left:${pct(l.x / opts.width)};top:${l.lane * LANE}px;--c:${color(l.g.consumer)}" ${l.attrs} data-tip="${esc(l.tip)}">` +
          `<span class="name">${esc(l.g.consumer)}</span> <span class="n">${n(l.c)} · lag ${n(l.st.lag)}</span>` +
          (l.st.missed ? ` <span class="missed">· missed ${n(l.st.missed)}</span>` : "") + `</div>`;
      }
      html += `</div>`;
    }
    const meta = opts.compact
      ? `<b>${n(head)}</b> head · lag ≤ ${n(maxLag(p, groups))}`
      : `<b>${n(head)}</b> head<br>${bytes(p.bytes)} · ${p.segments} segment${p.segments === 1 ? "" : "s"}`;
    html += `</div><div class="pmeta">${meta}</div></div>`;
    out.push(html);
  }
  return out.join("");
}

/** maxLag is the largest lag any group has on partition p. */
export function maxLag(p, groups) {
  let m = 0;
  for (const g of groups) {
    const c = g.committed[p.p] ?? -1;
    m = Math.max(m, partLag(c, p).lag);
  }
  return m;
}
