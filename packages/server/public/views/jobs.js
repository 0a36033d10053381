// Jobs: filter by queue, state, key and creation time; newest first, a page at a time
// (GET /api/jobs with its nextCursor). Filters and cursor live in the URL hash, so a page
// can be linked and survives a reload.
import { apiCall, fmtTime, h, table } from '../lib.js';

const STATES = ['waiting', 'pending', 'active', 'claimed', 'completed', 'cancelled', 'dead'];
const FILTERS = ['queue', 'state', 'key', 'since', 'until'];
const PAGE_SIZE = 50;

// For each page reached with Next (its filters and cursor), the cursor of the page before
// it: Previous and the page number follow it, after the browser's Back and Forward too.
const before = new Map();

/** A `datetime-local` input's value (local time, to the second) for an ISO time, and back. */
function toLocalInput(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
const fromLocalInput = (value) => (value ? new Date(value).toISOString() : '');

export const jobsHash = (params) => {
  const query = new URLSearchParams([...Object.entries(params)].filter(([, v]) => v));
  return `#/jobs${query.size ? `?${query}` : ''}`;
};

export function jobsView() {
  const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const cursor = params.get('cursor') ?? '';
  const filters = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? '']));
  const pageKey = (c) => JSON.stringify([filters, c]);
  // This page's number, or null when it was reached otherwise (a link, a reload).
  let page = 1;
  for (let c = cursor; c && page !== null; c = before.get(pageKey(c))) page = before.has(pageKey(c)) ? page + 1 : null;

  const queueSelect = h('select', { id: 'jobs-queue', name: 'queue' }, h('option', { value: '' }, 'all queues'));
  const stateSelect = h(
    'select',
    { id: 'jobs-state', name: 'state' },
    h('option', { value: '' }, 'any state'),
    STATES.map((s) => h('option', { value: s }, s)),
  );
  stateSelect.value = filters.state;
  const keyInput = h('input', { id: 'jobs-key', name: 'key', type: 'search', value: filters.key, size: 14 });
  const sinceInput = h('input', {
    id: 'jobs-since',
    name: 'since',
    type: 'datetime-local',
    step: 1,
    value: filters.since ? toLocalInput(filters.since) : '',
  });
  const untilInput = h('input', {
    id: 'jobs-until',
    name: 'until',
    type: 'datetime-local',
    step: 1,
    value: filters.until ? toLocalInput(filters.until) : '',
  });
  const form = h(
    'form',
    { class: 'inline', id: 'jobs-filter' },
    h('label', { for: 'jobs-queue' }, 'Queue'),
    queueSelect,
    h('label', { for: 'jobs-state' }, 'State'),
    stateSelect,
    h('label', { for: 'jobs-key' }, 'Key'),
    keyInput,
    h('label', { for: 'jobs-since' }, 'Created from'),
    sinceInput,
    h('label', { for: 'jobs-until' }, 'until'),
    untilInput,
    h('button', { type: 'submit' }, 'Filter'),
    h('a', { href: '#/jobs' }, 'Clear'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    location.hash = jobsHash({
      queue: queueSelect.value,
      state: stateSelect.value,
      key: keyInput.value.trim(),
      since: fromLocalInput(sinceInput.value),
      until: fromLocalInput(untilInput.value),
    });
  });

  const rows = h('tbody');
  const summary = h('p', { id: 'jobs-summary' });
  const prev = h('button', { type: 'button', id: 'jobs-prev', hidden: !cursor }, page === null ? 'First page' : 'Previous page');
  const next = h('button', { type: 'button', id: 'jobs-next', hidden: true }, 'Next page');
  let nextCursor = null;
  prev.addEventListener('click', () => (location.hash = jobsHash({ ...filters, cursor: before.get(pageKey(cursor)) ?? '' })));
  next.addEventListener('click', () => {
    if (!nextCursor) return;
    before.set(pageKey(nextCursor), cursor);
    location.hash = jobsHash({ ...filters, cursor: nextCursor });
  });
  const list = table(
    { 'aria-labelledby': 'jobs-title', id: 'jobs-table' },
    ['Job', 'Queue', 'State', 'Key', 'Attempts', 'Created', 'Started', 'Finished'],
    rows,
  );
  const root = h(
    'section',
    { 'aria-labelledby': 'jobs-title' },
    h('h2', { id: 'jobs-title' }, 'Jobs'),
    form,
    summary,
    list,
    h('div', { class: 'actions pager' }, prev, next),
  );

  let queuesLoaded = false;
  return {
    title: 'Jobs',
    root,
    live: true,
    async refresh() {
      if (!queuesLoaded) {
        const { queues } = await apiCall('GET', '/api/queues');
        // A queue named in the link but gone is still offered, so the filter shows what it is.
        const names = [...new Set([...queues.map((q) => q.name), ...(filters.queue ? [filters.queue] : [])])];
        queueSelect.append(...names.map((name) => h('option', { value: name }, name)));
        queueSelect.value = filters.queue;
        queuesLoaded = true;
      }
      const query = new URLSearchParams([...Object.entries(filters)].filter(([, v]) => v));
      query.set('limit', String(PAGE_SIZE));
      if (cursor) query.set('cursor', cursor);
      const answer = await apiCall('GET', `/api/jobs?${query}`);
      nextCursor = answer.nextCursor;
      next.hidden = !nextCursor;
      summary.textContent = answer.jobs.length
        ? `${page === null ? 'A later page' : `Page ${page}`}: ${answer.jobs.length} job(s), newest first${nextCursor ? '; more on the next page' : ''}.`
        : cursor
          ? 'No more jobs match.'
          : 'No jobs match.';
      rows.replaceChildren(
        ...answer.jobs.map((job) =>
          h(
            'tr',
            { 'data-job': job.id },
            h('td', {}, h('a', { href: `#/jobs/${job.id}` }, `#${job.id}`)),
            h('td', {}, h('a', { href: `#/queues/${encodeURIComponent(job.queue)}` }, job.queue)),
            h('td', { 'data-field': 'state' }, job.state),
            h('td', {}, job.key ?? '—'),
            h('td', {}, `${job.attempts}/${job.maxAttempts}`),
            h('td', {}, fmtTime(job.createdAt)),
            h('td', {}, fmtTime(job.startedAt)),
            h('td', {}, fmtTime(job.finishedAt)),
          ),
        ),
      );
    },
  };
}
