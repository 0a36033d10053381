// Schedules: each cron schedule with its queue, time zone, next run (absolute and from
// now) and last run.
import { apiCall, fmtRelative, fmtTime, h, table } from '../lib.js';

const when = (value, now) =>
  value ? [h('time', { datetime: value }, fmtTime(value)), h('span', { class: 'legend' }, ` (${fmtRelative(value, now)})`)] : '—';

export function schedulesView() {
  const rows = h('tbody');
  const summary = h('p', { id: 'schedules-summary' });
  const list = table(
    { 'aria-labelledby': 'schedules-title', id: 'schedules-table' },
    ['Name', 'Queue', 'Cron', 'Time zone', 'Next run', 'Last run'],
    rows,
  );
  const root = h('section', { 'aria-labelledby': 'schedules-title' }, h('h2', { id: 'schedules-title' }, 'Schedules'), summary, list);
  return {
    title: 'Schedules',
    root,
    live: true,
    async refresh() {
      const { schedules } = await apiCall('GET', '/api/schedules');
      const now = Date.now();
      summary.textContent = schedules.length
        ? `${schedules.length} schedule(s); the maintenance tick enqueues each slot as it falls due.`
        : 'No schedules: create one with sluice.schedules.put() or `sluice schedules put`.';
      list.hidden = schedules.length === 0;
      rows.replaceChildren(
        ...schedules.map((s) =>
          h(
            'tr',
            { 'data-schedule': s.name },
            h('th', { scope: 'row' }, s.name),
            h('td', {}, h('a', { href: `#/queues/${encodeURIComponent(s.queue)}` }, s.queue)),
            h('td', {}, h('code', {}, s.cron)),
            h('td', {}, s.timezone ?? 'UTC'),
            h('td', { 'data-field': 'next' }, when(s.nextRunAt, now)),
            h('td', { 'data-field': 'last' }, when(s.lastRunAt, now)),
          ),
        ),
      );
    },
  };
}
