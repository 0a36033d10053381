// Missions: QA review of proven missions (gold against sabotaged code, the proof's verdict).
// Pending missions are listed compactly, a page at a time (oldest first, by the API's
// cursor), one opened at a time. A mission with several proven bugs shows each variant
// (its family, diff and verdict), and one variant can be rejected without the mission.
// The keyboard reviews without the mouse:
//   j / k   open the next / previous mission      a / r   approve / reject the open one
//   n / p   next / previous page
// Keys typed into a field (the note) are the field's.
import { act, apiCall, fmtRelative, fmtTime, h, session, setStatus } from '../lib.js';

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

const verdictTable = (tests) =>
  h(
    'table',
    { class: 'verdict' },
    h('thead', {}, h('tr', {}, ...['Test', 'Gold', 'Sabotaged', 'Proves the bug'].map((t) => h('th', { scope: 'col' }, t)))),
    h(
      'tbody',
      {},
      tests.map((t) => h('tr', {}, h('td', {}, t.id), h('td', {}, t.gold), h('td', {}, t.sabotaged), h('td', {}, t.ok ? 'yes' : 'NO'))),
    ),
  );

const diffs = (gold, sabotaged) =>
  [...new Set([...Object.keys(gold), ...Object.keys(sabotaged)])].sort().flatMap((path) => diffBlock(path, gold[path], sabotaged[path]));

/** One proven bug of a mission: its family, diff and verdict, and a button that takes it out of service. */
function variantBlock(m, v, inService, rejectVariant) {
  const label = `Variant ${v.ordinal}`;
  const facts = [v.family.replaceAll('_', ' '), `difficulty ${v.difficulty}`, `served ${v.serveCount}×`];
  if (v.lastResort) facts.push('return-value perturbation (last resort)');
  if (v.status === 'rejected') facts.push(`rejected${v.qaNote ? `: ${v.qaNote}` : ''}`);
  const note = h('input', {
    id: `variant-note-${m.id}-${v.ordinal}`,
    name: 'variant-note',
    maxlength: 2000,
    'aria-label': `Note on variant ${v.ordinal}`,
  });
  return h(
    'section',
    { class: `variant${v.status === 'rejected' ? ' rejected' : ''}`, 'data-variant': v.ordinal, 'aria-label': label },
    h('h5', {}, `${label} · ${facts.join(' · ')}`),
    h('p', { class: 'bug' }, v.bugDescription),
    v.hint ? h('p', { class: 'legend' }, `Hint: ${v.hint}`) : null,
    diffs(m.gold, v.sabotaged),
    h('p', { class: 'proof-summary' }, v.proof.summary),
    verdictTable(v.proof.tests ?? []),
    // The last variant in service goes with its mission (Reject the mission instead).
    v.status === 'active' && inService > 1
      ? h(
          'div',
          { class: 'actions' },
          note,
          h(
            'button',
            { type: 'button', class: 'danger', on: { click: () => rejectVariant(v, note.value) } },
            `Reject variant ${v.ordinal}`,
          ),
        )
      : null,
  );
}

function missionCard(m, review, rejectVariant) {
  const note = h('input', { id: `note-${m.id}`, name: 'note', maxlength: 2000 });
  const variants = m.variants ?? [];
  const inService = variants.filter((v) => v.status === 'active').length;
  const field = (label, value) => [h('dt', {}, label), h('dd', {}, value)];
  const bugs =
    variants.length > 0
      ? [
          h('h4', {}, `Variants: ${variants.length} proven bugs, ${inService} in service`),
          variants.map((v) => variantBlock(m, v, inService, rejectVariant)),
        ]
      : [
          h('h4', {}, 'Planted bug'),
          h('p', { class: 'bug' }, m.bugDescription),
          m.hint ? h('p', { class: 'legend' }, `Hint: ${m.hint}`) : null,
          h('h4', {}, 'Gold (−) vs sabotaged (+)'),
          diffs(m.gold, m.sabotaged),
        ];
  // h() flattens one level of its children: this list holds lists.
  return h(
    'article',
    { class: 'mission', id: `mission-card-${m.id}`, 'data-mission': m.id, 'aria-labelledby': `mission-${m.id}` },
    h('h3', { id: `mission-${m.id}` }, `#${m.id} · ${m.title}`),
    h(
      'dl',
      { class: 'fields' },
      field('Domain', m.domain),
      field('Language', m.language),
      field('Source', m.source),
      field('Saboteur', m.saboteur),
      field('Created', fmtTime(m.createdAt)),
    ),
    h('h4', {}, 'Brief'),
    h('p', { class: 'brief' }, m.brief),
    bugs.flat(),
    h('h4', {}, 'Proof'),
    h('p', { class: 'proof-summary' }, m.proof.summary),
    verdictTable(m.proof.tests),
    h(
      'div',
      { class: 'actions' },
      h('label', { for: `note-${m.id}` }, 'Note'),
      note,
      h('button', { type: 'button', 'aria-keyshortcuts': 'a', on: { click: () => review('approve', note.value) } }, `Approve #${m.id}`),
      h(
        'button',
        { type: 'button', class: 'danger', 'aria-keyshortcuts': 'r', on: { click: () => review('reject', note.value) } },
        `Reject #${m.id}`,
      ),
    ),
  );
}

const PAGE_SIZE = 20;
const KEYS = 'Keys: j / k next / previous mission · a approve · r reject · n / p next / previous page';

export function qaView() {
  const list = h('ol', { id: 'qa-list', class: 'qa-list' });
  const summary = h('p', { id: 'qa-summary' });
  const previous = h(
    'button',
    { type: 'button', id: 'qa-previous', 'aria-keyshortcuts': 'p', on: { click: () => turn(-1) } },
    'Previous page',
  );
  const next = h('button', { type: 'button', id: 'qa-next', 'aria-keyshortcuts': 'n', on: { click: () => turn(1) } }, 'Next page');
  const root = h(
    'section',
    { 'aria-labelledby': 'qa-title' },
    h('h2', { id: 'qa-title' }, 'Missions: QA review'),
    h(
      'p',
      {},
      h('a', { href: '#/missions' }, 'Back to the pool'),
      ' · ',
      h('button', { type: 'button', on: { click: () => session.refresh() } }, 'Refresh'),
    ),
    summary,
    h('p', { class: 'legend', id: 'qa-keys' }, KEYS),
    list,
    h('div', { class: 'actions pager' }, previous, next),
  );

  // The cursor of each page seen so far (the first page's is null), the page shown, its
  // missions and which one is open (by position: after a review the next one takes its place).
  const cursors = [null];
  let pageIndex = 0;
  let missions = [];
  let nextCursor = null;
  let pending = 0;
  let openIndex = 0;

  const review = (m, decision, noteText) =>
    act(`${decision} mission ${m.id}`, async () => {
      const body = noteText.trim() ? { note: noteText.trim() } : undefined;
      await apiCall('POST', `/api/missions/${m.id}/${decision}`, body);
      return `mission ${m.id} ${decision === 'approve' ? 'approved: it can be served now' : 'rejected: it will never be served'}`;
    });
  const rejectVariant = (m, v, noteText) =>
    act(`reject variant ${v.ordinal} of mission ${m.id}`, async () => {
      const body = noteText.trim() ? { note: noteText.trim() } : undefined;
      await apiCall('POST', `/api/missions/${m.id}/variants/${v.ordinal}/reject`, body);
      return `variant ${v.ordinal} of mission ${m.id} rejected: it will not be served; the mission still waits for review`;
    });

  function render({ focus = false } = {}) {
    const first = pageIndex * PAGE_SIZE + 1;
    summary.textContent = missions.length
      ? `Missions ${first}–${first + missions.length - 1} of ${pending} waiting for review, oldest first.`
      : pageIndex > 0
        ? 'No more missions wait for review on this page.'
        : 'Nothing waits for review.';
    previous.disabled = pageIndex === 0;
    next.disabled = nextCursor === null;
    list.replaceChildren(
      ...missions.map((m, i) => {
        const open = i === openIndex;
        const row = h(
          'button',
          {
            type: 'button',
            class: 'row',
            'aria-expanded': String(open),
            'aria-controls': `mission-card-${m.id}`,
            on: { click: () => openAt(open ? -1 : i, { focus: true }) },
          },
          h('span', { class: 'id' }, `#${m.id}`),
          h('span', { class: 'title' }, m.title),
          h('span', { class: 'meta' }, `${m.domain} · ${m.language} · ${m.saboteur} · ${fmtRelative(m.createdAt)}`),
        );
        return h(
          'li',
          { 'data-row': m.id, class: open ? 'open' : undefined },
          row,
          open
            ? missionCard(
                m,
                (decision, noteText) => review(m, decision, noteText),
                (v, noteText) => rejectVariant(m, v, noteText),
              )
            : null,
        );
      }),
    );
    if (focus) {
      const row = list.querySelector('li.open > button.row');
      row?.focus();
      row?.parentElement.scrollIntoView({ block: 'nearest' });
    }
  }

  function openAt(index, options) {
    openIndex = index;
    render(options);
  }

  async function load() {
    const cursor = cursors[pageIndex];
    const [page, pool] = await Promise.all([
      apiCall('GET', `/api/missions?qaStatus=pending&limit=${PAGE_SIZE}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`),
      apiCall('GET', '/api/missions/pool'),
    ]);
    missions = page.missions;
    nextCursor = page.nextCursor;
    pending = pool.domains.reduce((n, d) => n + d.pending, 0);
    openIndex = Math.max(0, Math.min(openIndex, missions.length - 1));
  }

  async function turn(step) {
    if (step > 0 ? nextCursor === null : pageIndex === 0) return;
    if (step > 0) cursors[pageIndex + 1] = nextCursor;
    pageIndex += step;
    openIndex = 0;
    try {
      await load();
      render({ focus: true });
    } catch (err) {
      setStatus(`Could not load the page: ${err.message}`, true);
    }
  }

  function onKey(event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.target.closest?.('input, textarea, select, [contenteditable]')) return;
    const open = missions[openIndex];
    const actions = {
      j: () => openIndex < missions.length - 1 && openAt(openIndex + 1, { focus: true }),
      k: () => openIndex > 0 && openAt(openIndex - 1, { focus: true }),
      a: () => open && review(open, 'approve', document.getElementById(`note-${open.id}`)?.value ?? ''),
      r: () => open && review(open, 'reject', document.getElementById(`note-${open.id}`)?.value ?? ''),
      n: () => turn(1),
      p: () => turn(-1),
    };
    const action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  }
  document.addEventListener('keydown', onKey);

  return {
    title: 'QA review',
    root,
    // Not polled: a reviewer's note must not vanish under a refresh.
    live: false,
    async refresh() {
      await load();
      // A page emptied by reviews: show the one before it.
      if (missions.length === 0 && pageIndex > 0) {
        pageIndex -= 1;
        await load();
      }
      render({ focus: root.contains(document.activeElement) });
    },
    dispose: () => document.removeEventListener('keydown', onKey),
  };
}
