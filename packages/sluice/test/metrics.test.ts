// Prometheus metrics: gauges counted from the table, counters from what the process did,
// the text checked by promtool where Debian's prometheus package provides it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { KeyLimitError, QueueFullError } from '../src/index.js';
import { makeSluice, uniqueQueue } from './helpers.js';

function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
    const labelPart = line.slice(name.length).split(' ')[0]!;
    if (want.every((w) => labelPart.includes(w))) return Number(line.split(' ').pop());
  }
  return undefined;
}

test('metrics: gauges per queue and state, counters for sends, refusals, completions, failures and deaths', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 4, maxPending: 3, maxPerKey: 1, maxAttempts: 1 });
  await sluice.send(q, {}, { key: 'a' });
  await assert.rejects(sluice.send(q, {}, { key: 'a' }), KeyLimitError);
  await sluice.sendMany(q, [{ data: 1 }, { data: 2 }]);
  await assert.rejects(sluice.send(q, {}), QueueFullError);
  const done = new Promise<void>((resolve) => {
    let n = 0;
    const count = () => ++n === 3 && resolve();
    sluice.on('completed', (e: { ids: string[] }) => e.ids.forEach(count));
    sluice.on('dead', count);
  });
  const worker = sluice.work(q, { concurrency: 2 }, (job) => {
    if (job.data === 2) throw new Error('two fails');
  });
  await done;
  await worker.stop();
  await sluice.send(q, {}, { delayMs: 60_000 });
  const text = await sluice.metrics.text();
  assert.equal(sample(text, 'sluice_jobs_sent_total', { queue: q }), 4);
  assert.equal(sample(text, 'sluice_sends_shed_total', { queue: q }), 1);
  assert.equal(sample(text, 'sluice_sends_key_limited_total', { queue: q }), 1);
  assert.equal(sample(text, 'sluice_jobs_completed_total', { queue: q }), 2);
  assert.equal(sample(text, 'sluice_jobs_failed_total', { queue: q }), 1);
  assert.equal(sample(text, 'sluice_jobs_dead_total', { queue: q }), 1);
  assert.equal(sample(text, 'sluice_jobs', { queue: q, state: 'dead' }), 1);
  assert.equal(sample(text, 'sluice_jobs', { queue: q, state: 'scheduled' }), 1);
  assert.equal(sample(text, 'sluice_jobs', { queue: q, state: 'ready' }), 0);
  assert.equal(sample(text, 'sluice_queue_concurrency_limit', { queue: q }), 4);
  assert.equal(sample(text, 'sluice_job_run_duration_seconds_count', { queue: q }), 3);
  assert.equal(sample(text, 'sluice_job_pickup_delay_seconds_count', { queue: q }), 3);
  assert.match(text, /# TYPE sluice_jobs_sent_total counter/);
  assert.match(text, /# TYPE sluice_job_run_duration_seconds histogram/);
});

test('gauges are cached for a few seconds, then read again from the table', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const ready = async () => sample(await sluice.metrics.text(), 'sluice_jobs', { queue: q, state: 'ready' });
  assert.equal(await ready(), 0);
  await sluice.send(q, {});
  assert.equal(await ready(), 0, 'served from the cache');
  await waitFor(async () => (await ready()) === 1, { timeoutMs: 30_000, message: 'the cache expires' });
});

const PROMTOOL = '/usr/bin/promtool';
test(
  'promtool accepts the exposition text',
  { skip: existsSync(PROMTOOL) ? false : 'promtool (Debian package prometheus) is not installed' },
  async () => {
    const sluice = await makeSluice();
    const q = uniqueQueue();
    await sluice.queues.put(q, { concurrency: 2 });
    await sluice.send(q, {});
    const text = await sluice.metrics.text();
    const child = execFile(PROMTOOL, ['check', 'metrics']);
    child.stdin!.end(text);
    const [code, output] = await new Promise<[number, string]>((resolve) => {
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (out += d));
      child.on('exit', (c) => resolve([c ?? 1, out]));
    });
    assert.equal(code, 0, output);
  },
);

test('a rate and a budget show what their current windows have used, read from the table', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { rateLimit: { count: 5, periodMs: 600_000 }, budget: { units: 100, periodMs: 600_000 } });
  await sluice.sendMany(
    q,
    [7, 11].map((cost) => ({ data: null, cost })),
  );
  await sluice.claim(q, { max: 2 });
  const plain = uniqueQueue();
  await sluice.queues.put(plain, {});
  const text = await sluice.metrics.text();
  assert.equal(sample(text, 'sluice_queue_rate_limit', { queue: q }), 5);
  assert.equal(sample(text, 'sluice_queue_rate_window_starts', { queue: q }), 2);
  assert.equal(sample(text, 'sluice_queue_budget_units', { queue: q }), 100);
  assert.equal(sample(text, 'sluice_queue_budget_window_units', { queue: q }), 18);
  assert.equal(sample(text, 'sluice_jobs', { queue: plain, state: 'ready' }), 0, 'the plain queue is in this scrape');
  assert.equal(sample(text, 'sluice_queue_rate_window_starts', { queue: plain }), undefined, 'absent without a rate');
});

test('the ready jobs a rate or a budget holds back, read at scrape', async () => {
  const sluice = await makeSluice();
  const rated = uniqueQueue();
  await sluice.queues.put(rated, { rateLimit: { count: 2, periodMs: 600_000 } });
  await sluice.sendMany(
    rated,
    Array.from({ length: 5 }, (_, i) => ({ data: i })),
  );
  assert.equal((await sluice.claim(rated, { max: 5 })).length, 2);
  const budgeted = uniqueQueue();
  await sluice.queues.put(budgeted, { budget: { units: 100, periodMs: 600_000 } });
  await sluice.sendMany(
    budgeted,
    Array.from({ length: 5 }, () => ({ data: null, cost: 30 })),
  );
  const plain = uniqueQueue();
  await sluice.queues.put(plain, {});
  await sluice.send(plain, null);
  const text = await sluice.metrics.text();
  assert.equal(sample(text, 'sluice_queue_rate_held_jobs', { queue: rated }), 3, 'the window is full: every ready job');
  assert.equal(sample(text, 'sluice_queue_rate_held_jobs', { queue: budgeted }), 2, 'three of cost 30 fit in 100');
  assert.equal(sample(text, 'sluice_jobs', { queue: plain, state: 'ready' }), 1, 'the plain queue is in this scrape');
  assert.equal(sample(text, 'sluice_queue_rate_held_jobs', { queue: plain }), undefined, 'absent without a rate or a budget');
  assert.match(text, /# TYPE sluice_queue_rate_held_jobs gauge/);
});

test('the lag gauge is the age of the oldest ready job, and active reads against the cap gauge', { timeout: 60_000 }, async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, { concurrency: 3 });
  // Ready for two minutes already: the lag is at least that.
  const dueSince = new Date(Date.now() - 120_000);
  await sluice.sendMany(
    q,
    Array.from({ length: 5 }, (_, i) => ({ data: i, runAt: dueSince })),
  );
  const gauges = async () => {
    const text = await sluice.metrics.text();
    return {
      lag: sample(text, 'sluice_queue_oldest_ready_age_seconds', { queue: q })!,
      active: sample(text, 'sluice_jobs', { queue: q, state: 'active' }),
      ready: sample(text, 'sluice_jobs', { queue: q, state: 'ready' }),
      cap: sample(text, 'sluice_queue_concurrency_limit', { queue: q }),
    };
  };
  const before = await gauges();
  assert.ok(before.lag >= 119 && before.lag < 600, `lag ${before.lag} s`);
  assert.equal(before.active, 0);
  assert.equal(before.ready, 5);
  assert.equal(before.cap, 3);

  const releases: (() => void)[] = [];
  let open = false;
  const worker = sluice.work(q, { concurrency: 5 }, () => (open ? undefined : new Promise<void>((r) => releases.push(r))));
  await waitFor(() => releases.length === 3, { timeoutMs: 30_000, message: 'three handlers running' });
  // At the cap: three active against a limit of three, the other two still ready and lagging.
  const atCap = await waitFor(
    async () => {
      const g = await gauges();
      return g.active === 3 ? g : null;
    },
    { timeoutMs: 30_000, message: 'the gauges see three active' },
  );
  assert.equal(atCap.cap, 3);
  assert.equal(atCap.ready, 2);
  assert.ok(atCap.lag >= 119, `the two left are as late as ever (${atCap.lag} s)`);
  assert.equal(releases.length, 3, 'never more running than the cap');

  // Drained: no lag, nothing active.
  open = true;
  releases.forEach((release) => release());
  await waitFor(async () => (await sluice.stats(q)).completed === 5, { timeoutMs: 30_000, message: 'all five completed' });
  await worker.stop();
  await waitFor(
    async () => {
      const g = await gauges();
      return g.active === 0 && g.lag === 0 && g.ready === 0;
    },
    { timeoutMs: 30_000, message: 'the gauges see the queue drained' },
  );
});
