// Connection faults: the database kills Sluice's connections mid-run. Workers and the
// listener reconnect and resubscribe; nothing is lost or claimed twice.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { makeSluice, sqlClient, testDatabase, uniqueQueue } from './helpers.js';

async function terminate(applicationName: string): Promise<number> {
  const db = await testDatabase();
  const admin = await sqlClient();
  const { rows } = await admin.query(
    `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
     WHERE datname = $1 AND application_name LIKE $2 AND pid <> pg_backend_pid()`,
    [db.name, `${applicationName}%`],
  );
  return rows[0].n;
}

test('pg_terminate_backend of the worker and listener connections: they reconnect, resubscribe, and every job runs once', async () => {
  const worker = await makeSluice({ applicationName: 'victim' });
  const producer = await makeSluice({ applicationName: 'producer' });
  const q = uniqueQueue();
  await producer.queues.put(q, { concurrency: 3 });
  const runs = new Map<string, number>();
  const w = worker.work(q, { concurrency: 3, pollIntervalMs: 3_600_000 }, (job) => void runs.set(job.id, (runs.get(job.id) ?? 0) + 1));
  const first = await producer.sendMany(
    q,
    Array.from({ length: 20 }, (_, i) => ({ data: i })),
  );
  await waitFor(() => first.every((r) => runs.has(r.id)), { message: 'first batch done' });
  await waitFor(() => w.isIdle, { message: 'worker idle' });
  // Both connections up before the kill (on a busy host the listener can still be connecting).
  const db = await testDatabase();
  const admin = await sqlClient();
  await waitFor(
    async () =>
      (
        await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'victim%'", [
          db.name,
        ])
      ).rows[0].n >= 2,
    { message: 'the worker pool and listener connected' },
  );

  const killed = await terminate('victim');
  assert.ok(killed >= 2, `killed the pool and listener connections (${killed})`);
  // With a one-hour poll, only a resubscribed listener can hear about these jobs.
  const second = await producer.sendMany(
    q,
    Array.from({ length: 20 }, (_, i) => ({ data: i })),
  );
  await waitFor(() => second.every((r) => runs.has(r.id)), { timeoutMs: 30_000, message: 'second batch done after reconnect' });
  await w.stop();
  assert.ok(
    [...runs.values()].every((n) => n === 1),
    'no job ran twice',
  );
  for (const { id } of [...first, ...second]) assert.equal((await producer.get(id))?.state, 'completed');
  assert.ok(
    worker.logged.some((r) => /listener disconnected|connection lost/.test(r.msg ?? '')),
    'the loss was logged',
  );
});

test('pg_terminate_backend mid-run, handlers in flight: the worker keeps going, and a notification after the kill still wakes it', async () => {
  const worker = await makeSluice({ applicationName: 'midrun' });
  const producer = await makeSluice({ applicationName: 'producer' });
  const admin = await sqlClient();
  const q = uniqueQueue('midrun');
  await producer.queues.put(q, { concurrency: 5 });
  const runs = new Map<string, number>();
  const w = worker.work(q, { concurrency: 5, pollIntervalMs: 3_600_000 }, async (job) => {
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
    await new Promise((r) => setTimeout(r, 30));
  });
  const sent = await producer.sendMany(
    q,
    Array.from({ length: 200 }, (_, i) => ({ data: i })),
  );
  await waitFor(() => runs.size >= 30, { message: 'the run is under way' });

  const killed = await terminate('midrun');
  const { completed } = await producer.stats(q);
  assert.ok(killed >= 2 && completed < 200, `killed ${killed} connections with ${200 - completed} jobs to go`);
  await waitFor(async () => (await producer.stats(q)).completed === 200, { timeoutMs: 60_000, message: 'the run finished after the kill' });

  // Polling is hourly: only the resubscribed listener can hear about this one.
  const db = await testDatabase();
  await waitFor(
    async () =>
      (
        await admin.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = 'midrun:listener' AND query LIKE 'LISTEN%'",
          [db.name],
        )
      ).rowCount,
    { timeoutMs: 60_000, message: 'the listener is back' },
  );
  await waitFor(() => w.isIdle, { message: 'worker idle' });
  const [late] = await producer.sendMany(q, [{ data: 'late' }]);
  await waitFor(() => runs.has(late!.id), { timeoutMs: 30_000, message: 'the notification woke the worker' });
  await w.stop();
  assert.ok(
    sent.every(({ id }) => runs.get(id) === 1),
    'no job ran twice',
  );
});
