// The page's Turns tab: a workspace's turns (whoever wrote the bytes),
// each with its files and diffs, undone or redone after a confirmation
// that names the files. Every string from the daemon goes in through
// textContent, never as HTML.

const $ = (sel) => document.querySelector(sel);
const el = (tag, props = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e[k] = v;
  }
  for (const k of kids) e.append(k);
  return e;
};

async function api(path, body) {
  const key = sessionStorage.getItem('orion-page-key') || '';
  const opts = body === undefined ? { headers: { 'X-Orion-Page-Key': key } } : {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Orion-Page-Key': key }, body: JSON.stringify(body),
  };
  const r = await fetch(path, opts);
  let data = null;
  try { data = await r.json(); } catch { data = { message: `HTTP ${r.status}` }; }
  if (!r.ok) throw Object.assign(new Error(data.message || `HTTP ${r.status}`), { data, status: r.status });
  return data;
}

const tn = { ws: '', next: '', turn: null, lastUndo: '' };

// What a change did, in the person's words.
function kindText(f) {
  switch (f.kind) {
    case 'created': return 'created';
    case 'deleted': return 'deleted';
    case 'renamed': return `renamed from ${f.from}`;
    case 'mode': return `mode ${f.mode_before} → ${f.mode_after}`;
    default: return 'modified';
  }
}

// What undoing the change will do to the file.
function undoText(f) {
  switch (f.kind) {
    case 'created': return `${f.path}: removed (the turn created it)`;
    case 'deleted': return `${f.path}: put back (the turn deleted it)`;
    case 'renamed': return `${f.path}: renamed back to ${f.from}`;
    case 'mode': return `${f.path}: mode back to ${f.mode_before}`;
    default: return `${f.path}: its content before the turn put back`;
  }
}

async function loadWorkspaces() {
  try {
    const r = await api('/api/turns/workspaces');
    const dl = $('#tn-workspaces');
    dl.replaceChildren(...r.workspaces.map((w) => el('option', { value: w })));
    if (!$('#tn-workspace').value && r.workspaces.length) $('#tn-workspace').value = r.workspaces[0];
  } catch { /* the list is a convenience; a path can be typed */ }
}

async function loadTurns(cursor) {
  tn.ws = $('#tn-workspace').value.trim();
  $('#tn-message').textContent = '';
  $('#tn-message').classList.remove('error');
  if (!tn.ws) { $('#tn-message').textContent = 'Name a workspace directory.'; return; }
  try {
    const q = new URLSearchParams({ workspace: tn.ws });
    if (cursor) q.set('cursor', cursor);
    const r = await api(`/api/turns?${q}`);
    tn.next = r.next_cursor || '';
    $('#tn-older').hidden = !tn.next;
    const body = $('#turns tbody');
    body.replaceChildren(...r.turns.map((t) => {
      const tr = el('tr', {},
        el('td', {}, el('span', { class: `state ${t.state}`, text: t.state })),
        el('td', { text: t.agent || '—' }),
        el('td', { text: new Date(t.started_at).toLocaleString() }),
        el('td', { class: 'bytes', text: String(t.files.length) }),
        el('td', { class: 'target', text: t.files.map((f) => f.path).join(', ') }));
      tr.dataset.turn = t.turn_id;
      tr.onclick = () => showTurn(t.turn_id);
      return tr;
    }));
    if (!r.turns.length) $('#tn-message').textContent = 'No turn recorded in this workspace yet.';
  } catch (e) {
    $('#tn-message').textContent = e.message;
    $('#tn-message').classList.add('error');
  }
}

async function showTurn(id) {
  for (const tr of document.querySelectorAll('#turns tbody tr')) tr.classList.toggle('selected', tr.dataset.turn === id);
  $('#tn-ask').hidden = true;
  $('#tn-result').textContent = '';
  $('#tn-outcomes').replaceChildren();
  try {
    const t = await api(`/api/turn?id=${encodeURIComponent(id)}`);
    tn.turn = t;
    $('#tn-detail').hidden = false;
    $('#tn-title').textContent = `Turn of ${t.agent || 'an agent'}, ${t.state}`;
    $('#tn-warning').hidden = !t.warning;
    $('#tn-warning').textContent = t.warning || '';
    $('#tn-undo').hidden = t.state !== 'ended' || !t.files.length;
    $('#tn-redo').hidden = t.state !== 'undone';
    $('#tn-files').replaceChildren(...t.files.map((f) => el('div', { class: 'turn-file' },
      el('h3', { text: `${f.path} — ${kindText(f)}${f.writer === 'outside' ? '' : ' (through Orion)'}` }),
      f.restorable === false ? el('p', { class: 'message error', text: f.note || 'not restorable' }) : '',
      f.binary ? el('p', { text: 'binary file: no text diff' }) : '',
      f.diff ? el('pre', { class: 'diff', text: f.diff + (f.diff_truncated ? '\n[diff cut at its bound]' : '') }) : '')));
  } catch (e) {
    $('#tn-result').textContent = e.message;
    $('#tn-result').classList.add('error');
  }
}

// ask shows the confirmation naming every file the action would write,
// from the daemon's own dry run.
async function ask(what) {
  const t = tn.turn;
  $('#tn-result').classList.remove('error');
  $('#tn-ask-text').textContent = what === 'undo'
    ? `Undo this turn of ${t.agent || 'an agent'}? These files go back to how they were before it; a file changed since keeps that change, or is left as it is where the changes overlap:`
    : 'Redo this turn? These files get the turn\'s changes back:';
  $('#tn-ask-files').replaceChildren(...t.files.map((f) => el('li', { text: what === 'undo' ? undoText(f) : f.path })));
  $('#tn-ask-yes').textContent = what === 'undo' ? `Undo ${t.files.length} ${t.files.length === 1 ? 'file' : 'files'}` : 'Redo';
  $('#tn-ask-yes').onclick = () => doIt(what);
  $('#tn-ask').hidden = false;
}

async function doIt(what) {
  $('#tn-ask').hidden = true;
  const t = tn.turn;
  try {
    const body = what === 'undo'
      ? { turn_id: t.turn_id, workspace_root: t.workspace_root }
      : { operation_id: tn.lastUndo, workspace_root: t.workspace_root };
    const r = await api(`/api/turn/${what}`, body);
    if (what === 'undo') tn.lastUndo = r.result.operation_id || '';
    $('#tn-result').textContent = r.message;
    $('#tn-outcomes').replaceChildren(...(r.result.files || []).map((f) => el('li', {
      text: `${f.path}: ${f.outcome.replace(/_/g, ' ')}${f.reason ? ` (${f.reason})` : ''}`,
    })));
    await loadTurns();
    const keep = $('#tn-result').textContent;
    const outcomes = [...$('#tn-outcomes').children];
    await showTurn(t.turn_id);
    $('#tn-result').textContent = keep;
    $('#tn-outcomes').replaceChildren(...outcomes);
  } catch (e) {
    $('#tn-result').textContent = e.message;
    $('#tn-result').classList.add('error');
  }
}

function showTurns(on) {
  $('#turns-view').hidden = !on;
  $('#tab-turns').classList.toggle('active', on);
  if (on) {
    $('#sessions-view').hidden = true;
    $('#traces-view').hidden = true;
    $('#tab-sessions').classList.remove('active');
    $('#tab-traces').classList.remove('active');
  }
}

$('#tab-turns').onclick = async () => {
  showTurns(true);
  await loadWorkspaces();
  if ($('#tn-workspace').value) loadTurns();
};
$('#tab-sessions').addEventListener('click', () => showTurns(false));
$('#tab-traces').addEventListener('click', () => showTurns(false));
$('#tn-filters').onsubmit = (e) => { e.preventDefault(); tn.lastUndo = ''; loadTurns(); };
$('#tn-older').onclick = () => { if (tn.next) loadTurns(tn.next); };
$('#tn-undo').onclick = () => ask('undo');
$('#tn-redo').onclick = () => ask('redo');
$('#tn-ask-no').onclick = () => { $('#tn-ask').hidden = true; };
