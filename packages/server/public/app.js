// The Sluice dashboard: plain DOM, no build step. Everything from the API is rendered as
// text (textContent, never innerHTML), so payloads and error messages cannot inject markup.
const TOKEN_KEY = 'sluice.adminToken';
const POLL_MS = 2000;
const $ = (id) => document.getElementById(id);

// ---- small helpers ---------------------------------------------------------------------

/** Builds an element: attributes by name, `on` handlers, children as nodes or text. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'on') for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
    else if (name === 'class') el.className = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
}

const fmtTime = (value) => (value ? new Date(value).toLocaleString() : '—');
const fmtCount = (n) => Number(n).toLocaleString('en-US');
/** A window's length: 500 ms, 1 s, 60 s, 5 min, 2 h. */
function fmtPeriod(ms) {
  if (ms % 1000 !== 0) return `${ms} ms`;
  if (ms < 120_000 || ms % 60_000 !== 0) return `${fmtCount(ms / 1000)} s`;
  if (ms < 7_200_000 || ms % 3_600_000 !== 0) return `${fmtCount(ms / 60_000)} min`;
  return `${fmtCount(ms / 3_600_000)} h`;
}
const fmtSeconds = (s) => (s < 1 ? `${Math.round(s * 1000)} ms` : s < 120 ? `${s.toFixed(1)} s` : `${Math.round(s / 60)} min`);
const pretty = (value) => JSON.stringify(value, null, 2) ?? 'null';

function setStatus(text, isError = false) {
  const el = $('status');
  el.textContent = text;
  el.classList.toggle('error', isError);
}

// ---- API -------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error;
  }
}

async function apiCall(method, path, body) {
  const headers = { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) ?? ''}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json().catch(() => null);
  if (response.status === 401 || response.status === 403) {
    signOut(response.status === 403 ? 'That is not the admin token.' : 'Please sign in.');
    throw new ApiError(response.status, data);
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

/** Runs an action from a button, reporting its outcome in the status line. */
async function act(label, fn) {
  try {
    const message = await fn();
    setStatus(message ?? `${label}: done`);
    await refresh();
  } catch (err) {
    setStatus(`${label} failed: ${err.message}`, true);
  }
}

// ---- sign in ---------------------------------------------------------------------------

function signOut(reason = '') {
  sessionStorage.removeItem(TOKEN_KEY);
  stopPolling();
  current?.dispose?.();
  current = null;
  $('view').replaceChildren();
  $('login').hidden = false;
  $('sign-out').hidden = true;
  $('job-lookup').hidden = true;
  $('login-error').textContent = reason;
  setStatus('');
}

$('login-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const token = $('admin-token').value.trim();
  sessionStorage.setItem(TOKEN_KEY, token);
  try {
    await apiCall('GET', '/api/queues');
    $('admin-token').value = '';
    showApp();
  } catch {
    // apiCall has signed out with the reason.
  }
});
$('sign-out').addEventListener('click', () => signOut('Signed out.'));
$('job-lookup').addEventListener('submit', (event) => {
  event.preventDefault();
  location.hash = `#/jobs/${$('job-lookup-id').value.trim()}`;
});

function showApp() {
  $('login').hidden = true;
  $('sign-out').hidden = false;
  $('job-lookup').hidden = false;
  discoverMissions();
  route();
}

// The missions platform is an application the server may or may not run: its pages show
// when the API description lists its routes (asking it directly would log a 404 when not).
async function discoverMissions() {
  try {
    const response = await fetch('/openapi.json');
    const spec = response.ok ? await response.json() : null;
    $('nav-missions').hidden = !spec?.paths?.['/api/missions/pool'];
  } catch {
    $('nav-missions').hidden = true;
  }
}

// ---- routing and polling ---------------------------------------------------------------

let current = null; // { refresh: () => Promise<void> }
let timer = null;

function stopPolling() {
  clearTimeout(timer);
  timer = null;
}

async function refresh() {
  if (!current) return;
  try {
    await current.refresh();
    if ($('status').dataset.fromPoll) {
      delete $('status').dataset.fromPoll;
      setStatus('');
    }
  } catch (err) {
    if (err.status !== 401 && err.status !== 403) {
      setStatus(`Could not refresh: ${err.message}`, true);
      $('status').dataset.fromPoll = '1';
    }
  }
}

function schedulePoll() {
  stopPolling();
  timer = setTimeout(async () => {
    await refresh();
    if (current?.live) schedulePoll();
  }, POLL_MS);
}

function route() {
  current?.dispose?.();
  if (!sessionStorage.getItem(TOKEN_KEY)) return signOut();
  const hash = location.hash || '#/';
  let match;
  if ((match = /^#\/jobs\/(\d+)$/.exec(hash))) current = jobView(match[1]);
  else if ((match = /^#\/queues\/([^/]+)$/.exec(hash))) current = policyView(decodeURIComponent(match[1]));
  else if (hash === '#/dead' || hash.startsWith('#/dead?')) current = deadLettersView();
  else if (hash === '#/missions') current = missionsView();
  else if (hash === '#/missions/qa') current = qaView();
  else current = overviewView();
  $('view').replaceChildren(current.root);
  document.title = `${current.title} · Sluice`;
  refresh().then(() => current?.live && schedulePoll());
}
window.addEventListener('hashchange', route);

// ---- queues overview -------------------------------------------------------------------

function bar(label, value, cap, kind, text = cap === null ? `${value} (no cap)` : `${value} / ${cap}`) {
  const scale = cap ?? Math.max(value, 1);
  const fill = h('div', { class: `fill ${kind}${cap !== null && value > cap ? ' over' : ''}` });
  fill.style.width = `${Math.min(100, (value / scale) * 100)}%`;
  return h('div', { class: 'bar', 'data-kind': kind },
    h('span', {}, label),
    h('div', { class: 'track', role: 'meter', 'aria-label': `${label}: ${text}`, 'aria-valuenow': value, 'aria-valuemin': 0, 'aria-valuemax': scale }, fill),
    h('span', { class: 'value' }, text));
}

function chart(queue, buckets) {
  const width = 300;
  const height = 70;
  const plot = height - 14;
  const max = Math.max(1, ...buckets.map((b) => b.completed + b.dead));
  const step = width / Math.max(buckets.length, 1);
  const completed = buckets.reduce((n, b) => n + b.completed, 0);
  const dead = buckets.reduce((n, b) => n + b.dead, 0);
  const summary = `${queue}: ${completed} completed and ${dead} dead in the last 15 minutes`;
  const root = svg('svg', { class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': summary, preserveAspectRatio: 'none' });
  root.append(svg('title', {}, summary));
  buckets.forEach((b, i) => {
    const hc = (b.completed / max) * plot;
    const hd = (b.dead / max) * plot;
    const x = i * step + 1;
    if (hc) root.append(svg('rect', { class: 'completed', x, y: plot - hc, width: step - 2, height: hc }, svg('title', {}, `${fmtTime(b.at)}: ${b.completed} completed`)));
    if (hd) root.append(svg('rect', { class: 'dead', x, y: plot - hc - hd, width: step - 2, height: hd }, svg('title', {}, `${fmtTime(b.at)}: ${b.dead} dead`)));
  });
  root.append(svg('text', { class: 'axis', x: 0, y: height - 2 }, '15 min ago'));
  root.append(svg('text', { class: 'axis', x: width, y: height - 2, 'text-anchor': 'end' }, `now · peak ${max}/30 s`));
  return root;
}

// What a queue's rate and budget have used of their windows (stats.rateUse, stats.budgetUse):
// one entry per kind of window.
const WINDOWS = [
  { use: 'rateUse', label: 'Rate', noun: 'starts' },
  { use: 'budgetUse', label: 'Budget', noun: 'units' },
];

function windowBars(s) {
  return WINDOWS.filter((w) => s[w.use]).map((w) => {
    const { used, limit, periodMs } = s[w.use];
    const el = bar(w.label, used, limit, w.use, `${w.noun} ${fmtCount(used)}/${fmtCount(limit)} per ${fmtPeriod(periodMs)}`);
    el.classList.add('window');
    return el;
  });
}

function queueCard(q, buckets) {
  const s = q.stats;
  const number = (label, value, name) => h('div', { 'data-field': name }, h('dt', {}, label), h('dd', {}, value));
  const windowed = WINDOWS.some((w) => s[w.use]);
  return h('article', { class: 'queue', 'data-queue': q.name, 'aria-labelledby': `queue-${q.name}` },
    h('header', {},
      h('h3', { id: `queue-${q.name}` }, h('a', { href: `#/queues/${encodeURIComponent(q.name)}` }, q.name)),
      q.paused ? h('span', { class: 'badge' }, 'paused') : null),
    bar('Ready', s.ready, q.maxPending, 'ready'),
    bar('Scheduled', s.scheduled, null, 'scheduled'),
    bar('Active', s.active, q.concurrency, 'active'),
    windowBars(s),
    h('dl', { class: 'numbers' },
      number('Lag', fmtSeconds(s.oldestReadyAgeSeconds), 'lag'),
      // Ready jobs beyond the room left in the rate's and budget's windows.
      windowed ? number('Waiting on rate/budget', fmtCount(s.heldBack ?? 0), 'heldBack') : null,
      // Leased by workers ahead of a slot of the cap: neither ready nor active.
      number('Claimed ahead', s.claimedAhead ?? 0, 'claimedAhead'),
      number('Shed (503)', q.refusals.shed, 'shed'),
      number('Key-limited (429)', q.refusals.keyLimited, 'keyLimited'),
      number('Dead', s.dead, 'dead')),
    chart(q.name, buckets),
    h('p', { class: 'legend' }, 'Finished per 30 s:', h('span', { class: 'swatch completed' }), 'completed', h('span', { class: 'swatch dead' }), 'dead'),
    h('div', { class: 'actions' },
      q.paused
        ? h('button', { type: 'button', on: { click: () => act(`Resume ${q.name}`, () => apiCall('POST', `/api/queues/${encodeURIComponent(q.name)}/resume`).then(() => `${q.name} resumed`)) } }, `Resume ${q.name}`)
        : h('button', { type: 'button', on: { click: () => act(`Pause ${q.name}`, () => apiCall('POST', `/api/queues/${encodeURIComponent(q.name)}/pause`).then(() => `${q.name} paused`)) } }, `Pause ${q.name}`),
      h('a', { href: `#/queues/${encodeURIComponent(q.name)}` }, 'Edit policy'),
      h('a', { href: `#/dead?queue=${encodeURIComponent(q.name)}` }, 'Dead letters')));
}

function overviewView() {
  const list = h('div', { class: 'queues', id: 'queue-list' });
  const create = h('form', { class: 'inline', id: 'create-queue' },
    h('label', { for: 'new-queue' }, 'New queue'),
    h('input', { id: 'new-queue', name: 'name', required: true, pattern: '[A-Za-z0-9][A-Za-z0-9_.:\\-]{0,127}' }),
    h('button', { type: 'submit' }, 'Create'));
  create.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = create.elements.name.value.trim();
    act(`Create ${name}`, async () => {
      await apiCall('PUT', `/api/queues/${encodeURIComponent(name)}`, {});
      location.hash = `#/queues/${encodeURIComponent(name)}`;
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
      const charts = await Promise.all(
        queues.map((q) => apiCall('GET', `/api/queues/${encodeURIComponent(q.name)}/throughput`).then((r) => r.buckets)),
      );
      list.replaceChildren(...(queues.length ? queues.map((q, i) => queueCard(q, charts[i])) : [h('p', {}, 'No queues yet: create one below, or with PUT /api/queues/:queue.')]));
    },
  };
}

// ---- dead letters ----------------------------------------------------------------------

function deadLettersView() {
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
  const form = h('form', { class: 'inline', id: 'dead-filter' },
    h('label', { for: 'dead-queue' }, 'Queue'), queueSelect,
    h('label', { for: 'dead-error' }, 'Error contains'), errorInput,
    h('button', { type: 'submit' }, 'Filter'),
    h('button', { type: 'button', id: 'replay-all', on: { click: () => act('Replay all matching', async () => {
      const r = await apiCall('POST', '/api/dead-letters/replay', filter());
      return `replayed ${r.replayed} dead job(s)${r.skipped ? `, ${r.skipped} skipped (singleton key in use)` : ''}`;
    }) } }, 'Replay all matching'),
    h('button', { type: 'button', class: 'danger', on: { click: () => {
      if (!confirm('Delete every matching dead job for good?')) return;
      act('Purge matching', async () => `purged ${(await apiCall('POST', '/api/dead-letters/purge', filter())).purged} dead job(s)`);
    } } }, 'Purge all matching'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    refresh();
  });
  const table = h('table', { 'aria-labelledby': 'dead-title' },
    h('thead', {}, h('tr', {}, ...['Job', 'Queue', 'Last error', 'Attempts', 'Died', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
    rows);
  const root = h('section', { 'aria-labelledby': 'dead-title' }, h('h2', { id: 'dead-title' }, 'Dead letters'), form, summary, table);
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
      rows.replaceChildren(...page.jobs.map((job) => {
        const last = job.errors[job.errors.length - 1];
        return h('tr', { 'data-job': job.id },
          h('td', {}, h('a', { href: `#/jobs/${job.id}` }, `#${job.id}`)),
          h('td', {}, job.queue),
          h('td', { class: 'message' }, last ? `${last.name ? `${last.name}: ` : ''}${last.message}` : '—'),
          h('td', {}, `${job.attempts}/${job.maxAttempts}`),
          h('td', {}, fmtTime(job.finishedAt)),
          h('td', {}, h('button', { type: 'button', on: { click: () => act(`Replay job ${job.id}`, () => apiCall('POST', `/api/jobs/${job.id}/replay`).then(() => `job ${job.id} replayed`)) } }, `Replay #${job.id}`)));
      }));
    },
  };
}

// ---- one job ---------------------------------------------------------------------------

/**
 * Follows `/api/jobs/:id/events` (server-sent events, read through fetch so the bearer
 * token goes in a header): `onState(job)` for the state at connect and each change after.
 * Resolves once the first event (or a refusal) arrived; `done` settles when the stream
 * ends (the job ended, or `stop()`).
 */
function followJob(id, onState) {
  const controller = new AbortController();
  let first;
  const arrived = new Promise((resolve, reject) => (first = { resolve, reject }));
  const done = (async () => {
    const response = await fetch(`/api/jobs/${id}/events`, {
      headers: { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) ?? ''}` },
      signal: controller.signal,
    });
    if (!response.ok) {
      const data = await response.json().catch(() => null);
      if (response.status === 401 || response.status === 403) signOut(response.status === 403 ? 'That is not the admin token.' : 'Please sign in.');
      throw new ApiError(response.status, data);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const field = (name) => block.split('\n').filter((l) => l.startsWith(`${name}: `)).map((l) => l.slice(name.length + 2)).join('\n');
        if (field('event') === 'state') onState(JSON.parse(field('data')));
        else if (field('event') === 'gone') onState(null);
        first.resolve();
      }
    }
  })();
  done.then(() => first.resolve(), (err) => first.reject(err));
  return { arrived, done, stop: () => controller.abort() };
}

function jobView(id) {
  const body = h('div');
  const root = h('section', { 'aria-labelledby': 'job-title' }, h('h2', { id: 'job-title' }, `Job #${id}`), h('p', { class: 'legend', id: 'job-live' }, ''), body);
  let following = null;
  // Its parents and children (dependsOn), read once per visit; their states as of then.
  let links = null;
  let shown = null;
  const live = (text) => ($('job-live').textContent = text);
  const linkList = (title, list, name) => list.length === 0 ? null : [
    h('h3', {}, `${title} (${list.length})`),
    h('ul', { 'data-field': name }, list.map((j) => h('li', {}, h('a', { href: `#/jobs/${j.id}` }, `#${j.id}`), ` · ${j.queue ?? '(removed)'} · ${j.state ?? 'removed'}`))),
  ];

  function render(job) {
    shown = job;
    if (!job) return body.replaceChildren(h('p', {}, `Job ${id} does not exist (or retention removed it).`));
    const field = (label, value) => [h('dt', {}, label), h('dd', {}, value)];
    const actions = h('div', { class: 'actions' });
    if (job.state === 'waiting' || job.state === 'pending' || job.state === 'active') {
      actions.append(h('button', { type: 'button', class: 'danger', on: { click: () => act(`Cancel job ${id}`, () => apiCall('POST', `/api/jobs/${id}/cancel`).then(() => `job ${id} cancelled`)) } }, 'Cancel job'));
    }
    if (job.state === 'dead' || job.state === 'cancelled') {
      actions.append(h('button', { type: 'button', on: { click: () => act(`Replay job ${id}`, () => apiCall('POST', `/api/jobs/${id}/replay`).then(() => `job ${id} replayed`)) } }, 'Replay job'));
    }
    body.replaceChildren(h('div', {},
      h('dl', { class: 'fields' },
        field('State', h('strong', { id: 'job-state' }, job.state)),
        field('Queue', h('a', { href: `#/queues/${encodeURIComponent(job.queue)}` }, job.queue)),
        field('Key', job.key ?? '—'),
        field('Singleton key', job.singletonKey ?? '—'),
        field('Priority', job.priority),
        field('Attempts', `${job.attempts} of ${job.maxAttempts}`),
        field('Created', fmtTime(job.createdAt)),
        field('Runs at', fmtTime(job.runAt)),
        field('Started', fmtTime(job.startedAt)),
        field('Finished', fmtTime(job.finishedAt)),
        field('Lease expires', fmtTime(job.leaseExpiresAt)),
        field('Worker', job.workerId ?? '—')),
      actions,
      links ? linkList('Waits for', links.parents, 'parents') : null,
      links ? linkList('Jobs waiting for it', links.children, 'children') : null,
      h('h3', {}, 'Payload'), h('pre', { id: 'job-payload' }, pretty(job.data)),
      job.result !== null && job.result !== undefined ? [h('h3', {}, 'Result'), h('pre', { id: 'job-result' }, pretty(job.result))] : null,
      h('h3', {}, `Failed attempts (${job.errors.length})`),
      job.errors.length === 0 ? h('p', {}, 'None.') : null,
      job.errors.map((e) => h('div', { class: 'attempt' },
        h('p', {}, h('strong', {}, `Attempt ${e.attempt}`), ` · ${e.name ? `${e.name}: ` : ''}`, h('span', { class: 'error' }, e.message)),
        h('p', { class: 'legend' }, `started ${fmtTime(e.startedAt)} · failed ${fmtTime(e.finishedAt)} · worker ${e.workerId ?? '—'}`),
        e.stack ? h('pre', {}, e.stack) : null))));
  }

  return {
    title: `Job ${id}`,
    root,
    // Updated by its event stream, not by the 2 s poll.
    live: false,
    // (Re)follows the job unless a stream is open: after a replay, a job that had ended runs again.
    async refresh() {
      if (!links) {
        apiCall('GET', `/api/jobs/${id}/links`).then((l) => {
          links = l;
          if (shown) render(shown);
        }, () => undefined);
      }
      if (following) return;
      const stream = followJob(id, render);
      following = stream;
      live('Live: following this job’s state changes.');
      stream.done.then(
        () => following === stream && live('The job has ended; this page shows its final state.'),
        (err) => {
          if (err.name === 'AbortError') return;
          if (err.status === 404) render(null);
          else if (following === stream) live(`Live updates stopped: ${err.message}. Reload to follow again.`);
        },
      ).finally(() => {
        if (following === stream) following = null;
      });
      try {
        await stream.arrived;
      } catch (err) {
        if (err.status !== 404) throw err;
      }
    },
    dispose() {
      following?.stop();
      following = null;
    },
  };
}

// ---- a queue's policy ------------------------------------------------------------------

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
  ['rateLimit.periodMs', 'Rate window (ms)', 'the rate\'s window, e.g. 1000'],
  ['budget.units', 'Budget: units per window', 'at most this much of the jobs\' cost starts in any window; empty = no budget'],
  ['budget.periodMs', 'Budget window (ms)', 'the budget\'s window, e.g. 60000'],
  ['maxWaitMs', 'Max wait (ms)', 'with a rate or a budget: sends that would wait longer get 503; empty = none'],
];
const NULLABLE = new Set(['concurrency', 'perKeyConcurrency', 'maxPerKey', 'maxPending', 'maxWaitMs']);
/** Policy fields that are a window, { amount, periodMs } or null: null when every input is empty. */
const WINDOW_POLICIES = new Set(['rateLimit', 'budget']);

function policyView(name) {
  const form = h('form', { class: 'policy', id: 'policy-form' });
  const root = h('section', { 'aria-labelledby': 'policy-title' }, h('h2', { id: 'policy-title' }, `Queue ${name}: policy`), form);
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
        else if (b) { if (value !== null) policy[a][b] = value; }
        else if (value !== null || NULLABLE.has(a)) policy[a] = value;
      }
      for (const [a, fields] of Object.entries(windows)) {
        policy[a] = Object.values(fields).every((v) => v === null) ? null : fields;
      }
      loaded = await apiCall('PUT', `/api/queues/${encodeURIComponent(name)}`, policy);
      return `policy of ${name} saved`;
    });
  });
  return {
    title: `Queue ${name}`,
    root,
    live: false,
    async refresh() {
      if (loaded && form.childElementCount) return;
      loaded = await apiCall('GET', `/api/queues/${encodeURIComponent(name)}`);
      form.replaceChildren(
        ...POLICY_FIELDS.map(([path, label, hint]) => {
          const [a, b] = path.split('.');
          const value = b ? loaded[a]?.[b] : loaded[a];
          const id = `policy-${path.replace('.', '-')}`;
          return h('div', {},
            h('label', { for: id }, label),
            h('input', { id, name: path, inputmode: 'decimal', value: value ?? '', 'aria-describedby': `${id}-hint` }),
            h('span', { class: 'hint', id: `${id}-hint` }, hint));
        }),
        h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save policy'), h('a', { href: '#/' }, 'Back to queues')));
    },
  };
}

// ---- missions: the warm pool and the generation queue ------------------------------------

const MISSION_QUEUES = ['missions.generate', 'missions.prove', 'missions.grade'];

function sandboxNote(status) {
  const ok = status.sandbox.state === 'isolated';
  return h('p', { id: 'missions-sandbox', class: ok ? 'note' : 'note warning', 'data-state': status.sandbox.state },
    ok ? 'Sandbox: ' : 'Sandbox problem: ', status.sandbox.detail);
}

/** Which kernel bounds every proof and grading run gets, and what enforces each. */
function boundsList(bounds) {
  if (!bounds) return h('p', { id: 'missions-bounds', class: 'note warning' }, 'Runs are refused: no bounds can be had here (see above).');
  const row = (label, value, by) => h('tr', {}, h('th', { scope: 'row' }, label), h('td', {}, value), h('td', {}, by));
  return h('table', { id: 'missions-bounds', 'aria-label': 'Bounds of each run' },
    h('thead', {}, h('tr', {}, ...['Bound', 'Limit', 'Enforced by'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {},
      row('Processes and threads', String(bounds.processes.limit), bounds.processes.enforcedBy),
      row('Memory', `${bounds.memory.limitMb} MiB ${bounds.memory.scope === 'run' ? 'for the whole run' : 'per process'}`, bounds.memory.enforcedBy),
      row('CPU', bounds.cpu.cores === null ? `time per ${bounds.cpu.timeLimit}` : `${bounds.cpu.cores} core(s), time per ${bounds.cpu.timeLimit}`, bounds.cpu.enforcedBy),
      row('Disk', bounds.disk.workspaceMb === null ? `${bounds.disk.fileMb} MiB per file` : `${bounds.disk.workspaceMb} MiB workspace, ${bounds.disk.fileMb} MiB per file`, bounds.disk.enforcedBy)));
}

function missionsView() {
  const body = h('div');
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
      const charts = await Promise.all(
        shown.map((q) => apiCall('GET', `/api/queues/${encodeURIComponent(q.name)}/throughput`).then((r) => r.buckets)),
      );
      const pending = pool.domains.reduce((n, d) => n + d.pending, 0);
      const rows = pool.domains.map((d) => h('tr', { 'data-domain': d.domain },
        h('th', { scope: 'row' }, d.domain),
        h('td', { 'data-field': 'servable' }, d.servable),
        h('td', { 'data-field': 'pending' }, d.pending),
        h('td', { 'data-field': 'retired' }, d.retired),
        h('td', { 'data-field': 'serves' }, d.serves)));
      body.replaceChildren(
        sandboxNote(status),
        boundsList(status.sandbox.bounds),
        h('p', { id: 'missions-caps' },
          `Caps: generation ${status.caps.generation} at once (the model's budget); `,
          `proofs ${status.caps.proving} and gradings ${status.caps.grading} at once (test suites on the host's cores).`),
        h('p', {}, `Generator: ${status.generator}. `, status.autoApprove ? 'Proven missions are served at once (auto-approve).' : 'Proven missions wait for QA review before they are served.'),
        h('h3', {}, 'Warm pool per domain'),
        rows.length
          ? h('table', { id: 'pool-table', 'aria-label': 'Warm pool per domain' },
            h('thead', {}, h('tr', {}, ...['Domain', 'Servable', 'Pending review', 'Retired', 'Serves'].map((t) => h('th', { scope: 'col' }, t)))),
            h('tbody', {}, rows))
          : h('p', {}, 'No missions yet: request one (POST /api/missions/request), or wait for the refill schedule.'),
        h('p', {}, h('a', { href: '#/missions/qa', id: 'qa-link' }, `QA review: ${pending} mission(s) pending`)),
        h('h3', {}, 'Generation, proof and grading queues'),
        h('div', { class: 'queues' }, shown.map((q, i) => queueCard(q, charts[i]))));
    },
  };
}

// ---- missions: QA review -----------------------------------------------------------------

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

function qaView() {
  const list = h('div', { id: 'qa-list' });
  const summary = h('p', { id: 'qa-summary' });
  const root = h('section', { 'aria-labelledby': 'qa-title' },
    h('h2', { id: 'qa-title' }, 'Missions: QA review'),
    h('p', {}, h('a', { href: '#/missions' }, 'Back to the pool'), ' · ', h('button', { type: 'button', on: { click: () => refresh() } }, 'Refresh')),
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

// ---- start -----------------------------------------------------------------------------

if (sessionStorage.getItem(TOKEN_KEY)) showApp();
else signOut();
