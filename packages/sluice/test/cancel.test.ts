// Cancelling running jobs across real worker processes: the cancel reaches the handler's
// signal through the cancel channel, the cap holds while cancelled handlers are still
// running (a cancelled job keeps its slot until its handler returns), and a worker killed
// with cancelled jobs in hand leaves them cancelled by the sweep, not retried.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { forkFixture, makeSluice, sqlClient, testDatabase, uniqueQueue, type ForkedFixture } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/cancel-worker.ts', import.meta.url));

interface Message {
  type: string;
  id?: string;
  at?: string;
  reason?: string;
}

type Child = ForkedFixture<Message>;

const spawnWorker = (config: Record<string, unknown>) => forkFixture<Message>(FIXTURE, config);

const CAP = 6;
const JOBS = 60;

test(`cancel across 4 processes: ${JOBS} running jobs cancelled, each handler's signal aborts within 1 s (p99), the cap of ${CAP} holds meanwhile, and a SIGKILLed worker's cancelled jobs end cancelled`, async (t) => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await sqlClient();
  const q = uniqueQueue('cancel');
  // A lease of 3 s: the handlers outlive it only through the workers' own heartbeats.
  await sluice.queues.put(q, { concurrency: CAP, leaseSeconds: 3, maxAttempts: 3, backoff: { baseMs: 0, maxMs: 0 } });
  const ids = (
    await sluice.sendMany(
      q,
      Array.from({ length: JOBS }, (_, i) => ({ data: i })),
    )
  ).map((j) => j.id);
  const children = await Promise.all(
    Array.from({ length: 4 }, () => spawnWorker({ url: db.url, queue: q, concurrency: 4, maintenanceIntervalMs: 500 })),
  );
  const started = () => children.flatMap((c) => c.messages.filter((m) => m.type === 'started'));

  // First wave: every running job's lease renewed by a heartbeat before any cancel.
  await waitFor(() => started().length >= CAP, { timeoutMs: 60_000, message: 'the cap filled' });
  await waitFor(
    async () =>
      (
        await client.query(
          "SELECT bool_and(lease_expires_at > started_at + interval '3.5 seconds') AS renewed FROM sluice.job WHERE queue = $1 AND state = 'active'",
          [q],
        )
      ).rows[0].renewed,
    { timeoutMs: 30_000, message: 'running leases renewed by heartbeats' },
  );

  const cancelledAt = new Map<string, bigint>();
  const killedAt = new Map<Child, bigint>();
  let victim: Child | null = null;
  const cancelRunning = async () => {
    const fresh = started()
      .filter((m) => !cancelledAt.has(m.id!))
      .map((m) => m.id!);
    for (const id of fresh) cancelledAt.set(id, process.hrtime.bigint());
    await Promise.all(fresh.map((id) => sluice.cancel(id)));
    return fresh.length;
  };
  const ended = async () =>
    (await client.query("SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND state = 'cancelled'", [q])).rows[0].n as number;

  while ((await ended()) < JOBS) {
    if (!victim && cancelledAt.size >= JOBS / 3) {
      // Cancel what a worker runs, then kill it: stopped first (SIGSTOP), so that none of its
      // handlers can answer a cancel before the kill.
      victim = children.find((c) => c.messages.some((m) => m.type === 'started' && !cancelledAt.has(m.id!))) ?? null;
      if (victim) {
        victim.proc.kill('SIGSTOP');
        for (const m of victim.messages)
          if (m.type === 'started' && !cancelledAt.has(m.id!)) {
            cancelledAt.set(m.id!, process.hrtime.bigint());
            await sluice.cancel(m.id!);
          }
        victim.proc.kill('SIGKILL');
        await once(victim.proc, 'exit');
        killedAt.set(victim, process.hrtime.bigint());
      }
    }
    if ((await cancelRunning()) === 0) {
      // Nothing new running: wait for a start (or for the sweep to end the killed worker's jobs).
      const seen = started().length;
      const done = await ended();
      await waitFor(async () => started().length > seen || (await ended()) > done || done >= JOBS, {
        timeoutMs: 60_000,
        message: 'a job started or ended',
        detail: async () => await sluice.stats(q),
      });
    }
  }
  for (const c of children) if (c !== victim) c.proc.send({ type: 'stop' });
  await Promise.all(children.filter((c) => c !== victim).map((c) => once(c.proc, 'exit')));

  // Every job ended cancelled, none retried after its cancel.
  const states = (await client.query('SELECT state, count(*)::int AS n FROM sluice.job WHERE queue = $1 GROUP BY state', [q])).rows;
  assert.deepEqual(states, [{ state: 'cancelled', n: JOBS }]);
  assert.ok(victim, 'a worker was killed with cancelled jobs in hand');
  const swept = (
    await client.query('SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND errors @> \'[{"name": "LeaseExpired"}]\'', [q])
  ).rows[0].n;
  assert.ok(swept >= 1, "the killed worker's jobs were ended by the sweep");

  // Latency from the cancel to the handler's signal, for every handler that answered.
  const latenciesMs: number[] = [];
  for (const c of children) {
    for (const m of c.messages) {
      if (m.type !== 'aborted') continue;
      assert.equal(m.reason, 'JobCancelled');
      latenciesMs.push(Number(BigInt(m.at!) - cancelledAt.get(m.id!)!) / 1e6);
    }
  }
  latenciesMs.sort((a, b) => a - b);
  const p99 = latenciesMs[Math.ceil(latenciesMs.length * 0.99) - 1]!;
  t.diagnostic(
    `${latenciesMs.length} handlers told; p50 ${latenciesMs[Math.floor(latenciesMs.length / 2)]!.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${latenciesMs.at(-1)!.toFixed(1)} ms; ${swept} swept`,
  );
  assert.ok(latenciesMs.length >= JOBS - CAP, `${latenciesMs.length} handlers heard of their cancel`);
  assert.ok(p99 < 1000, `p99 from cancel to signal ${p99.toFixed(1)} ms`);

  // The cap held with cancelled handlers still running: each run spans its start to its
  // signal (or to the kill, for the killed worker's handlers).
  const edges: [bigint, number][] = [];
  for (const c of children) {
    const ends = new Map(c.messages.filter((m) => m.type === 'aborted').map((m) => [m.id!, BigInt(m.at!)]));
    for (const m of c.messages) {
      if (m.type !== 'started') continue;
      edges.push([BigInt(m.at!), 1], [ends.get(m.id!) ?? killedAt.get(c)!, -1]);
    }
  }
  edges.sort((a, b) => (a[0] === b[0] ? a[1] - b[1] : a[0] < b[0] ? -1 : 1));
  let running = 0;
  let overlap = 0;
  for (const [, delta] of edges) overlap = Math.max(overlap, (running += delta));
  t.diagnostic(`handler overlap ${overlap}`);
  assert.ok(overlap <= CAP, `${overlap} handlers ran at once against a cap of ${CAP}`);
  assert.equal(overlap, CAP, 'the cap was used');
  const held = await client.query('SELECT count(*)::int AS n FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [q]);
  assert.equal(held.rows[0].n, 0, 'every slot free at the end');
  assert.ok(ids.length === JOBS);
});
