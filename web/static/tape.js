// A partition drawn as a tape: offset 0 at the left, the head at the
// right; retention's deleted range hatched; every consumer a cursor at its
// committed offset, labelled with its name, offset and lag, and a bar in
// its colour from there to the head: each consumer's bar in a lane of its
// own, so that bars never overlap and mix into a colour nobody has.

import { n, count, bytes, esc, color, partLag } from "./model.js";

const LABEL_FONT = "12px " + getComputedStyle(document.documentElement).getPropertyValue("--font");
const LANE = 18;       // px per label lane
const MAX_LANES = 4;   // past this, a label is left to the tooltip
const BAR_LANES = 4;   // lag bars stacked in a tape (app.css: .lagspan), the most behind first
let ctx;

function textWidth(s, bold) {
  ctx ??= document.createElement("canvas").getContext("2d");
  ctx.font = (bold ? "600 " : "") + LABEL_FONT;
  return ctx.measureText(s).width;
}

const pct = (x) => (x * 100).toFixed(3) + "%";

/**
 * placeLabels puts each label in the first lane where it does not
 * overlap another, flipping it to the left of its cursor near the end;
 * a label too wide for either side (a narrow screen) is moved along to
 * fit the tape, and loses its pointer to the cursor.
 */
function placeLabels(items, width) {
  const lanes = [];
  for (const it of items.sort((a, b) => a.x - b.x)) {
    it.right = it.x + it.w > width && it.x - it.w >= 0;
    it.shifted = it.x + it.w > width && !it.right;
    const from = it.right ? it.x - it.w : it.shifted ? Math.max(0, width - it.w) : it.x;
    it.left = from;
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
      <div class="plabel" title="partition ${n(p.p)}">p${n(p.p)}</div>
      <div class="tape-wrap">
        <div class="tape" data-topic="${esc(t.name)}" data-partition="${p.p}" data-start="${p.start}" data-head="${head}"
          data-tip="${esc(`${t.name} · partition ${n(p.p)}\nlog start ${n(p.start)}\nhead ${n(head)}\n${count(head - p.start, "record")} kept`)}">`;
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
    const labels = [], bars = [];
    let cursors = "";
    for (const g of groups) {
      const c = g.committed[p.p] ?? -1;
      if (c < 0) continue;
      const st = partLag(g, p);
      const x = Math.min(1, c / scale);
      const dim = opts.focus && !opts.focus.has(g.consumer) ? " dim" : "";
      const tip = `${g.consumer}\ncommitted ${n(c)}\nlag ${n(st.lag)}` + (st.missed ? `\nmissed ${n(st.missed)} (deleted before read)` : "");
      const attrs = `data-consumer="${esc(g.consumer)}" data-topic="${esc(t.name)}" data-partition="${p.p}" data-offset="${c}" data-lag="${st.lag}"`;
      if (st.lag > 0 && !dim && !opts.compact) bars.push({ g, x, lag: st.lag });
      cursors += `<div class="cursor${dim}" style="left:${pct(x)};--c:${color(g.consumer)}" ${attrs} data-tip="${esc(tip)}"></div>`;
      if (!opts.compact && !dim) {
        const text = `${g.consumer}  ${n(c)} · lag ${n(st.lag)}` + (st.missed ? ` · missed ${n(st.missed)}` : "");
        labels.push({ g, c, st, x: x * opts.width, w: textWidth(text, true) + 12, attrs, tip });
      }
    }
    // The most behind at the bottom, each in its own lane; past
    // BAR_LANES, the cursors and labels still say it.
    bars.sort((a, b) => b.lag - a.lag || a.g.consumer.localeCompare(b.g.consumer));
    bars.slice(0, BAR_LANES).forEach((b, lane) => {
      html += `<div class="lagspan" style="left:${pct(b.x)};width:${pct(1 - b.x)};bottom:${lane * 4}px;--c:${color(b.g.consumer)}" data-consumer="${esc(b.g.consumer)}"` +
        ` data-tip="${esc(`${b.g.consumer}: lag ${count(b.lag, "record")}`)}"></div>`;
    });
    html += `<div class="head-mark"></div>${cursors}</div>`;
    if (labels.length) {
      const lanes = placeLabels(labels, opts.width);
      html += `<div class="labels" style="height:${lanes * LANE}px">`;
      for (const l of labels) {
        if (l.lane >= MAX_LANES) continue;
        const left = l.shifted ? l.left : l.x;
        html += `<div class="clabel${l.right ? " right" : ""}${l.shifted ? " shifted" : ""}" style="left:${pct(left / opts.width)};top:${l.lane * LANE}px;--c:${color(l.g.consumer)}" ${l.attrs} data-tip="${esc(l.tip)}">` +
          `<span class="name">${esc(l.g.consumer)}</span> <span class="n">${n(l.c)} · lag ${n(l.st.lag)}</span>` +
          (l.st.missed ? ` <span class="missed">· missed ${n(l.st.missed)}</span>` : "") + `</div>`;
      }
      html += `</div>`;
    }
    let meta = opts.compact
      ? `<b>${n(head)}</b> head · lag ≤ ${n(maxLag(p, groups))}`
      : `<b>${n(head)}</b> head<span class="size">${bytes(p.bytes)} · ${count(p.segments, "segment")}</span>`;
    if (p.fenced) {
      // Open could not open it: it serves nothing until repaired.
      meta = `<span class="pfault" data-tip="${esc(`fenced: ${p.fenced}\npassbook verify says more; passbook repair mends it`)}">fenced</span>`;
    } else if (p.unwritable) {
      meta += `<span class="pfault" data-tip="${esc(`refusing appends: ${p.unwritable}`)}">cannot write</span>`;
    }
    html += `</div><div class="pmeta">${meta}</div></div>`;
    out.push(html);
  }
  return out.join("");
}

/** maxLag is the largest lag any group has on partition p. */
export function maxLag(p, groups) {
  let m = 0;
  for (const g of groups) {
    m = Math.max(m, partLag(g, p).lag);
  }
  return m;
}
