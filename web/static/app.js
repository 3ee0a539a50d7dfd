// passbook dashboard: every partition a tape, every consumer a cursor on it.
// Routes: #/ (all topics), #/topic/NAME, #/consumer/NAME.

import {
  state, connect, n, count, bytes, esc, color, colorIndex, ago, duration, groupsOf, consumers, groupLag, partLag,
  topicTotals, loadTopicHistory, loadConsumerHistory, rates, rateNow, gkey,
} from "./model.js";
import { rows, maxLag } from "./tape.js";
import { rateChart, lagChart, setLagData } from "./charts.js";
import { whoami, needsSignIn, showSignIn, showUser } from "./login.js";

const PAGE = 12;            // partitions per page
const PAGE_ALONE = 40;      // on a topic's own page
const COMPACT_GROUPS = 4;   // more consumers on a topic than this: no labels on the tapes
const CHIPS = 10;           // consumer chips shown per topic
const SIDE = 60;            // consumers listed on the side

const NARROW = matchMedia("(max-width: 640px)"); // app.css: the phone layout

const main = document.getElementById("main");
const ui = {
  route: null,
  filter: "",
  topic: new Map(),                 // topic → {page, byLag}
  collapsed: new Set(JSON.parse(localStorage.getItem("passbook.collapsed") || "[]")),
  charts: new Map(),                // key → uPlot
  cpage: new Map(),                 // consumer page: topic → page
};

function topicUI(name) {
  if (!ui.topic.has(name)) ui.topic.set(name, { page: 0, byLag: false });
  return ui.topic.get(name);
}

// ---- routing and rendering -------------------------------------------------

function parseRoute() {
  const h = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
  if (h.startsWith("consumer/")) return { view: "consumer", name: h.slice(9) };
  if (h.startsWith("topic/")) return { view: "topic", name: h.slice(6) };
  return { view: "overview" };
}

let pending = false;
function schedule() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; render(); });
}

function render() {
  const r = parseRoute();
  // Until the first snapshot nothing is known, not even what is missing:
  // a deep link waits for it rather than saying "no consumer named …".
  const key = state.synced ? r.view + ":" + (r.name || "") : "loading";
  if (ui.route !== key) {
    ui.route = key;
    for (const c of ui.charts.values()) c.destroy();
    ui.charts.clear();
    main.innerHTML = "";
    window.scrollTo(0, 0);
  }
  renderTotals();
  if (!state.synced) renderLoading(r);
  else if (r.view === "consumer") renderConsumer(r.name);
  else renderOverview(r.view === "topic" ? r.name : null);
  document.body.dataset.version = state.version;
}

function renderLoading(r) {
  const what = r.view === "consumer" ? `consumer “${esc(r.name)}”` : r.view === "topic" ? `topic “${esc(r.name)}”` : "topics and consumers";
  const why = state.failed ? "The server does not answer yet; trying again…" : "Connecting to the server…";
  main.innerHTML = (r.view === "overview" ? "" : `<a class="back" href="#/">← All topics</a>`) +
    `<div class="panel empty loading" role="status" aria-busy="true"><span class="spinner" aria-hidden="true"></span>` +
    `<div>Loading ${what}</div><div class="muted">${why}</div></div>`;
}

function renderTotals() {
  const el = document.getElementById("totals");
  if (!state.synced) { el.innerHTML = ""; return; }
  let parts = 0, records = 0;
  for (const t of state.topics.values()) { parts += t.partitions.length; records += topicTotals(t).records; }
  const cs = new Set([...state.groups.values()].map((g) => g.consumer)).size;
  const total = (k, one) => { const [num, ...word] = count(k, one).split(" "); return `<span><b>${num}</b> ${word.join(" ")}</span>`; };
  el.innerHTML = total(state.topics.size, "topic") + total(parts, "partition") + total(records, "record") + total(cs, "consumer");
}

function renderStatus() {
  const el = document.getElementById("status");
  el.dataset.state = state.live ? "live" : "connecting";
  el.lastElementChild.textContent = state.live ? "live" : state.synced ? "reconnecting…" : "connecting…";
}

// ---- the overview: topics, and consumers on the side ------------------------

function matches(s) { return !ui.filter || s.toLowerCase().includes(ui.filter); }

function renderOverview(only) {
  if (!main.firstChild) {
    main.innerHTML = `<div class="layout"><div id="topics"></div>
      <aside class="panel side"><h3>Consumers</h3><ul class="clist" id="clist"></ul><div class="more" id="cmore"></div></aside></div>`;
  }
  const list = document.getElementById("topics");
  let names = [...state.topics.keys()].sort();
  if (only) names = names.filter((x) => x === only);
  const focus = ui.filter ? new Set(consumers().map((c) => c.name).filter(matches)) : null;
  names = names.filter((name) => matches(name) || groupsOf(name).some((g) => focus?.has(g.consumer)));

  if (!state.topics.size) {
    list.innerHTML = `<div class="panel empty">No topics yet. Create one with
      <code>passbook topic create orders</code> or <code>curl -X POST localhost:8080/api/topics -H 'Content-Type: application/json' -d '{"name":"orders"}'</code></div>`;
  } else if (only != null && !state.topics.has(only)) {
    list.innerHTML = `<div class="panel empty">No topic named “${esc(only)}”. <a href="#/">All topics</a></div>`;
  } else if (!names.length) {
    list.innerHTML = `<div class="panel empty">Nothing matches “${esc(ui.filter)}”.</div>`;
  } else {
    list.querySelector(".empty")?.remove();
  }
  const seen = new Set(names);
  for (const el of [...list.querySelectorAll("section.topic")]) {
    if (!seen.has(el.dataset.topic)) { destroyChart("rate:" + el.dataset.topic); el.remove(); }
  }
  let prev = null;
  for (const name of names) {
    let el = list.querySelector(`section.topic[data-topic="${CSS.escape(name)}"]`);
    if (!el) el = topicCard(name, only != null);
    if (prev ? prev.nextSibling !== el : list.firstChild !== el) list.insertBefore(el, prev ? prev.nextSibling : list.firstChild);
    updateTopic(el, state.topics.get(name), focus && focus.size ? focus : null, only != null ? PAGE_ALONE : PAGE);
    prev = el;
  }
  renderSide();
}

function topicCard(name, expanded) {
  const el = document.createElement("section");
  el.className = "panel topic";
  el.dataset.topic = name;
  if (!expanded && (ui.collapsed.has(name) || (state.topics.size > 8 && !ui.collapsed.has("!" + name)))) el.classList.add("collapsed");
  el.innerHTML = `<div class="topic-head">
      <button class="chev" aria-label="Collapse or expand"><svg viewBox="0 0 16 16"><path d="M3 5.5 8 10.5 13 5.5z"/></svg></button>
      <div class="topic-title"><h2><a href="#/topic/${encodeURIComponent(name)}">${esc(name)}</a></h2><div class="topic-facts"></div></div>
      <div class="spacer"></div>
      <div class="rate"><b>0</b><span>records/s</span></div>
      <div class="chart"></div>
    </div>
    <div class="topic-body"><div class="chips"></div><div class="parts-bar"></div><div class="parts"></div></div>`;
  el.querySelector(".chev").addEventListener("click", () => {
    el.classList.toggle("collapsed");
    const c = el.classList.contains("collapsed");
    ui.collapsed.delete(name); ui.collapsed.delete("!" + name);
    if (c) ui.collapsed.add(name); else if (state.topics.size > 8) ui.collapsed.add("!" + name);
    localStorage.setItem("passbook.collapsed", JSON.stringify([...ui.collapsed]));
    schedule();
  });
  el.querySelector(".parts-bar").addEventListener("click", (e) => {
    const b = e.target.closest("button");
    if (!b) return;
    const tu = topicUI(name);
    if (b.dataset.act === "prev") tu.page--;
    if (b.dataset.act === "next") tu.page++;
    if (b.dataset.act === "lag") { tu.byLag = !tu.byLag; tu.page = 0; }
    schedule();
  });
  // On a phone the chart goes under the title, next to the rate, and
  // takes the rest of the card's width (app.css: main, .topic-head, .rate).
  const chart = NARROW.matches
    ? rateChart(el.querySelector(".chart"), Math.max(120, main.clientWidth - 20 - 2 - 24 - 32 - 78 - 10 * 2), 44)
    : rateChart(el.querySelector(".chart"), 300, 64);
  ui.charts.set("rate:" + name, chart);
  loadTopicHistory(name).then(schedule);
  return el;
}

function destroyChart(key) {
  ui.charts.get(key)?.destroy();
  ui.charts.delete(key);
}

function retention(cfg) {
  const parts = [];
  if (cfg["retention.ms"] > 0) parts.push(duration(cfg["retention.ms"]));
  if (cfg["retention.bytes"] > 0) parts.push(bytes(cfg["retention.bytes"]) + " a partition");
  const kept = parts.length ? "keeps " + parts.join(" or ") : "keeps everything";
  const policy = cfg["cleanup.policy"] || "delete";
  if (!policy.includes("compact")) return kept;
  // Compaction keeps each key's newest record; retention, if any, on top.
  return policy.includes("delete") && parts.length ? `compacted · ${kept}` : "compacted: keeps each key's newest record";
}

function updateTopic(el, t, focus, pageSize) {
  const groups = groupsOf(t.name);
  const tot = topicTotals(t);
  const heads = state.heads.get(t.name);
  const cfg = t.config || {};
  el.querySelector(".topic-facts").textContent =
    `${count(t.partitions.length, "partition")} · ${count(tot.records, "record")} · ${bytes(tot.bytes)} · ${retention(cfg)}` +
    (groups.length ? ` · ${count(groups.length, "consumer")}` : "");
  el.querySelector(".rate b").textContent = n(rateNow(heads));
  const chart = ui.charts.get("rate:" + t.name);
  if (chart && heads) {
    const [x, y] = rates(heads);
    chart.setData([x, y]);
  }
  if (el.classList.contains("collapsed")) return;

  // Consumers on this topic, most lag first.
  const ranked = groups.map((g) => ({ g, lag: groupLag(g, t).total })).sort((a, b) => b.lag - a.lag || a.g.consumer.localeCompare(b.g.consumer));
  const shown = ranked.filter(({ g }) => !focus || focus.has(g.consumer)).slice(0, CHIPS);
  el.querySelector(".chips").innerHTML = shown.map(({ g, lag }) =>
    `<a class="chip" href="#/consumer/${encodeURIComponent(g.consumer)}" style="--c:${color(g.consumer)}" data-consumer="${esc(g.consumer)}">` +
    `<i></i>${esc(g.consumer)} <span class="lag">lag ${n(lag)}</span></a>`).join("") +
    (ranked.length > shown.length ? `<span class="chip more">and ${n(ranked.length - shown.length)} more</span>` : "") +
    (groups.length ? "" : `<span class="chip more">no consumer has committed an offset here yet</span>`);

  // Partitions, a page at a time; busiest first when asked.
  const tu = topicUI(t.name);
  let parts = t.partitions;
  if (tu.byLag) parts = [...parts].sort((a, b) => maxLag(b, groups) - maxLag(a, groups) || a.p - b.p);
  const pages = Math.max(1, Math.ceil(parts.length / pageSize));
  tu.page = Math.min(Math.max(0, tu.page), pages - 1);
  const from = tu.page * pageSize;
  const page = parts.slice(from, from + pageSize);
  const bar = el.querySelector(".parts-bar");
  bar.innerHTML = parts.length > pageSize
    ? `<span>Partitions ${n(from + 1)}–${n(from + page.length)} of ${n(parts.length)}</span><span class="spacer"></span>
       <button class="toggle" data-act="lag" aria-pressed="${tu.byLag}">most lag first</button>
       <span class="pager"><button data-act="prev" ${tu.page === 0 ? "disabled" : ""} aria-label="Previous page">‹</button>
       <span>${tu.page + 1} / ${pages}</span>
       <button data-act="next" ${tu.page >= pages - 1 ? "disabled" : ""} aria-label="Next page">›</button></span>`
    : "";
  const box = el.querySelector(".parts");
  // Many partitions or many consumers: cursors without labels (their
  // tooltips and the consumer pages have the numbers).
  const compact = (groups.length > COMPACT_GROUPS || t.partitions.length > PAGE) && !focus;
  box.classList.toggle("compact", compact);
  const width = tapeWidth(box.clientWidth);
  box.innerHTML = rows(t, page, groups, { width, compact, focus });
}

/**
 * tapeWidth is the width of a tape in a .parts box of boxWidth px, as
 * app.css lays out a .prow: label, tape, facts (the facts under the
 * tape on a phone).
 */
function tapeWidth(boxWidth) {
  return Math.max(120, NARROW.matches ? boxWidth - 30 - 10 : boxWidth - 36 - 150 - 24);
}

function renderSide() {
  const all = consumers().filter((c) => matches(c.name) || c.groups.some((g) => matches(g.topic)));
  document.getElementById("clist").innerHTML = all.slice(0, SIDE).map((c) =>
    `<li><a href="#/consumer/${encodeURIComponent(c.name)}" style="--c:${color(c.name)}" data-consumer="${esc(c.name)}">` +
    `<i></i><span class="cname">${esc(c.name)}</span><span class="clag${c.lag === 0 ? " zero" : ""}">${c.lag === 0 ? "caught up" : "lag " + n(c.lag)}</span>` +
    `<span class="ctopics">${esc(c.groups.map((g) => g.topic).join(", "))} · ${ago(c.updated)}</span></a></li>`).join("") ||
    `<li class="more">No consumer has committed an offset yet.</li>`;
  document.getElementById("cmore").textContent = all.length > SIDE ? `and ${n(all.length - SIDE)} more: use the filter` : "";
}

// ---- a consumer's page ------------------------------------------------------

function renderConsumer(name) {
  const c = consumers().find((x) => x.name === name);
  if (!c) {
    main.innerHTML = `<a class="back" href="#/">← All topics</a><div class="panel empty">No consumer named “${esc(name)}” has committed an offset.</div>`;
    return;
  }
  const topics = c.groups.map((g) => g.topic).sort();
  if (!main.querySelector(".chead") || main.dataset.topics !== topics.join("\n")) {
    for (const ch of ui.charts.values()) ch.destroy();
    ui.charts.clear();
    main.dataset.topics = topics.join("\n");
    main.innerHTML = `<a class="back" href="#/">← All topics</a>
      <section class="panel chead" style="--c:${color(name)}"><h1><i></i>${esc(name)}</h1><div class="stats"></div></section>
      <section class="panel lagchart"><div class="section-title">Lag over time</div><div class="big"></div></section>
      <div id="ctopics"></div>`;
    const big = main.querySelector(".big");
    const colors = topics.map((t, i) => `--c${(colorIndex(name) + i) % 8}`);
    ui.charts.set("lag", lagChart(big, big.clientWidth || 900, 200, topics, colors));
    loadConsumerHistory(name).then(schedule);
  }
  let behind = 0, missed = 0;
  for (const g of c.groups) {
    const t = state.topics.get(g.topic);
    t.partitions.forEach((p) => { const s = partLag(g, p); if (s.lag > 0) behind++; missed += s.missed; });
  }
  const stats = [
    [n(c.lag), c.lag === 1 ? "record behind" : "records behind"],
    [n(behind), behind === 1 ? "partition behind" : "partitions behind"],
    [n(topics.length), topics.length === 1 ? "topic" : "topics"],
    [ago(c.updated), "last commit"],
  ];
  if (missed) stats.push([n(missed), missed === 1 ? "record missed to retention" : "records missed to retention"]);
  main.querySelector(".chead .stats").innerHTML = stats.map(([v, l]) => `<div class="stat"><b>${v}</b><span>${l}</span></div>`).join("");

  const chart = ui.charts.get("lag");
  const series = topics.map((t) => state.lags.get(gkey(name, t)) || { t: [], v: [] });
  const xs = [...new Set(series.flatMap((x) => x.t))].sort((a, b) => a - b);
  setLagData(chart, [xs.map((x) => x / 1000), ...series.map((sr) => {
    const m = new Map(sr.t.map((t, i) => [t, sr.v[i]]));
    return xs.map((x) => m.get(x) ?? null);
  })]);

  const box = document.getElementById("ctopics");
  box.innerHTML = c.groups.sort((a, b) => a.topic.localeCompare(b.topic)).map((g) => {
    const t = state.topics.get(g.topic);
    const page = Math.min(ui.cpage.get(g.topic) || 0, Math.ceil(t.partitions.length / PAGE) - 1);
    const parts = t.partitions.slice(page * PAGE, page * PAGE + PAGE);
    const others = groupsOf(g.topic);
    const lag = groupLag(g, t);
    return `<section class="panel topic" data-topic="${esc(t.name)}">
      <div class="topic-head"><div class="topic-title"><h2><a href="#/topic/${encodeURIComponent(t.name)}">${esc(t.name)}</a></h2>
      <div class="topic-facts">${standing(lag, t.partitions.length)} · ${retention(t.config || {})}</div></div></div>
      <div class="topic-body">
        ${t.partitions.length > PAGE ? `<div class="parts-bar"><span>Partitions ${n(page * PAGE + 1)}–${n(page * PAGE + parts.length)} of ${n(t.partitions.length)}</span><span class="spacer"></span>
          <span class="pager"><button data-topic="${esc(t.name)}" data-page="${page - 1}" ${page === 0 ? "disabled" : ""}>‹</button>
          <button data-topic="${esc(t.name)}" data-page="${page + 1}" ${(page + 1) * PAGE >= t.partitions.length ? "disabled" : ""}>›</button></span></div>` : ""}
        <div class="parts">${rows(t, parts, others, { width: tapeWidth((box.clientWidth || 1000) - 2 - 36), compact: false, focus: new Set([name]) })}</div>
        <div class="table-wrap"><table class="parts"><tr><th>partition</th><th>committed</th><th>log start</th><th>head</th><th>lag</th><th>missed</th></tr>
        ${parts.map((p) => {
          const st = partLag(g, p);
          return `<tr class="${st.lag > 0 ? "behind" : ""}"><td>p${n(p.p)}</td><td>${st.committed < 0 ? "–" : n(st.committed)}</td><td>${n(p.start)}</td>` +
            `<td>${n(p.head)}</td><td class="lag">${n(st.lag)}</td><td>${n(st.missed)}</td></tr>`;
        }).join("")}</table></div>
      </div></section>`;
  }).join("");
}

/** standing says how far behind a consumer is on a topic of parts partitions. */
function standing(lag, parts) {
  if (lag.total === 0) return parts === 1 ? "caught up" : `caught up on all ${n(parts)} partitions`;
  const behind = count(lag.total, "record") + " behind";
  return parts === 1 ? behind : `${behind} on ${n(lag.behind)} of ${count(parts, "partition")}`;
}

main.addEventListener("click", (e) => {
  const b = e.target.closest("button[data-page]");
  if (b) { ui.cpage.set(b.dataset.topic, Number(b.dataset.page)); schedule(); }
});

// ---- tooltips, filter, theme -------------------------------------------------

const tip = document.getElementById("tip");
document.addEventListener("mousemove", (e) => {
  const el = e.target.closest?.("[data-tip]");
  if (!el) { tip.hidden = true; return; }
  tip.textContent = el.dataset.tip;
  tip.hidden = false;
  tip.style.left = Math.min(e.clientX + 14, innerWidth - tip.offsetWidth - 8) + "px";
  tip.style.top = e.clientY + 16 + "px";
});

const filter = document.getElementById("filter");
filter.value = sessionStorage.getItem("passbook.filter") || "";
ui.filter = filter.value.trim().toLowerCase();
filter.addEventListener("input", () => {
  ui.filter = filter.value.trim().toLowerCase();
  sessionStorage.setItem("passbook.filter", filter.value);
  for (const tu of ui.topic.values()) tu.page = 0;
  schedule();
});

document.getElementById("theme").addEventListener("click", () => {
  const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  localStorage.setItem("passbook.theme", next);
  ui.route = null; // charts take their colours when made
  schedule();
});

addEventListener("hashchange", schedule);
let resized;
addEventListener("resize", () => { clearTimeout(resized); resized = setTimeout(() => { ui.route = null; schedule(); }, 150); });
setInterval(schedule, 5000); // "… s ago" stays true when nothing happens

// A server that requires credentials answers 401 until we sign in: the
// sign-in form then takes the page's place. A stream that fails later
// (the session expired, the user was deleted) asks again who we are.
let checking = 0;
async function checkSignedIn() {
  if (Date.now() - checking < 3000) return;
  checking = Date.now();
  const who = await whoami();
  if (needsSignIn(who)) showSignIn("Your session has ended; sign in again.");
}

const who = await whoami();
showUser(who);
if (needsSignIn(who)) {
  showSignIn();
} else {
  connect(schedule, () => { renderStatus(); if (!state.synced) schedule(); if (state.failed) checkSignedIn(); });
  schedule();
}
