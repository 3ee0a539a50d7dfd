// The dashboard's model: what /api/events says, kept up to date, plus the
// per-second history the charts draw. Views read it; nothing else writes it.

const nf = new Intl.NumberFormat("en-US");

/** n formats a whole number with thousands separators: 1234567 → "1,234,567". */
export const n = (x) => nf.format(Math.round(x));

/**
 * count writes k things for people: count(1, "record") → "1 record",
 * count(1234, "record") → "1,234 records".
 */
export const count = (k, one, many = one + "s") => n(k) + " " + (k === 1 ? one : many);

/** bytes formats a size for people. */
export function bytes(b) {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (b >= 1000 && i < units.length - 1) { b /= 1000; i++; }
  return (i === 0 ? String(b) : b.toFixed(b < 10 ? 1 : 0)) + " " + units[i];
}

/** rate formats records per second. */
export function rate(r) {
  if (!isFinite(r) || r <= 0) return "0";
  return r < 10 ? r.toFixed(1) : n(r);
}

/** ago formats how long ago a Unix ms time was. */
export function ago(ms) {
  if (!ms) return "never";
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 2) return "just now";
  if (s < 90) return Math.round(s) + " s ago";
  if (s < 5400) return Math.round(s / 60) + " min ago";
  if (s < 129600) return Math.round(s / 3600) + " h ago";
  return Math.round(s / 86400) + " days ago";
}

/** duration formats milliseconds as the largest whole unit. */
export function duration(ms) {
  const units = [[86400000, "day"], [3600000, "hour"], [60000, "minute"], [1000, "second"]];
  for (const [u, name] of units) {
    if (ms >= u && ms % u === 0) { const k = ms / u; return k + " " + name + (k === 1 ? "" : "s"); }
  }
  return n(ms) + " ms";
}

/**
 * colorIndex gives every consumer one of eight colours: the one its name
 * hashes to, unless a consumer before it (by name) took that one, then the
 * next free one. So up to eight consumers never share a colour, and a
 * consumer keeps its colour while the set of consumers stays the same.
 */
let palette = { version: -1, map: new Map() };
export function colorIndex(name) {
  if (palette.version !== state.version) {
    const names = [...new Set([...state.groups.values()].map((g) => g.consumer))].sort();
    const map = new Map(), used = new Set();
    for (const x of names) {
      let i = hash(x) % 8;
      for (let k = 0; k < 8 && used.has(i); k++) i = (i + 1) % 8;
      used.add(i);
      if (used.size === 8) used.clear();
      map.set(x, i);
    }
    palette = { version: state.version, map };
  }
  return palette.map.get(name) ?? hash(name) % 8;
}

function hash(name) {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) { h ^= name.charCodeAt(i); h = Math.imul(h, 16777619); }
  return h >>> 0;
}
export const color = (name) => `var(--c${colorIndex(name)})`;

/** esc escapes text for HTML. */
export function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

export const gkey = (consumer, topic) => consumer + "\u0000" + topic;

/** The picture: topics by name, consumer groups (a consumer on a topic) by gkey. */
export const state = {
  topics: new Map(),   // name → {name, config, partitions: [{p, start, head, bytes, segments}]}
  groups: new Map(),   // gkey → {consumer, topic, committed: [..], lag: [..], missed: [..], updated}
  heads: new Map(),    // topic → {t: [], v: []}: records ever appended, a point a second
  lags: new Map(),     // gkey → {t: [], v: []}
  live: false,
  synced: false,       // the first snapshot has arrived: until then nothing is known, not even what is missing
  failed: false,       // the last connection attempt failed
  lastEvent: 0,        // Date.now() of the last event applied
  version: 0,          // bumps on every change
};

/** groupsOf lists the groups reading topic. */
export function groupsOf(topic) {
  const out = [];
  for (const g of state.groups.values()) if (g.topic === topic) out.push(g);
  return out.sort((a, b) => a.consumer.localeCompare(b.consumer));
}

/** consumers lists every consumer with its groups, most lag first. */
export function consumers() {
  const by = new Map();
  for (const g of state.groups.values()) {
    const t = state.topics.get(g.topic);
    if (!t) continue;
    let c = by.get(g.consumer);
    if (!c) { c = { name: g.consumer, lag: 0, groups: [], updated: 0 }; by.set(g.consumer, c); }
    c.groups.push(g);
    c.lag += groupLag(g, t).total;
    c.updated = Math.max(c.updated, g.updated);
  }
  return [...by.values()].sort((a, b) => b.lag - a.lag || a.name.localeCompare(b.name));
}

/**
 * partLag is a consumer group's standing on one partition, as the server
 * counts it (consumer.LagOf, the same count as `passbook lag`): committed
 * (−1 when nothing is committed), lag and missed.
 */
export function partLag(g, part) {
  return { committed: g.committed[part.p] ?? -1, lag: g.lag?.[part.p] ?? 0, missed: g.missed?.[part.p] ?? 0 };
}

export function groupLag(g, t) {
  let total = 0, behind = 0;
  for (const p of t.partitions) {
    const l = partLag(g, p).lag;
    total += l;
    if (l > 0) behind++;
  }
  return { total, behind };
}

export function topicTotals(t) {
  let records = 0, head = 0, size = 0;
  for (const p of t.partitions) { records += p.head - p.start; head += p.head; size += p.bytes; }
  return { records, head, bytes: size };
}

function push(series, t, v, keepMs) {
  if (series.t.length && t <= series.t[series.t.length - 1]) return;
  series.t.push(t); series.v.push(v);
  let cut = 0;
  while (cut < series.t.length && series.t[cut] < t - keepMs) cut++;
  if (cut) { series.t.splice(0, cut); series.v.splice(0, cut); }
}

const KEEP = 15 * 60 * 1000;

function apply(u, snapshot) {
  if (snapshot) { state.topics.clear(); state.groups.clear(); }
  for (const t of u.topics || []) {
    const cur = state.topics.get(t.name);
    if (!cur || t.config) {
      state.topics.set(t.name, t);
    } else {
      for (const p of t.partitions) cur.partitions[p.p] = p;
    }
  }
  for (const name of u.removed_topics || []) { state.topics.delete(name); state.heads.delete(name); }
  for (const g of u.groups || []) state.groups.set(gkey(g.consumer, g.topic), g);
  for (const r of u.removed_groups || []) { const k = gkey(r.consumer, r.topic); state.groups.delete(k); state.lags.delete(k); }
  if (u.sample) {
    for (const [topic, v] of Object.entries(u.sample.heads)) {
      if (!state.heads.has(topic)) state.heads.set(topic, { t: [], v: [] });
      push(state.heads.get(topic), u.sample.t, v, KEEP);
    }
    for (const l of u.sample.lags) {
      const k = gkey(l.consumer, l.topic);
      if (!state.lags.has(k)) state.lags.set(k, { t: [], v: [] });
      push(state.lags.get(k), u.sample.t, l.lag, KEEP);
    }
  }
  state.lastEvent = Date.now();
  state.version++;
}

/**
 * connect follows /api/events, calling onChange after every event. The
 * browser retries a dropped stream by itself; if it gives up (a closed
 * EventSource), a new one is opened a few seconds later.
 */
export function connect(onChange, onStatus) {
  let es;
  const open = () => {
    es = new EventSource("api/events");
    es.addEventListener("open", () => { state.live = true; state.failed = false; onStatus(); });
    es.addEventListener("error", () => {
      state.live = false; state.failed = true; onStatus();
      if (es.readyState === EventSource.CLOSED) setTimeout(open, 3000);
    });
    es.addEventListener("snapshot", (e) => {
      state.live = true; state.failed = false; state.synced = true;
      apply(JSON.parse(e.data), true); onStatus(); onChange();
    });
    es.addEventListener("update", (e) => { apply(JSON.parse(e.data), false); onChange(); });
  };
  open();
}

/** merge puts the server's older history in front of what samples brought. */
function merge(local, remote) {
  const first = local.t.length ? local.t[0] : Infinity;
  const t = [], v = [];
  remote.t.forEach((x, i) => { if (x < first) { t.push(x); v.push(remote.v[i]); } });
  local.t.unshift(...t); local.v.unshift(...v);
}

const loaded = new Set();

/** loadTopicHistory fetches a topic's history once. */
export async function loadTopicHistory(topic) {
  if (loaded.has("t:" + topic)) return false;
  loaded.add("t:" + topic);
  const r = await fetch("api/history?topic=" + encodeURIComponent(topic));
  if (!r.ok) return false;
  const h = await r.json();
  if (!state.heads.has(topic)) state.heads.set(topic, { t: [], v: [] });
  merge(state.heads.get(topic), h.records);
  return true;
}

/** loadConsumerHistory fetches a consumer's lag history once. */
export async function loadConsumerHistory(consumer) {
  if (loaded.has("c:" + consumer)) return false;
  loaded.add("c:" + consumer);
  const r = await fetch("api/history?consumer=" + encodeURIComponent(consumer));
  if (!r.ok) return false;
  const h = await r.json();
  for (const [topic, s] of Object.entries(h.lag)) {
    const k = gkey(consumer, topic);
    if (!state.lags.has(k)) state.lags.set(k, { t: [], v: [] });
    merge(state.lags.get(k), s);
  }
  return true;
}

/** rates turns a records series into records per second between points. */
export function rates(s) {
  const t = [], v = [];
  for (let i = 1; i < s.t.length; i++) {
    const dt = (s.t[i] - s.t[i - 1]) / 1000;
    if (dt <= 0) continue;
    t.push(s.t[i] / 1000);
    v.push(Math.max(0, (s.v[i] - s.v[i - 1]) / dt));
  }
  return [t, v];
}

/** rateNow is the rate over the last few seconds. */
export function rateNow(s, window = 5000) {
  if (!s || s.t.length < 2) return 0;
  const last = s.t.length - 1;
  let i = last;
  while (i > 0 && s.t[last] - s.t[i - 1] <= window) i--;
  if (i === last) i = last - 1;
  const dt = (s.t[last] - s.t[i]) / 1000;
  return dt > 0 ? (s.v[last] - s.v[i]) / dt : 0;
}
