// The queues overview: one card per queue with its recent minutes as a small chart. The
// platform's own queues (the missions platform's `missions.*`, the outbound webhooks'
// `sluice-webhooks`) are apart from the user's: hidden unless asked for.
import { act, apiCall, h, session } from '../lib.js';
import { rangeControl } from '../range.js';
import { fetchSeries, queueCards } from './queue-card.js';

const SHOW_INTERNAL_KEY = 'sluice.showInternalQueues';
/** Queues Sluice and its platform create for themselves. */
export const isInternalQueue = (name) => name.startsWith('missions.') || name.startsWith('sluice-') || name.startsWith('sluice.');

export function overviewView() {
  const list = h('div', { class: 'queues', id: 'queue-list' });
  const cards = queueCards();
  const create = h(
    'form',
    { class: 'inline', id: 'create-queue' },
    h('label', { for: 'new-queue' }, 'New queue'),
    h('input', { id: 'new-queue', name: 'name', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9_.:\\-]{0,127}' }),
    h('button', { type: 'submit' }, 'Create'),
  );
  create.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = create.elements.name.value.trim();
    act(`Create ${name}`, async () => {
      await apiCall('PUT', `/api/queues/${encodeURIComponent(name)}`, {});
      location.hash = `#/queues/${encodeURIComponent(name)}/policy`;
      return `queue ${name} created: set its policy`;
    });
  });
  const showInternal = h('input', { type: 'checkbox', id: 'show-internal' });
  showInternal.checked = sessionStorage.getItem(SHOW_INTERNAL_KEY) === '1';
  showInternal.addEventListener('change', () => {
    sessionStorage.setItem(SHOW_INTERNAL_KEY, showInternal.checked ? '1' : '0');
    session.refresh();
  });
  const internalLabel = h('label', { for: 'show-internal' }, "Show Sluice's own queues");
  const root = h(
    'section',
    { 'aria-labelledby': 'queues-title' },
    h('h2', { id: 'queues-title' }, 'Queues'),
    h(
      'div',
      { class: 'toolbar' },
      rangeControl(() => session.refresh()),
      h('p', { class: 'inline' }, showInternal, ' ', internalLabel),
    ),
    list,
    create,
  );
  return {
    title: 'Queues',
    root,
    live: true,
    async refresh() {
      const all = (await apiCall('GET', '/api/queues')).queues;
      const internal = all.filter((q) => isInternalQueue(q.name)).length;
      internalLabel.textContent = `Show Sluice's own queues (${internal})`;
      const queues = showInternal.checked ? all : all.filter((q) => !isInternalQueue(q.name));
      const names = queues.map((q) => q.name);
      const series = await fetchSeries(names);
      cards.keep(names);
      list.replaceChildren(
        ...(queues.length
          ? queues.map((q, i) => cards.card(q, series[i]))
          : [
              h(
                'p',
                {},
                internal && !showInternal.checked
                  ? `No queues of your own yet (${internal} of Sluice's own are hidden): create one below, or with PUT /api/queues/:queue.`
                  : 'No queues yet: create one below, or with PUT /api/queues/:queue.',
              ),
            ]),
      );
    },
    dispose: () => cards.dispose(),
  };
}
