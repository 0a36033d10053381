// One job: its state, progress, log, payload, attempts and links, followed live over its event stream.
import { $, act, apiCall, authHeader, fmtTime, h, pretty, refused } from '../lib.js';

/**
 * Follows `/api/jobs/:id/events` (server-sent events, read through fetch so the bearer
 * token goes in a header): `onState(job)` for the state at connect and each change after,
 * `onNote({ progress } | { log })` for what its handler reports (and the lines kept at connect).
 * Resolves once the first event (or a refusal) arrived; `done` settles when the stream
 * ends (the job ended, or `stop()`).
 */
function followJob(id, onState, onNote) {
  const controller = new AbortController();
  let first;
  const arrived = new Promise((resolve, reject) => (first = { resolve, reject }));
  const done = (async () => {
    const response = await fetch(`/api/jobs/${id}/events`, { headers: authHeader(), signal: controller.signal });
    if (!response.ok) await refused(response);
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
        const field = (name) =>
          block
            .split('\n')
            .filter((l) => l.startsWith(`${name}: `))
            .map((l) => l.slice(name.length + 2))
            .join('\n');
        const event = field('event');
        if (event === 'state') onState(JSON.parse(field('data')));
        else if (event === 'gone') onState(null);
        else if (event === 'progress') onNote({ progress: JSON.parse(field('data')).progress });
        else if (event === 'log') onNote({ log: JSON.parse(field('data')) });
        first.resolve();
      }
    }
  })();
  done.then(
    () => first.resolve(),
    (err) => first.reject(err),
  );
  return { arrived, done, stop: () => controller.abort() };
}

export function jobView(id) {
  const body = h('div');
  const root = h(
    'section',
    { 'aria-labelledby': 'job-title' },
    h('h2', { id: 'job-title' }, `Job #${id}`),
    h('p', { class: 'legend', id: 'job-live' }, ''),
    body,
  );
  let following = null;
  // Its parents and children (dependsOn), read once per visit; their states as of then.
  let links = null;
  let shown = null;
  // Its handler's reports: the last progress, and the log lines streamed (by number).
  let progress = null;
  const logLines = new Map();
  const note = (n) => {
    if ('progress' in n) progress = n.progress;
    if (n.log) logLines.set(n.log.seq, n.log);
    if (shown) render(shown);
  };
  const live = (text) => ($('job-live').textContent = text);
  const linkList = (title, list, name) =>
    list.length === 0
      ? null
      : [
          h('h3', {}, `${title} (${list.length})`),
          h(
            'ul',
            { 'data-field': name },
            list.map((j) =>
              h('li', {}, h('a', { href: `#/jobs/${j.id}` }, `#${j.id}`), ` · ${j.queue ?? '(removed)'} · ${j.state ?? 'removed'}`),
            ),
          ),
        ];

  function render(job) {
    if (job && shown !== job) progress = job.progress ?? progress;
    shown = job;
    if (!job) return body.replaceChildren(h('p', {}, `Job ${id} does not exist (or retention removed it).`));
    const field = (label, value) => [h('dt', {}, label), h('dd', {}, value)];
    const actions = h('div', { class: 'actions' });
    if (['waiting', 'pending', 'active', 'claimed'].includes(job.state)) {
      actions.append(
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            on: { click: () => act(`Cancel job ${id}`, () => apiCall('POST', `/api/jobs/${id}/cancel`).then(() => `job ${id} cancelled`)) },
          },
          'Cancel job',
        ),
      );
    }
    if (job.state === 'dead' || job.state === 'cancelled') {
      actions.append(
        h(
          'button',
          {
            type: 'button',
            on: { click: () => act(`Replay job ${id}`, () => apiCall('POST', `/api/jobs/${id}/replay`).then(() => `job ${id} replayed`)) },
          },
          'Replay job',
        ),
      );
    }
    body.replaceChildren(
      h(
        'div',
        {},
        h(
          'dl',
          { class: 'fields' },
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
          field('Worker', job.workerId ?? '—'),
          field(
            'Progress',
            h('span', { id: 'job-progress' }, progress === null || progress === undefined ? '—' : JSON.stringify(progress)),
          ),
        ),
        actions,
        links ? linkList('Waits for', links.parents, 'parents') : null,
        links ? linkList('Jobs waiting for it', links.children, 'children') : null,
        logLines.size === 0
          ? null
          : [
              h('h3', {}, `Log (${logLines.size} lines${job.logCount > logLines.size ? ` of ${job.logCount}` : ''})`),
              h('pre', { id: 'job-log' }, [...logLines.values()].map((l) => `${l.seq} [attempt ${l.attempt}] ${l.line}`).join('\n')),
            ],
        h('h3', {}, 'Payload'),
        h('pre', { id: 'job-payload' }, pretty(job.data)),
        job.result !== null && job.result !== undefined
          ? [h('h3', {}, 'Result'), h('pre', { id: 'job-result' }, pretty(job.result))]
          : null,
        h('h3', {}, `Failed attempts (${job.errors.length})`),
        job.errors.length === 0 ? h('p', {}, 'None.') : null,
        job.errors.map((e) =>
          h(
            'div',
            { class: 'attempt' },
            h(
              'p',
              {},
              h('strong', {}, `Attempt ${e.attempt}`),
              ` · ${e.name ? `${e.name}: ` : ''}`,
              h('span', { class: 'error' }, e.message),
            ),
            h('p', { class: 'legend' }, `started ${fmtTime(e.startedAt)} · failed ${fmtTime(e.finishedAt)} · worker ${e.workerId ?? '—'}`),
            e.stack ? h('pre', {}, e.stack) : null,
          ),
        ),
      ),
    );
  }

  return {
    title: `Job ${id}`,
    root,
    // Updated by its event stream, not by the 2 s poll.
    live: false,
    // (Re)follows the job unless a stream is open: after a replay, a job that had ended runs again.
    async refresh() {
      if (!links) {
        apiCall('GET', `/api/jobs/${id}/links`).then(
          (l) => {
            links = l;
            if (shown) render(shown);
          },
          () => undefined,
        );
      }
      if (following) return;
      const stream = followJob(id, render, note);
      following = stream;
      live('Live: following this job’s state changes.');
      stream.done
        .then(
          () => following === stream && live('The job has ended; this page shows its final state.'),
          (err) => {
            if (err.name === 'AbortError') return;
            if (err.status === 404) render(null);
            else if (following === stream) live(`Live updates stopped: ${err.message}. Reload to follow again.`);
          },
        )
        .finally(() => {
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
