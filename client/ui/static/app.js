// The page of `orionctl ui`. Plain DOM, no framework: every string from the
// daemon goes in through textContent, never as HTML.

const $ = (sel) => document.querySelector(sel);
const el = (tag, props = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('data-')) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const k of kids) e.append(k);
  return e;
};

const OPEN = new Set(['awaiting_content', 'streaming', 'finalizing', 'conflict', 'truncated', 'needs_corrections']);
const PAGE = 100;
const view = { offset: 0, selected: null, lastList: 0, listTimer: null, total: 0, detailBusy: false };

// The page key: the server hands it to this tab in the URL fragment of
// its redirect (/#k=KEY), which no browser sends to a server; the tab
// keeps it in sessionStorage (this origin's, this tab's) and sends it on
// every /api request. The cookie alone, which the browser also sends to
// other ports of 127.0.0.1, opens nothing.
const KEY_ITEM = 'orion-page-key';
if (location.hash.startsWith('#k=')) {
  sessionStorage.setItem(KEY_ITEM, location.hash.slice(3));
  history.replaceState(null, '', location.pathname + location.search);
}
const pageKey = sessionStorage.getItem(KEY_ITEM) || '';

async function api(path, body) {
  const opts = body === undefined ? { headers: { 'X-Orion-Page-Key': pageKey } } : {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Orion-Page-Key': pageKey }, body: JSON.stringify(body),
  };
  const r = await fetch(path, opts);
  let data = null;
  try { data = await r.json(); } catch { data = { message: `HTTP ${r.status}` }; }
  if (!r.ok) throw Object.assign(new Error(data.message || `HTTP ${r.status}`), { data, status: r.status });
  return data;
}

// fmtSize writes a size as orionctl and the VS Code extension do:
// bytes below 1 KiB, whole KiB below 1 MiB, then MiB with one decimal.
function fmtSize(n) {
  if (n < 1024) return `${n.toLocaleString('en-US')} ${n === 1 ? 'byte' : 'bytes'}`;
  if (n < 1 << 20) return `${Math.floor((n + 512) / 1024).toLocaleString('en-US')} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

// fmtRate is a streaming speed: whole bytes a second below 1 KiB/s (a
// model's usual pace), else one decimal.
function fmtRate(r) {
  if (r < 1024) return `${Math.round(r)} B/s`;
  if (r < 1 << 20) return `${(r / 1024).toFixed(1)} KiB/s`;
  return `${(r / (1 << 20)).toFixed(1)} MiB/s`;
}

function fmtAge(t) {
  const s = Math.max(0, (Date.now() - new Date(t).getTime()) / 1000);
  if (s < 60) return `${Math.floor(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

// --- connection -----------------------------------------------------------

function setConn(state, text) {
  const c = $('#conn');
  c.dataset.state = state;
  c.textContent = text;
}

function onState(st) {
  if (st.connected) setConn('live', 'live');
  else setConn('reconnecting', 'reconnecting… (oriond is not reachable)');
  showDown(st);
  scheduleList();
  if (view.selected && (!st.changed || st.changed.includes(view.selected))) refreshDetail();
}

// showDown says, while the daemon does not answer, where the page looks
// for it and what starts it.
function showDown(st) {
  const box = $('#down');
  box.hidden = st.connected || !st.error;
  if (box.hidden) return;
  box.replaceChildren(
    el('strong', { text: 'oriond does not answer' }), ' at ', el('code', { text: st.socket || '' }), ` (${st.error}).`,
    el('br'), 'If it is not running, start it in a terminal with ', el('code', { text: st.start || 'oriond run' }),
    ' (or ', el('code', { text: 'oriond service start' }), ' if you installed it as a service). This page connects by itself once it answers.');
}

// connect reads the server-sent events with fetch, not EventSource, which
// cannot send the page key; it reconnects a second after the stream ends.
async function connect() {
  if (!pageKey) {
    setConn('nokey', 'this tab has no key: open a link of orionctl ui, or "new tab" in a tab that works');
    return;
  }
  try {
    const r = await fetch('/api/events', { headers: { 'X-Orion-Page-Key': pageKey } });
    if (r.status === 403) {
      setConn('nokey', 'refused: open a new link of orionctl ui');
      return;
    }
    if (!r.ok || !r.body) throw new Error(`HTTP ${r.status}`);
    const rd = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await rd.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = ev.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (data) onState(JSON.parse(data));
      }
    }
  } catch { /* the server went away: say so and try again */ }
  setConn('reconnecting', 'reconnecting… (the page server is not reachable)');
  setTimeout(connect, 1000);
}

// A new tab gets its own one-time link: the key is this tab's.
async function newTab() {
  try {
    const r = await api('/api/link', {});
    window.open(r.url, '_blank', 'noopener');
  } catch (e) { showMessage(e.message, true); }
}

// --- sessions list -----------------------------------------------------------

// scheduleList reloads the list at most once a second.
function scheduleList() {
  if (view.listTimer) return;
  const wait = Math.max(0, 1000 - (Date.now() - view.lastList));
  view.listTimer = setTimeout(() => { view.listTimer = null; loadList(); }, wait);
}

async function loadList() {
  view.lastList = Date.now();
  const q = new URLSearchParams({
    workspace: $('#f-workspace').value, state: $('#f-state').value, q: $('#f-text').value,
    offset: view.offset, limit: PAGE,
  });
  let page;
  try { page = await api(`/api/sessions?${q}`); } catch { return; }
  view.total = page.total;
  fillSelect($('#f-workspace'), page.workspaces, (w) => w);
  fillSelect($('#f-state'), Object.keys(page.states).sort(), (s) => `${s.replace(/_/g, ' ')} (${page.states[s]})`);
  const tbody = $('#sessions tbody');
  const rows = page.sessions.map((s) => {
    const tr = el('tr', { 'data-id': s.session_id, 'data-state': s.state },
      el('td', {}, el('span', { class: `state ${s.state}`, text: s.state.replace(/_/g, ' ') })),
      el('td', { class: 'target', text: shortTarget(s), title: s.target_file + (s.intent ? `\n${s.intent}` : '') }),
      el('td', { text: (s.workspace_root || '').split('/').filter(Boolean).pop() || '', title: s.workspace_root || '' }),
      el('td', { text: s.operation }),
      el('td', { class: 'bytes', text: fmtSize(s.bytes), title: `${s.bytes.toLocaleString('en-US')} bytes` }),
      el('td', { text: String(s.lines) }),
      el('td', { class: 'rate', text: s.rate ? fmtRate(s.rate) : '' }),
      el('td', { text: fmtAge(s.created_at) }),
      el('td', { class: 'client', text: s.client || '' }));
    if (s.session_id === view.selected) tr.classList.add('selected');
    tr.onclick = () => select(s.session_id);
    return tr;
  });
  tbody.replaceChildren(...rows);
  const last = Math.min(page.total, view.offset + page.sessions.length);
  $('#count').textContent = page.total ? `${view.offset + 1}–${last} of ${page.total}` : 'no sessions';
  $('#prev').disabled = view.offset === 0;
  $('#next').disabled = last >= page.total;
  $('#txs-title').hidden = page.txs.length === 0;
  $('#txs').replaceChildren(...page.txs.map((tx) => el('li', { 'data-tx': tx.tx_id },
    el('span', { text: `transaction ${tx.tx_id.slice(0, 8)} ` }),
    el('button', { type: 'button', 'data-action': 'undo-tx', text: 'undo transaction', onclick: () => askUndoTx(tx) }),
    el('ul', {}, ...tx.files.map((f) => el('li', {},
      el('span', { class: `state ${f.state}`, text: f.state }), ' ',
      el('a', { href: '#', text: f.target_file, onclick: (e) => { e.preventDefault(); select(f.session_id); } })))))));
}

// shortTarget is the target relative to its workspace, when inside it.
function shortTarget(s) {
  const w = s.workspace_root;
  return w && s.target_file.startsWith(w.endsWith('/') ? w : `${w}/`) ? s.target_file.slice(w.length).replace(/^\//, '') : s.target_file;
}

function fillSelect(sel, values, label) {
  const cur = sel.value;
  const opts = [el('option', { value: '', text: 'all' }), ...values.map((v) => el('option', { value: v, text: label(v) }))];
  if (cur && !values.includes(cur)) opts.push(el('option', { value: cur, text: cur }));
  sel.replaceChildren(...opts);
  sel.value = cur;
}

// --- one session -------------------------------------------------------------

function select(id) {
  view.selected = id;
  for (const tr of document.querySelectorAll('#sessions tbody tr')) tr.classList.toggle('selected', tr.dataset.id === id);
  $('#detail').hidden = false;
  $('#d-message').textContent = '';
  $('#d-confirm').hidden = true;
  $('#d-ask').hidden = true;
  refreshDetail();
}

async function refreshDetail() {
  if (view.detailBusy || !view.selected) return;
  view.detailBusy = true;
  try { await loadDetail(view.selected); } finally { view.detailBusy = false; }
}

async function loadDetail(id) {
  let s;
  try { s = await api(`/api/session?id=${encodeURIComponent(id)}`); } catch (e) { showMessage(e.message, true); return; }
  if (id !== view.selected) return;
  const d = $('#detail');
  d.dataset.id = id;
  d.dataset.state = s.state;
  $('#d-title').textContent = s.target_file;
  const info = [['state', s.state], ['session', s.session_id], ['operation', s.operation],
    ['workspace', s.workspace_root || '—'], ['client', s.client || '—'], ['intent', s.intent || '—'],
    ['size', s.bytes < 1024 ? fmtSize(s.bytes) : `${fmtSize(s.bytes)} (${s.bytes.toLocaleString('en-US')} bytes)`],
    ['lines', String(s.lines)], ['started', new Date(s.created_at).toLocaleString()]];
  if (s.tx_id) info.push(['transaction', s.tx_id]);
  if (s.conflict) info.push(['conflict', s.conflict]);
  if (s.result && s.result.sha256) info.push(['sha256', s.result.sha256]);
  $('#d-info').replaceChildren(...info.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v })]));
  renderActions(s);
  renderFindings(s);
  renderLadder(s.ladder);
  if (s.state === 'completed') await loadDiff(id);
  else if (OPEN.has(s.state) || s.state === 'aborted') await loadContent(id, s.state);
  else { $('#d-body-title').textContent = ''; $('#d-body').replaceChildren(); }
}

function renderActions(s) {
  const b = [];
  const button = (name, text, fn) => b.push(el('button', { type: 'button', 'data-action': name, text, onclick: fn }));
  if (s.state === 'completed') button('undo', s.tx_id ? 'Undo (whole transaction)…' : 'Undo…', () => askUndo(s));
  if (['awaiting_content', 'streaming', 'conflict', 'truncated', 'needs_corrections'].includes(s.state)) {
    button('abort', 'Abort', () => act('abort', { session_id: s.session_id }));
  }
  if (s.state === 'conflict') button('finalize-anyway', 'Finalize anyway…', () => confirmForce(s));
  $('#d-actions').replaceChildren(...b);
}

function renderFindings(s) {
  const box = $('#d-findings');
  const v = s.validation;
  const findings = (v && v.findings) || [];
  box.hidden = !findings.length;
  box.querySelector('ul').replaceChildren(...findings.map((f) => el('li', { class: f.severity || '' },
    el('strong', { text: f.code || 'finding' }),
    el('span', { text: ` ${f.line ? `line ${f.line}${f.column ? `:${f.column}` : ''}: ` : ': '}${f.message}` }),
    f.snippet ? el('pre', { text: f.snippet }) : '')));
}

function renderLadder(l) {
  const ol = $('#d-ladder');
  if (!l) { ol.replaceChildren(el('li', { text: 'no trace events (tracing off, or pruned)' })); return; }
  const t0 = new Date(l.started).getTime();
  ol.replaceChildren(...l.rungs.map((r) => el('li', { class: r.status, 'data-title': r.title, 'data-stages': (r.stages || []).join(' ') },
    el('span', { class: 'at', text: `+${((new Date(r.at).getTime() - t0) / 1000).toFixed(3)}s` }),
    el('strong', { text: r.title }),
    r.status !== 'ok' ? el('span', { text: ` (${r.status})` }) : '',
    el('div', { class: 'details', text: [...(r.details || []), ...(r.stages && r.stages.length ? [`Stages: ${r.stages.join(' → ')}`] : [])].join('\n') }))));
}

async function loadContent(id, state) {
  let c;
  try { c = await api(`/api/session/content?id=${encodeURIComponent(id)}`); } catch (e) { showMessage(e.message, true); return; }
  if (id !== view.selected) return;
  $('#d-body-title').textContent = state === 'streaming' || state === 'awaiting_content'
    ? `Content as it arrives (${fmtSize(c.total)})` : `Content received (${fmtSize(c.total)})`;
  const pre = $('#d-body');
  pre.className = 'body';
  pre.textContent = c.available ? c.content + (c.truncated ? '\n… (cut)' : '') : '(the store no longer holds this content)';
  if (state === 'streaming') pre.scrollTop = pre.scrollHeight;
}

async function loadDiff(id) {
  let d;
  try { d = await api(`/api/session/diff?id=${encodeURIComponent(id)}`); } catch (e) {
    $('#d-body-title').textContent = 'Change';
    $('#d-body').textContent = e.message;
    return;
  }
  if (id !== view.selected) return;
  let title = d.before === 'backup' ? 'Change against the version it replaced' : 'Created (no earlier version)';
  if (d.changed) title += ' — the file changed since this write; shown as it is now';
  $('#d-body-title').textContent = title;
  renderDiff($('#d-body'), d.unified);
}

// renderDiff draws a unified diff with line numbers of both sides.
function renderDiff(pre, unified) {
  pre.className = 'body diff';
  const out = [];
  let a = 0, b = 0;
  for (const line of unified.split('\n')) {
    if (line.startsWith('---') || line.startsWith('+++') || line === '') continue;
    const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)/.exec(line);
    if (m) { a = +m[1]; b = +m[2]; out.push(el('span', { class: 'hunk', text: line })); continue; }
    const ln = (x) => el('span', { class: 'ln', text: x ? String(x) : '' });
    if (line[0] === '-') out.push(el('span', { class: 'del' }, ln(a++), ln(0), line));
    else if (line[0] === '+') out.push(el('span', { class: 'add' }, ln(0), ln(b++), line));
    else if (line[0] === '\\') out.push(el('span', { class: 'ctx', text: line }));
    else out.push(el('span', { class: 'ctx' }, ln(a++), ln(b++), line));
  }
  if (!out.length) out.push(el('span', { class: 'ctx', text: '(no change)' }));
  pre.replaceChildren(...out);
}

async function confirmForce(s) {
  let res;
  try { res = await api('/api/finalize', { session_id: s.session_id, dry_run: true }); } catch (e) { showMessage(e.message, true); return; }
  $('#d-confirm').hidden = false;
  renderDiff($('#d-confirm-diff'), res.result.diff || '');
  $('#d-confirm-yes').onclick = async () => {
    $('#d-confirm').hidden = true;
    await act('finalize', { session_id: s.session_id, force: true });
  };
  $('#d-confirm-no').onclick = () => { $('#d-confirm').hidden = true; };
}

// ask shows a question in the session's panel; yes runs on its first
// button.
function ask(text, yesLabel, yes) {
  $('#d-ask-text').textContent = text;
  $('#d-ask-yes').textContent = yesLabel;
  $('#d-ask').hidden = false;
  $('#d-ask-yes').onclick = async () => { $('#d-ask').hidden = true; await yes(); };
  $('#d-ask-no').onclick = () => { $('#d-ask').hidden = true; };
}

// Undo acts on the file on disk: the page names it and asks first, as
// finalize anyway does.
function askUndo(s) {
  const what = s.tx_id
    ? `It undoes the whole transaction ${s.tx_id.slice(0, 8)}: every file it wrote goes back together.`
    : s.operation === 'create'
      ? 'The agent created this file: undo removes it.'
      : 'The version this write replaced is put back; changes made since are kept where they do not overlap, or the undo is refused.';
  ask(`Undo the write of ${s.target_file}? ${what}`, 'Undo it', () => act('undo', { session_id: s.session_id }));
}

function askUndoTx(tx) {
  select(tx.files[0].session_id);
  ask(`Undo transaction ${tx.tx_id.slice(0, 8)}? Its ${tx.files.length} files go back together: ${tx.files.map((f) => f.target_file).join(', ')}.`,
    'Undo them', () => act('undo', { session_id: tx.files[0].session_id }));
}

async function act(name, body) {
  try {
    const r = await api(`/api/${name}`, body);
    showMessage(r.message, false);
  } catch (e) {
    showMessage(e.message, true);
  }
  scheduleList();
  refreshDetail();
}

function showMessage(text, isError) {
  const m = $('#d-message');
  m.textContent = text;
  m.classList.toggle('error', isError);
  $('#detail').hidden = false;
}

// --- traces ----------------------------------------------------------------------

// The Traces tab shows the newest events first, a page at a time: older
// pages continue before the oldest event shown.
const TRACE_PAGE = 100;
const traces = { before: '', pages: 0, next: '' };

async function loadTraces(before = '') {
  const q = new URLSearchParams({ newest: '1', limit: TRACE_PAGE });
  for (const k of ['workspace', 'type', 'source', 'session', 'since']) {
    const v = $(`#t-${k}`).value.trim();
    if (v) q.set(k, v);
  }
  if (before) q.set('before', before);
  let r;
  try { r = await api(`/api/trace/logs?${q}`); } catch (e) { $('#t-message').textContent = e.message; return; }
  traces.before = before;
  traces.pages = before ? traces.pages + 1 : 0;
  traces.next = r.more ? r.next : '';
  const first = traces.pages * TRACE_PAGE + 1;
  $('#t-message').textContent = r.events.length
    ? `events ${first}–${first + r.events.length - 1}, newest first${r.more ? '' : ' (no older events)'}`
    : 'no events';
  $('#t-newest').disabled = !before;
  $('#t-older').disabled = !traces.next;
  $('#traces tbody').replaceChildren(...r.events.map((ev) => el('tr', { 'data-type': ev.type },
    el('td', { class: 'time', 'data-time': ev.time, text: new Date(ev.time).toLocaleTimeString(), title: new Date(ev.time).toLocaleString() }),
    el('td', { class: 'type', text: ev.type }),
    el('td', { class: 'type', text: ev.method || '' }),
    el('td', { class: 'sid', text: (ev.session_id || '').slice(0, 8), title: ev.session_id || '' }),
    el('td', { class: 'fields' }, ...renderFields(ev.fields)))));
}

// renderFields shows an event's fields as name and value, values as a
// person reads them (sizes, yes/no, milliseconds), never as JSON text.
function renderFields(fields) {
  if (!fields || typeof fields !== 'object') return [];
  // An empty field (null, no items) says nothing: left out.
  return Object.entries(fields).filter(([, v]) => v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0)).map(([k, v]) => el('span', { class: 'field', 'data-field': k },
    el('span', { class: 'k', text: k.replace(/_/g, ' ') }), ' ', fieldValue(k, v)));
}

function fieldValue(k, v) {
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'number') {
    if (k === 'bytes' || k.endsWith('_bytes')) return fmtSize(v);
    if (k.endsWith('_ms')) return `${v.toLocaleString('en-US')} ms`;
    return v.toLocaleString('en-US');
  }
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((x) => typeof x !== 'object' || x === null)) return v.join(', ');
  if (v && typeof v === 'object') {
    return Object.entries(v).map(([k2, v2]) => `${k2.replace(/_/g, ' ')} ${fieldValue(k2, v2)}`).join('; ');
  }
  return String(v);
}

function showTab(name) {
  $('#sessions-view').hidden = name !== 'sessions';
  $('#traces-view').hidden = name !== 'traces';
  $('#tab-sessions').classList.toggle('active', name === 'sessions');
  $('#tab-traces').classList.toggle('active', name === 'traces');
  if (name === 'traces') loadTraces();
}

// --- start --------------------------------------------------------------------------

$('#tab-sessions').onclick = () => showTab('sessions');
$('#tab-traces').onclick = () => showTab('traces');
$('#new-tab').onclick = newTab;
$('#filters').onsubmit = (e) => e.preventDefault();
for (const id of ['#f-workspace', '#f-state']) $(id).onchange = () => { view.offset = 0; loadList(); };
// Typing filters after a short pause; the list's own data is the page
// server's, so this asks the daemon nothing.
let typing = null;
$('#f-text').oninput = () => { view.offset = 0; clearTimeout(typing); typing = setTimeout(loadList, 200); };
$('#prev').onclick = () => { view.offset = Math.max(0, view.offset - PAGE); loadList(); };
$('#next').onclick = () => { view.offset += PAGE; loadList(); };
$('#t-filters').onsubmit = (e) => { e.preventDefault(); loadTraces(); };
$('#t-newest').onclick = () => loadTraces();
$('#t-older').onclick = () => { if (traces.next) loadTraces(traces.next); };
connect();
loadList();
