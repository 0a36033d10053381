// Missions: the warm pool per domain, the sandbox and its bounds, and the generation,
// proof and grading queues.
import { apiCall, h } from '../lib.js';
import { fetchSeries, queueCards } from './queue-card.js';

const MISSION_QUEUES = ['missions.generate', 'missions.prove', 'missions.grade'];

function sandboxNote(status) {
  const ok = status.sandbox.state === 'isolated';
  return h(
    'p',
    { id: 'missions-sandbox', class: ok ? 'note' : 'note warning', 'data-state': status.sandbox.state },
    ok ? 'Sandbox: ' : 'Sandbox problem: ',
    status.sandbox.detail,
  );
}

/** Which kernel bounds every proof and grading run gets, and what enforces each. */
function boundsList(bounds) {
  if (!bounds) return h('p', { id: 'missions-bounds', class: 'note warning' }, 'Runs are refused: no bounds can be had here (see above).');
  const row = (label, value, by) => h('tr', {}, h('th', { scope: 'row' }, label), h('td', {}, value), h('td', {}, by));
  return h(
    'table',
    { id: 'missions-bounds', 'aria-label': 'Bounds of each run' },
    h('thead', {}, h('tr', {}, ...['Bound', 'Limit', 'Enforced by'].map((t) => h('th', { scope: 'col' }, t)))),
    h(
      'tbody',
      {},
      row('Processes and threads', String(bounds.processes.limit), bounds.processes.enforcedBy),
      row(
        'Memory',
        `${bounds.memory.limitMb} MiB ${bounds.memory.scope === 'run' ? 'for the whole run' : 'per process'}`,
        bounds.memory.enforcedBy,
      ),
      row(
        'CPU',
        bounds.cpu.cores === null ? `time per ${bounds.cpu.timeLimit}` : `${bounds.cpu.cores} core(s), time per ${bounds.cpu.timeLimit}`,
        bounds.cpu.enforcedBy,
      ),
      row(
        'Disk',
        bounds.disk.workspaceMb === null
          ? `${bounds.disk.fileMb} MiB per file`
          : `${bounds.disk.workspaceMb} MiB workspace, ${bounds.disk.fileMb} MiB per file`,
        bounds.disk.enforcedBy,
      ),
    ),
  );
}

export function missionsView() {
  const body = h('div');
  const cards = queueCards();
  const root = h('section', { 'aria-labelledby': 'missions-title' }, h('h2', { id: 'missions-title' }, 'Missions'), body);
  return {
    title: 'Missions',
    root,
    live: true,
    async refresh() {
      const [status, pool, queues] = await Promise.all([
        apiCall('GET', '/api/missions/status'),
        apiCall('GET', '/api/missions/pool'),
        apiCall('GET', '/api/queues'),
      ]);
      const shown = queues.queues.filter((q) => MISSION_QUEUES.includes(q.name));
      const series = await fetchSeries(shown.map((q) => q.name));
      const pending = pool.domains.reduce((n, d) => n + d.pending, 0);
      const rows = pool.domains.map((d) =>
        h(
          'tr',
          { 'data-domain': d.domain },
          h('th', { scope: 'row' }, d.domain),
          h('td', { 'data-field': 'servable' }, d.servable),
          h('td', { 'data-field': 'pending' }, d.pending),
          h('td', { 'data-field': 'retired' }, d.retired),
          h('td', { 'data-field': 'serves' }, d.serves),
        ),
      );
      body.replaceChildren(
        sandboxNote(status),
        boundsList(status.sandbox.bounds),
        h(
          'p',
          { id: 'missions-caps' },
          `Caps: generation ${status.caps.generation} at once across the cluster (the model's budget); `,
          `proofs ${status.caps.proving} and gradings ${status.caps.grading} at once on this host (test suites on its cores; each instance adds its own).`,
        ),
        h(
          'p',
          {},
          `Generator: ${status.generator}. `,
          status.autoApprove
            ? 'Proven missions are served at once (auto-approve).'
            : 'Proven missions wait for QA review before they are served.',
        ),
        h('h3', {}, 'Warm pool per domain'),
        rows.length
          ? h(
              'table',
              { id: 'pool-table', 'aria-label': 'Warm pool per domain' },
              h(
                'thead',
                {},
                h('tr', {}, ...['Domain', 'Servable', 'Pending review', 'Retired', 'Serves'].map((t) => h('th', { scope: 'col' }, t))),
              ),
              h('tbody', {}, rows),
            )
          : h('p', {}, 'No missions yet: request one (POST /api/missions/request), or wait for the refill schedule.'),
        h(
          'p',
          {},
          h('a', { href: '#/missions/qa', id: 'qa-link' }, `QA review: ${pending} mission(s) pending`),
          ' · ',
          h('a', { href: '#/missions/cohorts', id: 'cohorts-link' }, 'Cohorts and results'),
        ),
        h('h3', {}, 'Generation, proof and grading queues'),
        h(
          'div',
          { class: 'queues' },
          shown.map((q, i) => cards.card(q, series[i])),
        ),
      );
    },
    dispose: () => cards.dispose(),
  };
}
