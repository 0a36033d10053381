// A queue's page: its charts over the range picked (running against the cap, ready depth,
// lag, starts and ends, refusals), sharing one cursor; then its policy.
import { QUEUE_CHARTS, seriesChart } from '../charts.js';
import { apiCall, h, session } from '../lib.js';
import { fitPoints, minutesToRead, rangeControl } from '../range.js';
import { policyForm } from './policy.js';

export function queueView(name, { toPolicy = false } = {}) {
  const charts = QUEUE_CHARTS.map((spec) => seriesChart(spec, { sync: `queue:${name}` }));
  const note = h('p', { class: 'legend', id: 'series-note' });
  const policy = policyForm(name);
  const root = h(
    'section',
    { 'aria-labelledby': 'queue-title' },
    h('h2', { id: 'queue-title' }, `Queue ${name}`),
    h(
      'p',
      { class: 'legend' },
      h('a', { href: '#/' }, 'All queues'),
      ' · ',
      h('a', { href: `#/jobs?queue=${encodeURIComponent(name)}` }, 'Jobs'),
      ' · ',
      h('a', { href: `#/dead?queue=${encodeURIComponent(name)}` }, 'Dead letters'),
    ),
    rangeControl(() => session.refresh()),
    h(
      'section',
      { 'aria-label': 'Charts', class: 'charts' },
      charts.map((c) => c.el),
    ),
    note,
    policy.root,
  );
  let scrolled = !toPolicy;
  return {
    title: `Queue ${name}`,
    root,
    live: true,
    async refresh() {
      const [series] = await Promise.all([
        apiCall('GET', `/api/queues/${encodeURIComponent(name)}/series?minutes=${minutesToRead()}`).catch((err) => err),
        policy.refresh(),
      ]);
      if (series instanceof Error) note.textContent = `Charts unavailable: ${series.message}`;
      else {
        const [points] = fitPoints([series.points]);
        note.textContent = `One point a minute, the last ${points.length} minutes; the current minute is still counting.`;
        for (const c of charts) c.update(points);
      }
      if (!scrolled) {
        scrolled = true;
        policy.root.scrollIntoView();
      }
    },
    dispose: () => charts.forEach((c) => c.destroy()),
  };
}
