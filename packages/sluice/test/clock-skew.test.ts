// Clock skew between worker hosts: the database clock decides leases. Worker processes
// whose wall clocks are an hour ahead and an hour behind claim jobs and run the
// maintenance tick; leases are still measured, and swept, by the database's now().
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { afterAll, makeSluice, sqlClient, testDatabase, uniqueQueue } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/skewed-clock.ts', import.meta.url));
const HOUR_MS = 3_600_000;

async function skewedWorker(skewMs: number, config: Record<string, unknown>) {
  const proc: ChildProcess = fork(FIXTURE, [], {
    execArgv: ['--import', 'tsx', '--conditions=development'],
    env: { ...process.env, SLUICE_CLOCK_SKEW_MS: String(skewMs), SLUICE_FIXTURE: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  afterAll(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  const started: string[] = [];
  let ready = false;
  proc.on('message', (m: { type: string; id?: string }) => {
    if (m.type === 'ready') ready = true;
    if (m.type === 'started') started.push(m.id!);
  });
  await waitFor(() => ready, { timeoutMs: 60_000, message: 'skewed worker ready' });
  return { proc, started };
}

test('workers an hour ahead and an hour behind: leases are taken, and swept, on the database clock', { timeout: 180_000 }, async () => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await sqlClient();
  const q = uniqueQueue('skew');
  const leaseSeconds = 3;
  await sluice.queues.put(q, { leaseSeconds, backoff: { baseMs: 0, maxMs: 0 } });
  const jobs = await sluice.sendMany(
    q,
    Array.from({ length: 4 }, (_, i) => ({ data: i })),
  );
  // Each holds two jobs and never finishes them (no heartbeat), and ticks every 200 ms.
  const ahead = await skewedWorker(HOUR_MS, { url: db.url, queue: q, mode: 'hang', concurrency: 2, maintenanceIntervalMs: 200 });
  const behind = await skewedWorker(-HOUR_MS, { url: db.url, queue: q, mode: 'hang', concurrency: 2, maintenanceIntervalMs: 200 });
  await waitFor(() => ahead.started.length === 2 && behind.started.length === 2, { timeoutMs: 60_000, message: 'both hold two jobs' });

  const { rows: leases } = await client.query(
    `SELECT extract(epoch FROM lease_expires_at - started_at)::float AS lease, extract(epoch FROM now() - started_at)::float AS age
     FROM sluice.job WHERE queue = $1 AND state = 'active'`,
    [q],
  );
  for (const { lease, age } of leases) {
    assert.equal(lease, leaseSeconds, 'lease length on the database clock');
    assert.ok(age >= 0 && age < 60, `claimed at the database's now, not an hour off (age ${age} s)`);
  }

  // Nobody heartbeats: every lease runs out and is swept by one of the skewed ticks.
  await waitFor(async () => (await Promise.all(jobs.map(({ id }) => sluice.get(id)))).every((j) => j?.errors.length === 1), {
    timeoutMs: 60_000,
    message: 'all four leases swept',
  });
  for (const { id } of jobs) {
    const [err] = (await sluice.get(id))!.errors;
    assert.equal(err!.name, 'LeaseExpired');
    const heldMs = new Date(err!.finishedAt).getTime() - new Date(err!.startedAt!).getTime();
    assert.ok(heldMs >= leaseSeconds * 1000, `not swept before its lease ran out (${heldMs} ms)`);
    assert.ok(heldMs < leaseSeconds * 1000 + 30_000, `swept soon after, not an hour late (${heldMs} ms)`);
  }
  for (const { proc } of [ahead, behind]) proc.kill('SIGKILL');
});

// Finding: the `now` option (documented for tests) is passed as p_now to the lease
// statements, so a process given a skewed `now` sets leases and judges their expiry on
// its own clock. Proposed fix in docs/RELIABILITY.md (Clock skew); until then, a todo.
