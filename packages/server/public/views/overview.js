// The queues overview: one card per queue with its last hour as a small chart.
import { act, apiCall, h } from '../lib.js';
import { fetchSeries, queueCards } from './queue-card.js';

export function overviewView() {
  const list = h('div', { class: 'queues', id: 'queue-list' });
  const cards = queueCards();
  const create = h('form', { class: 'inline', id: 'create-queue' },
    h('label', { for: 'new-queue' }, 'New queue'),
    h('input', { id: 'new-queue', name: 'name', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9_.:\\-]{0,127}' }),
    h('button', { type: 'submit' }, 'Create'));
  create.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = create.elements.name.value.trim();
    act(`Create ${name}`, async () => {
      await apiCall('PUT', `/api/queues/${encodeURIComponent(name)}`, {});
      location.hash = `#/queues/${encodeURIComponent(name)}/policy`;
      return `queue ${name} created: set its policy`;
    });
  });
  const root = h('section', { 'aria-labelledby': 'queues-title' }, h('h2', { id: 'queues-title' }, 'Queues'), list, create);
  return {
    title: 'Queues',
    root,
    live: true,
    async refresh() {
      const { queues } = await apiCall('GET', '/api/queues');
      const names = queues.map((q) => q.name);
      const series = await fetchSeries(names);
      cards.keep(names);
      list.replaceChildren(...(queues.length ? queues.map((q, i) => cards.card(q, series[i])) : [h('p', {}, 'No queues yet: create one below, or with PUT /api/queues/:queue.')]));
    },
    dispose: () => cards.dispose(),
  };
}
