// Missions: QA review of proven missions (gold against sabotaged code, the proof's verdict).
import { act, apiCall, fmtTime, h, session } from '../lib.js';

/** A line diff (longest common subsequence): [' ' | '-' | '+', line] for each line. */
function lineDiff(before, after) {
  const a = before.split('\n');
  const b = after.split('\n');
  const lcs = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push([' ', a[i++]]);
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push(['-', a[i++]]);
    else out.push(['+', b[j++]]);
  }
  while (i < a.length) out.push(['-', a[i++]]);
  while (j < b.length) out.push(['+', b[j++]]);
  return out;
}

const DIFF_CONTEXT = 3;

/** The diff as text lines; unchanged runs far from a change fold into one "… n unchanged lines". */
function diffBlock(path, gold, sabotaged) {
  const lines = lineDiff(gold ?? '', sabotaged ?? '');
  const near = lines.map((_, i) => lines.slice(Math.max(0, i - DIFF_CONTEXT), i + DIFF_CONTEXT + 1).some(([op]) => op !== ' '));
  const pre = h('pre', { class: 'diff', 'data-file': path });
  let folded = 0;
  const flush = () => {
    if (folded) pre.append(h('span', { class: 'line fold' }, `… ${folded} unchanged line(s)\n`));
    folded = 0;
  };
  lines.forEach(([op, text], i) => {
    if (op === ' ' && !near[i]) return void folded++;
    flush();
    pre.append(h('span', { class: `line ${op === '-' ? 'del' : op === '+' ? 'add' : 'same'}` }, `${op} ${text}\n`));
  });
  flush();
  return [h('h5', {}, path), pre];
}

function missionCard(m) {
  const note = h('input', { id: `note-${m.id}`, name: 'note', maxlength: 2000 });
  const review = (decision) => act(`${decision} mission ${m.id}`, async () => {
    const body = note.value.trim() ? { note: note.value.trim() } : undefined;
    await apiCall('POST', `/api/missions/${m.id}/${decision}`, body);
    return `mission ${m.id} ${decision === 'approve' ? 'approved: it can be served now' : 'rejected: it will never be served'}`;
  });
  const files = [...new Set([...Object.keys(m.gold), ...Object.keys(m.sabotaged)])].sort();
  const verdict = h('table', { class: 'verdict' },
    h('thead', {}, h('tr', {}, ...['Test', 'Gold', 'Sabotaged', 'Proves the bug'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, m.proof.tests.map((t) => h('tr', {}, h('td', {}, t.id), h('td', {}, t.gold), h('td', {}, t.sabotaged), h('td', {}, t.ok ? 'yes' : 'NO')))));
  const field = (label, value) => [h('dt', {}, label), h('dd', {}, value)];
  return h('article', { class: 'mission', 'data-mission': m.id, 'aria-labelledby': `mission-${m.id}` },
    h('h3', { id: `mission-${m.id}` }, `#${m.id} · ${m.title}`),
    h('dl', { class: 'fields' },
      field('Domain', m.domain), field('Language', m.language), field('Source', m.source),
      field('Saboteur', m.saboteur), field('Created', fmtTime(m.createdAt))),
    h('h4', {}, 'Brief'), h('p', { class: 'brief' }, m.brief),
    h('h4', {}, 'Planted bug'), h('p', { class: 'bug' }, m.bugDescription), m.hint ? h('p', { class: 'legend' }, `Hint: ${m.hint}`) : null,
    h('h4', {}, 'Gold (−) vs sabotaged (+)'), files.flatMap((path) => diffBlock(path, m.gold[path], m.sabotaged[path])),
    h('h4', {}, 'Proof'), h('p', { class: 'proof-summary' }, m.proof.summary), verdict,
    h('div', { class: 'actions' },
      h('label', { for: `note-${m.id}` }, 'Note'), note,
      h('button', { type: 'button', on: { click: () => review('approve') } }, `Approve #${m.id}`),
      h('button', { type: 'button', class: 'danger', on: { click: () => review('reject') } }, `Reject #${m.id}`)));
}

export function qaView() {
  const list = h('div', { id: 'qa-list' });
  const summary = h('p', { id: 'qa-summary' });
  const root = h('section', { 'aria-labelledby': 'qa-title' },
    h('h2', { id: 'qa-title' }, 'Missions: QA review'),
    h('p', {}, h('a', { href: '#/missions' }, 'Back to the pool'), ' · ', h('button', { type: 'button', on: { click: () => session.refresh() } }, 'Refresh')),
    summary, list);
  return {
    title: 'QA review',
    root,
    // Not polled: a reviewer's note must not vanish under a refresh.
    live: false,
    async refresh() {
      const { missions } = await apiCall('GET', '/api/missions?qaStatus=pending&limit=50');
      summary.textContent = missions.length ? `${missions.length} mission(s) waiting for review, oldest first.` : 'Nothing waits for review.';
      list.replaceChildren(...missions.map(missionCard));
    },
  };
}
