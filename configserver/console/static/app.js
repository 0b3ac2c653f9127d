// The Tair console: polls the configserver every second and renders the
// cluster; operations go through POST /v1/admin after a confirmation.
'use strict';

const POLL_MS = 1000;
const $ = (id) => document.getElementById(id);

const state = {
  status: null, nodes: [], stats: {}, mig: null, areas: {}, proxies: [], hotkeys: [],
  // events: the last hour's, oldest first, fetched incrementally
  // (?since= the newest one's time) and kept across a change of leader.
  events: [], eventKeys: new Set(), eventsSince: 0,
  table: null, tableVersion: 0,
  colors: new Map(), focus: '', gridKey: '',
  // Speed: samples of completed moves and of each running move's keys.
  samples: [], moveKeys: new Map(), keysPerSec: 0,
  // credential: the admin credential, asked for when an operation gets
  // 401 and kept for the page's life (in memory only, never stored).
  credential: '',
};

// ---- helpers ----

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

function fmtNum(n) {
  if (n === undefined || n === null) return '';
  return Math.round(n).toLocaleString('en-US');
}

function fmtBytes(n) {
  if (!n) return '0 B';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(n < 10 ? 2 : 1)) + ' ' + u[i];
}

// parseSize reads "1234", "64k", "64KiB", "10MB", "1.5G" (binary units).
function parseSize(s) {
  s = String(s || '').trim();
  if (s === '') return 0;
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?$/i.exec(s);
  if (!m) throw new Error('not a size: ' + s);
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2].toLowerCase()];
  return Math.round(parseFloat(m[1]) * mult);
}

function ago(ms) {
  if (!ms) return 'never';
  const s = (Date.now() - ms) / 1000;
  if (s < 1) return 'now';
  if (s < 90) return Math.round(s) + ' s ago';
  if (s < 5400) return Math.round(s / 60) + ' min ago';
  return Math.round(s / 3600) + ' h ago';
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString('en-GB', { hour12: false });
}

const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948',
  '#b07aa1', '#ff9da7', '#9c755f', '#8cd17d', '#499894', '#d37295'];

// color gives each node a stable colour, in order of first sight (sorted).
function color(addr) {
  if (!state.colors.has(addr)) {
    const i = state.colors.size;
    state.colors.set(addr, i < PALETTE.length ? PALETTE[i] : `hsl(${(i * 137.5) % 360} 55% 55%)`);
  }
  return state.colors.get(addr);
}

// setRows updates a tbody in place: one row per key, a cell's HTML set
// only when it changed, so a button is not replaced under the pointer.
function setRows(tbody, items, key, cells) {
  const old = new Map();
  for (const tr of tbody.rows) old.set(tr.dataset.key, tr);
  let prev = null;
  for (const it of items) {
    const k = String(key(it));
    let tr = old.get(k);
    if (tr) {
      old.delete(k);
    } else {
      tr = document.createElement('tr');
      tr.dataset.key = k;
    }
    const cs = cells(it);
    while (tr.cells.length < cs.length) tr.insertCell();
    cs.forEach((c, i) => {
      const html = typeof c === 'object' ? c.html : c;
      const cell = tr.cells[i];
      if (cell._html !== html) { cell.innerHTML = html; cell._html = html; }
      const cls = typeof c === 'object' ? (c.cls || '') : '';
      if (cell.className !== cls) cell.className = cls;
    });
    const want = prev ? prev.nextSibling : tbody.firstChild;
    if (want !== tr) tbody.insertBefore(tr, want);
    prev = tr;
  }
  for (const tr of old.values()) tr.remove();
}

const num = (html) => ({ html: String(html), cls: 'num' });

// ---- data ----

async function getJSON(path) {
  const r = await fetch(path, { cache: 'no-store' });
  if (r.status === 304) return null;
  if (!r.ok) {
    let msg = (await r.text()).trim();
    try { const j = JSON.parse(msg); if (j.leader !== undefined) msg = 'no leader reachable' + (j.leader ? ' (leader ' + j.leader + ')' : ''); } catch (e) { /* text */ }
    throw new Error(`${path}: ${r.status} ${msg}`);
  }
  return r.json();
}

async function refresh() {
  state.polling = true;
  try {
    const [status, nodes, stats, mig, areas, proxies, events, table, hotkeys] = await Promise.all([
      getJSON('/status'), getJSON('/v1/nodes'), getJSON('/v1/stats'), getJSON('/v1/migrations'),
      getJSON('/v1/areas'), getJSON('/v1/proxies'), getJSON('/v1/events' + (state.eventsSince ? '?since=' + state.eventsSince : '')),
      getJSON('/v1/table?after=' + state.tableVersion), getJSON('/v1/hotkeys')]);
    Object.assign(state, { status, nodes: nodes || [], stats: stats || {}, mig, areas: areas || {} });
    mergeEvents(events || []);
    state.proxies = (proxies && proxies.proxies) || [];
    state.hotkeys = (hotkeys && hotkeys.keys) || [];
    if (table) { state.table = table; state.tableVersion = table.version; }
    render();
    showError('');
  } catch (e) {
    showError(e.message);
  } finally {
    state.polling = false;
    state.timer = setTimeout(refresh, POLL_MS);
  }
}

function mergeEvents(events) {
  let added = false;
  for (const e of events) {
    const k = [e.at_ms, e.kind, e.node || '', e.table_version || 0, e.message].join('|');
    if (state.eventKeys.has(k)) continue;
    state.eventKeys.add(k);
    state.events.push(e);
    state.eventsSince = Math.max(state.eventsSince, e.at_ms);
    added = true;
  }
  if (!added) return;
  state.events.sort((a, b) => a.at_ms - b.at_ms);
  const hourAgo = Date.now() - 3600 * 1000;
  while (state.events.length && state.events[0].at_ms < hourAgo) {
    const e = state.events.shift();
    state.eventKeys.delete([e.at_ms, e.kind, e.node || '', e.table_version || 0, e.message].join('|'));
  }
}

function showError(msg) {
  const el = $('error');
  el.hidden = !msg;
  el.textContent = msg ? 'Refresh failed: ' + msg : '';
}

// ---- rendering ----

function render() {
  renderHeader();
  renderSummary();
  renderNodes();
  renderBuckets();
  renderMigrations();
  renderEvents();
  renderAreas();
  renderProxies();
  renderHotKeys();
  document.body.dataset.ready = 'true';
}

function renderHeader() {
  const st = state.status || {};
  $('server').textContent = 'configserver ' + (st.addr || '?');
  $('role').textContent = st.role === 'leader' ? 'leader' : `standby, leader ${st.leader || 'unknown'}`;
  $('role').className = 'pill ' + (st.role === 'leader' ? 'ok' : 'warn');
  $('version').textContent = 'table v' + (state.table ? state.table.version : '–');
  $('updated').textContent = 'updated ' + clock(Date.now());
}

function nodeStats(addr) {
  let keys = 0, bytes = 0;
  for (const a of Object.values(state.stats[addr] || {})) { keys += a.keys || 0; bytes += a.bytes || 0; }
  return { keys, bytes };
}

function renderSummary() {
  const alive = state.nodes.filter((n) => n.alive).length;
  const t = state.table;
  const m = state.mig || {};
  const load = state.nodes.reduce((s, n) => s + (n.alive ? n.load : 0), 0);
  const cards = [
    ['dataservers', `${alive} / ${state.nodes.length}`, alive < state.nodes.length ? 'warn' : 'ok'],
    ['buckets', t ? `${t.buckets} × ${t.copies}` : '–', ''],
    ['load', fmtNum(load) + ' req/s', ''],
    ['moves', `${(m.running || []).length} running, ${(m.pending || []).length} planned`, m.paused ? 'warn' : ''],
    ['under-replicated', fmtNum(m.under_replicated || 0), m.unavailable ? 'bad' : (m.under_replicated ? 'warn' : 'ok')],
    ['proxies', String(state.proxies.length), ''],
  ];
  $('summary').innerHTML = cards.map(([k, v, cls]) =>
    `<div class="card ${cls}" data-card="${esc(k)}"><div class="card-v">${esc(v)}</div><div class="card-k">${esc(k)}</div></div>`).join('');
}

function healthBadge(n) {
  // A node not alive is "down", or "unhealthy" when it heartbeats but
  // reports it does not serve.
  const h = n.alive ? (n.health || 'ok') : (n.health === 'unhealthy' ? 'unhealthy' : 'down');
  const cls = h === 'ok' ? 'ok' : (h === 'down' || h === 'unhealthy' ? 'bad' : 'warn');
  let s = `<span class="badge ${cls}">${esc(h)}</span>`;
  if (n.draining) s += ' <span class="badge warn">draining</span>';
  return s;
}

function renderNodes() {
  const known = [...state.nodes.map((n) => n.addr)].sort();
  known.forEach(color);
  setRows($('nodes').tBodies[0], state.nodes, (n) => n.addr, (n) => {
    const st = nodeStats(n.addr);
    const a = esc(n.addr);
    let actions = n.draining
      ? `<button data-op="node-add" data-node="${a}" title="stop draining: the node takes copies again">Undrain</button>`
      : `<button data-op="node-drain" data-node="${a}" title="move every copy off this node">Drain</button>`;
    if (n.draining && n.masters + n.slaves === 0) {
      actions += ` <button data-op="node-remove" data-node="${a}" class="danger">Remove</button>`;
    }
    return [
      `<span class="swatch" style="background:${color(n.addr)}"></span><span class="addr" data-addr="${a}">${a}</span>`,
      esc([n.zone, n.rack].filter(Boolean).join(' / ') || '–'),
      healthBadge(n),
      num(fmtNum(n.masters)), num(fmtNum(n.slaves)),
      num(n.alive ? fmtNum(n.load) : '–'),
      num(fmtNum(st.keys)), num(fmtBytes(st.bytes)),
      memoryCell(n.resources), diskCell(n.resources),
      num(ago(n.last_heartbeat_ms)), num('v' + n.table_version),
      { html: actions, cls: 'actions' },
    ];
  });
}

// memoryCell shows a node's memory: the engine's bytes (against its
// limit, if any) and the process's RSS.
function memoryCell(r) {
  if (!r) return { html: '–', cls: 'num mem' };
  let html = esc(fmtBytes(r.engine_bytes));
  let title = `engine ${fmtBytes(r.engine_bytes)}`;
  let cls = 'num mem';
  if (r.memory_limit) {
    const pct = 100 * r.engine_bytes / r.memory_limit;
    html += ` <span class="muted">/ ${esc(fmtBytes(r.memory_limit))}</span>`;
    title += ` of ${fmtBytes(r.memory_limit)} (${pct.toFixed(0)}%)`;
    if (pct >= 90) cls += ' bad-text'; else if (pct >= 75) cls += ' warn-text';
  }
  html += `<div class="small muted">rss ${esc(fmtBytes(r.rss_bytes))}</div>`;
  return { html: `<span title="${esc(title + ', process rss ' + fmtBytes(r.rss_bytes))}">${html}</span>`, cls };
}

// diskCell shows a persistent engine's data directory size and the free
// space of its filesystem.
function diskCell(r) {
  if (!r || !r.data_dir) return { html: '–', cls: 'num disk' };
  const freePct = r.disk_total_bytes ? 100 * r.disk_free_bytes / r.disk_total_bytes : 100;
  const cls = 'num disk' + (freePct < 5 ? ' bad-text' : (freePct < 15 ? ' warn-text' : ''));
  return {
    html: `<span title="${esc(r.data_dir)}: ${esc(fmtBytes(r.disk_used_bytes))} used; filesystem ${esc(fmtBytes(r.disk_free_bytes))} free of ${esc(fmtBytes(r.disk_total_bytes))}">` +
      `${esc(fmtBytes(r.disk_used_bytes))}<div class="small muted">${esc(fmtBytes(r.disk_free_bytes))} free</div></span>`,
    cls,
  };
}

function renderBuckets() {
  const t = state.table;
  const grid = $('buckets');
  if (!t) { grid.textContent = 'no table yet'; return; }
  const key = t.version + '|' + state.focus + '|' + state.colors.size;
  if (key === state.gridKey) return;
  state.gridKey = key;
  $('bucket-count').textContent = `(${t.buckets} buckets, ${t.copies} copies each)`;
  const moving = new Map();
  for (const mv of t.migrating || []) moving.set(mv.bucket, mv);
  const dest = t.destination || [];
  if (grid.children.length !== t.serving.length) {
    grid.textContent = '';
    const frag = document.createDocumentFragment();
    for (let b = 0; b < t.serving.length; b++) {
      const d = document.createElement('div');
      d.className = 'bucket';
      d.dataset.bucket = b;
      frag.appendChild(d);
    }
    grid.appendChild(frag);
  }
  const counts = new Map();
  t.serving.forEach((row, b) => {
    const d = grid.children[b];
    const master = row[0] || '';
    const slaves = row.slice(1).filter(Boolean);
    if (master) counts.set(master, (counts.get(master) || 0) + 1);
    const mv = moving.get(b);
    const planned = !mv && dest[b] && dest[b].join(',') !== row.join(',');
    let cls = 'bucket';
    if (!master) cls += ' nomaster';
    if (mv) cls += ' moving';
    else if (planned) cls += ' planned';
    let bg = master ? color(master) : '';
    let outline = '';
    if (state.focus) {
      if (master === state.focus) { /* filled */ } else if (slaves.includes(state.focus)) {
        bg = ''; outline = color(state.focus); cls += ' slave-of-focus';
      } else { bg = ''; cls += ' faded'; }
    }
    d.className = cls;
    d.style.background = bg;
    d.style.outlineColor = outline;
    d.dataset.master = master;
    let title = `bucket ${b}\nmaster: ${master || 'none'}\nslaves: ${slaves.join(', ') || 'none'}`;
    if (mv) title += `\nmoving: ${mv.from} → ${mv.to}`;
    else if (planned) title += `\nplanned: ${dest[b].filter(Boolean).join(', ')}`;
    d.title = title;
  });
  const legend = [...state.colors.keys()].filter((a) => counts.has(a) || state.nodes.some((n) => n.addr === a));
  $('legend').innerHTML = legend.map((a) =>
    `<button class="legend-item${state.focus === a ? ' focused' : ''}" data-focus="${esc(a)}"><span class="swatch" style="background:${color(a)}"></span>${esc(a)} <span class="muted">${counts.get(a) || 0}</span></button>`).join('');
}

function renderMigrations() {
  const m = state.mig;
  if (!m) return;
  const now = Date.now();
  $('paused').hidden = !m.paused;
  const total = m.total || 0;
  $('progress-bar').style.width = total ? (100 * m.completed / total).toFixed(1) + '%' : '0%';
  const running = m.running || [];
  const pending = m.pending || [];
  $('mig-summary').textContent = total
    ? `${m.completed} of ${total} moves done in the current plan: ${running.length} running, ${pending.length} waiting${m.paused ? ' (paused)' : ''}`
    : 'No migration planned: the table is at its destination.';

  // Speed over the last ~10 s: moves completed, and keys sent by the
  // running moves (deltas of each move's keys_sent).
  state.samples.push({ t: now, done: m.completed });
  while (state.samples.length > 2 && now - state.samples[0].t > 10000) state.samples.shift();
  const first = state.samples[0];
  const dt = (now - first.t) / 1000;
  const movesPerSec = dt > 0 ? Math.max(0, m.completed - first.done) / dt : 0;
  const rates = new Map();
  const seen = new Map();
  let keysDelta = 0;
  for (const p of running) {
    const k = p.bucket + '>' + p.to;
    const prev = state.moveKeys.get(k);
    if (prev && now > prev.t) {
      const d = Math.max(0, p.keys_sent - prev.keys);
      rates.set(k, d / ((now - prev.t) / 1000));
      keysDelta += d;
    }
    seen.set(k, { t: now, keys: p.keys_sent });
  }
  const lastPoll = state.lastPoll || now;
  const pollSec = (now - lastPoll) / 1000;
  if (pollSec > 0) state.keysPerSec = 0.7 * state.keysPerSec + 0.3 * (keysDelta / pollSec);
  state.lastPoll = now;
  state.moveKeys = seen;
  $('mig-speed').textContent = running.length || movesPerSec
    ? `speed: ${(movesPerSec * 60).toFixed(1)} moves/min` +
      (state.keysPerSec >= 1 ? `, ${fmtNum(state.keysPerSec)} keys/s copied by the running moves` : '')
    : '';
  const rec = [];
  if (m.under_replicated) rec.push(`${m.under_replicated} buckets below their copy count for ${m.under_replicated_seconds.toFixed(0)} s`);
  if (m.unavailable) rec.push(`${m.unavailable} buckets without a live caught-up copy`);
  if (!rec.length && m.last_restore_seconds) rec.push(`last restore of the copy count took ${m.last_restore_seconds.toFixed(1)} s`);
  $('recovery').textContent = rec.join('; ');
  $('recovery').className = m.unavailable ? 'bad-text' : (m.under_replicated ? 'warn-text' : 'muted');

  const from = new Map();
  for (const mv of (state.table && state.table.migrating) || []) from.set(mv.bucket + '>' + mv.to, mv.from);
  $('moves').hidden = running.length === 0;
  const shown = running.slice(0, 12);
  setRows($('moves').tBodies[0], shown, (p) => p.bucket + '>' + p.to, (p) => {
    const k = p.bucket + '>' + p.to;
    return [num(p.bucket), esc(from.get(k) || ''), esc(p.to), num(fmtNum(p.keys_sent)),
      num(rates.has(k) ? fmtNum(rates.get(k)) : '')];
  });
  $('moves-more').textContent = running.length > shown.length ? `and ${running.length - shown.length} more running` : '';
}

// MOVES_ONLY matches a table event that only moved buckets ("8 moves
// done; 8 moves started"): a rebalance makes one per finished round, so
// runs of them are shown as one line.
const MOVES_ONLY = /^(\d+ moves (done|started)(; )?)+$/;

function groupEvents(events) {
  const out = [];
  for (const e of events) {
    const last = out[out.length - 1];
    if (e.kind === 'table' && MOVES_ONLY.test(e.message) && last && last.group) {
      last.group.push(e);
      continue;
    }
    out.push(e.kind === 'table' && MOVES_ONLY.test(e.message) ? { ...e, group: [e] } : e);
  }
  return out.map((e) => {
    if (!e.group || e.group.length === 1) return e;
    let done = 0, started = 0;
    for (const g of e.group) {
      done += +((/(\d+) moves done/.exec(g.message) || [0, 0])[1]);
      started += +((/(\d+) moves started/.exec(g.message) || [0, 0])[1]);
    }
    const newest = e.group[0], oldest = e.group[e.group.length - 1];
    return { ...newest, table_version: 0,
      message: `v${oldest.table_version}–v${newest.table_version}: ${done} moves done, ${started} started (${e.group.length} table versions)` };
  });
}

function renderEvents() {
  const items = groupEvents(state.events.slice().reverse()).slice(0, 200);
  const html = items.map((e) => {
    const cls = /down|failover|failed/.test(e.kind) ? 'bad' : (e.kind === 'admin' || /planned/.test(e.kind) ? 'warn' : 'ok');
    return `<li data-kind="${esc(e.kind)}"><span class="time">${clock(e.at_ms)}</span> <span class="badge ${cls}">${esc(e.kind)}</span>` +
      `${e.table_version ? ` <span class="muted">v${e.table_version}</span>` : ''} ${esc(e.message)}</li>`;
  }).join('') || '<li class="muted">nothing in the last hour</li>';
  if ($('events')._html !== html) { $('events').innerHTML = html; $('events')._html = html; }
}

function renderAreas() {
  const rows = new Map();
  for (const [a, cfg] of Object.entries(state.areas)) rows.set(+a, { area: +a, cfg, keys: 0, bytes: 0, maxNode: 0 });
  for (const per of Object.values(state.stats)) {
    for (const [a, s] of Object.entries(per || {})) {
      if (!rows.has(+a)) rows.set(+a, { area: +a, cfg: {}, keys: 0, bytes: 0, maxNode: 0 });
      const r = rows.get(+a);
      r.keys += s.keys || 0;
      r.bytes += s.bytes || 0;
      r.maxNode = Math.max(r.maxNode, s.bytes || 0);
    }
  }
  const list = [...rows.values()].sort((x, y) => x.area - y.area);
  setRows($('areas').tBodies[0], list, (r) => r.area, (r) => {
    const q = r.cfg.quota_bytes || 0;
    let bar = 'no quota';
    if (q) {
      const pct = Math.min(100, 100 * r.maxNode / q);
      const cls = pct >= 90 ? 'bad' : (pct >= 70 ? 'warn' : 'ok');
      bar = `<div class="quota"><div class="quota-bar ${cls}" style="width:${pct.toFixed(1)}%"></div></div>` +
        `<span class="small">${fmtBytes(r.maxNode)} of ${fmtBytes(q)}</span>`;
    }
    return [num(r.area), num(fmtNum(r.keys)), num(fmtBytes(r.bytes)), bar,
      num(r.cfg.ops_limit ? fmtNum(r.cfg.ops_limit) : '–'), num(r.cfg.bytes_limit ? fmtBytes(r.cfg.bytes_limit) : '–'),
      r.cfg.read_only ? '<span class="badge warn">read-only</span>' : '',
      { html: `<button data-edit-area="${r.area}">Edit</button>`, cls: 'actions' }];
  });
}

function renderProxies() {
  const html = state.proxies.map((p) => `<li class="addr">${esc(p)}</li>`).join('') || '<li class="muted">none</li>';
  if ($('proxies')._html !== html) { $('proxies').innerHTML = html; $('proxies')._html = html; }
}

function renderHotKeys() {
  const keys = state.hotkeys.slice(0, 20);
  $('hotkeys').hidden = keys.length === 0;
  $('hotkeys-none').hidden = keys.length > 0;
  setRows($('hotkeys').tBodies[0], keys, (k) => k.area + '|' + k.key, (k) => {
    const per = Object.entries(k.proxies || {}).sort();
    return [num(k.area), `<code class="hotkey-name">${esc(k.key)}</code>`, num(fmtNum(k.rate)),
      { html: per.map(([p, r]) => `<span class="addr" title="${esc(p)}: ${esc(fmtNum(r))} req/s">${esc(p)}</span>`).join(', '), cls: 'proxies' }];
  });
}

// ---- operations ----

const OP_TEXT = {
  'node-drain': (n) => `Drain ${n}? Every copy it holds moves to the other dataservers; it gets none until undrained.`,
  'node-add': (n) => `Add ${n} to the cluster? It takes copies at the next rebalance (a new node joins with its first heartbeat).`,
  'node-remove': (n) => `Remove ${n} from the cluster? Only a node that holds no copy can be removed.`,
  'rebalance': () => 'Rebalance? The table is planned again over the live dataservers and buckets migrate.',
  'migrations-pause': () => 'Pause migrations? Running moves finish; no new move starts until resumed.',
  'migrations-resume': () => 'Resume migrations?',
  'migrations-cancel': () => 'Cancel the migration plan? Running moves stop; the table stays as it is now.',
};

// confirmDialog shows text and resolves true on Confirm; askCredential
// adds the admin credential field.
function confirmDialog(text, askCredential) {
  const dlg = $('confirm');
  $('confirm-text').textContent = text;
  $('cred-label').hidden = !askCredential;
  $('cred').value = askCredential ? state.credential : '';
  dlg.returnValue = '';
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true });
    dlg.showModal();
    if (askCredential) $('cred').focus(); else $('confirm-ok').focus();
  });
}

function flash(msg, ok) {
  const el = $('flash');
  el.hidden = false;
  el.textContent = msg;
  el.className = 'banner ' + (ok ? 'ok' : 'error');
  clearTimeout(flash.timer);
  flash.timer = setTimeout(() => { el.hidden = true; }, 8000);
}

async function postAdmin(req) {
  const headers = { 'Content-Type': 'application/json' };
  if (state.credential) headers.Authorization = 'Bearer ' + state.credential;
  return fetch('/v1/admin', { method: 'POST', headers, body: JSON.stringify(req) });
}

// admin asks for confirmation, then sends req. A configserver that wants
// an admin credential (401) gets one asked for and the request again; the
// page keeps it for the next operations.
async function admin(req, text) {
  if (!await confirmDialog(text, false)) return;
  try {
    let r = await postAdmin(req);
    if (r.status === 401 || r.status === 403) {
      let why = '';
      try { why = (await r.json()).error || ''; } catch (e) { /* not JSON */ }
      if (!await confirmDialog(`The configserver wants the admin credential${why ? ' (' + why + ')' : ''}. ` + text, true)) return;
      state.credential = $('cred').value;
      r = await postAdmin(req);
    }
    const body = await r.text();
    let reply = {};
    try { reply = JSON.parse(body); } catch (e) { reply = { ok: false, message: body.trim() || r.statusText }; }
    if (r.status === 401) {
      state.credential = '';
      reply = { ok: false, message: reply.error || 'admin credential refused' };
    }
    if (!r.ok && reply.leader !== undefined) reply = { ok: false, message: 'no leader reachable' };
    const what = req.op + (req.node ? ' ' + req.node : '') + (req.op === 'area-set' ? ' ' + req.area : '');
    flash(`${what}: ${reply.ok ? 'done' : 'refused'}${reply.message ? ' — ' + reply.message : ''}`, !!reply.ok);
  } catch (e) {
    flash(req.op + ': ' + e.message, false);
  }
  refreshSoon();
}

// refreshSoon polls now rather than at the next tick (unless a poll is
// under way).
function refreshSoon() {
  if (state.polling) return;
  clearTimeout(state.timer);
  refresh();
}

document.addEventListener('click', (e) => {
  const opBtn = e.target.closest('button[data-op]');
  if (opBtn) {
    const op = opBtn.dataset.op;
    const node = opBtn.dataset.node || '';
    const req = { op };
    if (node) req.node = node;
    admin(req, OP_TEXT[op] ? OP_TEXT[op](node) : op + '?');
    return;
  }
  const focus = e.target.closest('button[data-focus]');
  if (focus) {
    state.focus = state.focus === focus.dataset.focus ? '' : focus.dataset.focus;
    renderBuckets();
    return;
  }
  const edit = e.target.closest('button[data-edit-area]');
  if (edit) {
    const a = +edit.dataset.editArea;
    const cfg = state.areas[a] || {};
    $('area-n').value = a;
    $('area-quota').value = cfg.quota_bytes || 0;
    $('area-ops').value = cfg.ops_limit || 0;
    $('area-bytes').value = cfg.bytes_limit || 0;
    $('area-ro').checked = !!cfg.read_only;
    $('area-quota').focus();
  }
});

$('add-node').addEventListener('submit', (e) => {
  e.preventDefault();
  const node = $('add-node-addr').value.trim();
  if (node) admin({ op: 'node-add', node }, OP_TEXT['node-add'](node));
});

$('area-form').addEventListener('submit', (e) => {
  e.preventDefault();
  let req;
  try {
    const area = parseInt($('area-n').value, 10);
    if (!(area >= 0 && area <= 1023)) throw new Error('area must be 0..1023');
    req = {
      op: 'area-set', area, config: {
        quota_bytes: parseSize($('area-quota').value), ops_limit: parseInt($('area-ops').value || '0', 10) || 0,
        bytes_limit: parseSize($('area-bytes').value), read_only: $('area-ro').checked,
      },
    };
  } catch (err) {
    flash(err.message, false);
    return;
  }
  const c = req.config;
  admin(req, `Set area ${req.area}: quota ${c.quota_bytes ? fmtBytes(c.quota_bytes) : 'none'}, ` +
    `${c.ops_limit ? fmtNum(c.ops_limit) + ' ops/s' : 'no ops limit'}, ` +
    `${c.bytes_limit ? fmtBytes(c.bytes_limit) + '/s' : 'no bytes limit'}${c.read_only ? ', read-only' : ''}? ` +
    'This replaces the area\'s limits on every dataserver.');
});

refresh();
