// A queue's policy as a form: PUT replaces the whole policy, so fields not on the form are
// sent back as stored.
import { act, apiCall, h } from '../lib.js';

const POLICY_FIELDS = [
  ['concurrency', 'Global concurrency cap', 'running jobs across all workers; empty = no cap'],
  ['perKeyConcurrency', 'Per-key concurrency cap', 'running jobs of one key; empty = no cap'],
  ['maxPerKey', 'Max jobs per key', 'pending + active of one key; beyond it sends get 429'],
  ['maxPending', 'Shed threshold (max ready)', 'ready jobs; beyond it sends get 503'],
  ['maxAttempts', 'Max attempts', 'before a job is dead'],
  ['leaseSeconds', 'Lease (seconds)', 'a claim holds a job this long without heartbeats'],
  ['retryAfterSeconds', 'Retry-After (seconds)', 'what 503 and 429 answers tell callers'],
  ['backoff.baseMs', 'Backoff base (ms)', 'first retry delay; doubles each attempt'],
  ['backoff.maxMs', 'Backoff max (ms)', 'longest retry delay'],
  ['backoff.jitter', 'Backoff jitter (0–1)', '0 = exact delays'],
  ['rateLimit.count', 'Rate: starts per window', 'at most this many jobs start in any window; empty = no rate'],
  ['rateLimit.periodMs', 'Rate window (ms)', "the rate's window, e.g. 1000"],
  ['budget.units', 'Budget: units per window', "at most this much of the jobs' cost starts in any window; empty = no budget"],
  ['budget.periodMs', 'Budget window (ms)', "the budget's window, e.g. 60000"],
  ['maxWaitMs', 'Max wait (ms)', 'with a rate or a budget: sends that would wait longer get 503; empty = none'],
  [
    'perKeyRateLimit.count',
    'Rate per key: starts per window',
    'at most this many jobs of each key start in any window; keys take turns; empty = no per-key rate',
  ],
  ['perKeyRateLimit.periodMs', 'Rate per key window (ms)', "the per-key rate's window, e.g. 1000"],
  [
    'perKeyBudget.units',
    'Budget per key: units per window',
    "at most this much of each key's jobs' cost starts in any window; empty = no per-key budget",
  ],
  ['perKeyBudget.periodMs', 'Budget per key window (ms)', "the per-key budget's window, e.g. 60000"],
];
const NULLABLE = new Set(['concurrency', 'perKeyConcurrency', 'maxPerKey', 'maxPending', 'maxWaitMs']);
/** Policy fields that are a window, { amount, periodMs } or null: null when every input is empty. */
const WINDOW_POLICIES = new Set(['rateLimit', 'budget', 'perKeyRateLimit', 'perKeyBudget']);

/** The policy form of queue `name`, loaded once (a refresh must not undo an edit). */
export function policyForm(name) {
  const form = h('form', { class: 'policy', id: 'policy-form' });
  const root = h('section', { 'aria-labelledby': 'policy-title', id: 'policy' }, h('h3', { id: 'policy-title' }, 'Policy'), form);
  let loaded = null;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    act(`Save ${name}`, async () => {
      // PUT replaces the whole policy: start from the stored one (every field of it, those
      // not on the form too), change the edited fields.
      const { name: _name, createdAt: _created, updatedAt: _updated, stats: _stats, refusals: _refusals, ...policy } = loaded;
      policy.backoff = { ...policy.backoff };
      const windows = {};
      for (const [path] of POLICY_FIELDS) {
        const raw = form.elements[path].value.trim();
        const value = raw === '' ? null : Number(raw);
        if (raw !== '' && !Number.isFinite(value)) throw new Error(`${path} must be a number`);
        const [a, b] = path.split('.');
        if (WINDOW_POLICIES.has(a)) (windows[a] ??= {})[b] = value;
        else if (b) {
          if (value !== null) policy[a][b] = value;
        } else if (value !== null || NULLABLE.has(a)) policy[a] = value;
      }
      for (const [a, fields] of Object.entries(windows)) {
        policy[a] = Object.values(fields).every((v) => v === null) ? null : fields;
      }
      loaded = await apiCall('PUT', `/api/queues/${encodeURIComponent(name)}`, policy);
      return `policy of ${name} saved`;
    });
  });
  async function load() {
    loaded = await apiCall('GET', `/api/queues/${encodeURIComponent(name)}`);
    form.replaceChildren(
      ...POLICY_FIELDS.map(([path, label, hint]) => {
        const [a, b] = path.split('.');
        const value = b ? loaded[a]?.[b] : loaded[a];
        const id = `policy-${path.replace('.', '-')}`;
        return h(
          'div',
          {},
          h('label', { for: id }, label),
          h('input', { id, name: path, inputmode: 'decimal', value: value ?? '', 'aria-describedby': `${id}-hint` }),
          h('span', { class: 'hint', id: `${id}-hint` }, hint),
        );
      }),
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save policy'), h('a', { href: '#/' }, 'Back to queues')),
    );
  }
  // Built once, however many refreshes overlap: building it again would drop an edit.
  let loading = null;
  return {
    root,
    refresh() {
      loading ??= load().catch((err) => {
        loading = null;
        throw err;
      });
      return loading;
    },
  };
}
