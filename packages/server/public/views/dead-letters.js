// Dead letters: filter by queue and error text; replay one, replay or purge all matching.
import { act, apiCall, fmtTime, h, session, table } from '../lib.js';

export function deadLettersView() {
  const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const queueSelect = h('select', { id: 'dead-queue', name: 'queue' }, h('option', { value: '' }, 'all queues'));
  const errorInput = h('input', { id: 'dead-error', name: 'errorContains', type: 'search', value: params.get('errorContains') ?? '' });
  const rows = h('tbody');
  const summary = h('p', { id: 'dead-summary' });
  const filter = () => {
    const f = {};
    if (queueSelect.value) f.queue = queueSelect.value;
    if (errorInput.value.trim()) f.errorContains = errorInput.value.trim();
    return f;
  };
  const form = h(
    'form',
    { class: 'inline', id: 'dead-filter' },
    h('label', { for: 'dead-queue' }, 'Queue'),
    queueSelect,
    h('label', { for: 'dead-error' }, 'Error contains'),
    errorInput,
    h('button', { type: 'submit' }, 'Filter'),
    h(
      'button',
      {
        type: 'button',
        id: 'replay-all',
        on: {
          click: () =>
            act('Replay all matching', async () => {
              const r = await apiCall('POST', '/api/dead-letters/replay', filter());
              return `replayed ${r.replayed} dead job(s)${r.skipped ? `, ${r.skipped} skipped (singleton key in use)` : ''}`;
            }),
        },
      },
      'Replay all matching',
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        on: {
          click: () => {
            if (!confirm('Delete every matching dead job for good?')) return;
            act('Purge matching', async () => `purged ${(await apiCall('POST', '/api/dead-letters/purge', filter())).purged} dead job(s)`);
          },
        },
      },
      'Purge all matching',
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    session.refresh();
  });
  const list = table({ 'aria-labelledby': 'dead-title' }, ['Job', 'Queue', 'Last error', 'Attempts', 'Died', 'Actions'], rows);
  const root = h('section', { 'aria-labelledby': 'dead-title' }, h('h2', { id: 'dead-title' }, 'Dead letters'), form, summary, list);
  let queuesLoaded = false;
  return {
    title: 'Dead letters',
    root,
    live: true,
    async refresh() {
      if (!queuesLoaded) {
        const { queues } = await apiCall('GET', '/api/queues');
        queueSelect.append(...queues.map((q) => h('option', { value: q.name }, q.name)));
        queueSelect.value = params.get('queue') ?? '';
        queuesLoaded = true;
      }
      const query = new URLSearchParams({ ...filter(), limit: '100' });
      const page = await apiCall('GET', `/api/dead-letters?${query}`);
      summary.textContent = `${page.total} dead job(s) match${page.total > page.jobs.length ? `; showing the newest ${page.jobs.length}` : ''}.`;
      rows.replaceChildren(
        ...page.jobs.map((job) => {
          const last = job.errors[job.errors.length - 1];
          return h(
            'tr',
            { 'data-job': job.id },
            h('td', {}, h('a', { href: `#/jobs/${job.id}` }, `#${job.id}`)),
            h('td', {}, job.queue),
            h('td', { class: 'message' }, last ? `${last.name ? `${last.name}: ` : ''}${last.message}` : '—'),
            h('td', {}, `${job.attempts}/${job.maxAttempts}`),
            h('td', {}, fmtTime(job.finishedAt)),
            h(
              'td',
              {},
              h(
                'button',
                {
                  type: 'button',
                  on: {
                    click: () =>
                      act(`Replay job ${job.id}`, () => apiCall('POST', `/api/jobs/${job.id}/replay`).then(() => `job ${job.id} replayed`)),
                  },
                },
                `Replay #${job.id}`,
              ),
            ),
          );
        }),
      );
    },
  };
}
