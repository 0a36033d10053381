// Behind PgBouncer in transaction mode (each transaction may get a different server
// connection; no session state survives): with notifications off and polling on, send,
// claim, complete, retries, the global cap, shedding and the maintenance tick all work,
// and so do migrations, concurrently from several instances.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { skipWithoutPgBouncer, startPgBouncer, waitFor } from '@sluice/testkit';
import { QueueFullError, Sluice } from '../src/index.js';
import { afterAll, memoryLogger, queueState, sqlClient, testDatabase, uniqueQueue, type LogRecord } from './helpers.js';

const skip = skipWithoutPgBouncer();

const logs = new WeakMap<Sluice, LogRecord[]>();

/** An instance's last warnings, for a wait's failure message. */
function warnings(sluice: Sluice): string[] {
  return (logs.get(sluice) ?? [])
    .filter((r) => r.level !== 'debug')
    .slice(-5)
    .map((r) => `${r.msg} ${JSON.stringify(r.obj).slice(0, 300)}`);
}

async function behindBouncer(n: number, { schema }: { schema?: string } = {}) {
  const db = await testDatabase();
  const bouncer = await startPgBouncer(db.url, { poolSize: 3 });
  afterAll(() => bouncer.stop());
  return Array.from({ length: n }, (_, i) => {
    const logger = memoryLogger();
    const sluice = new Sluice({
      connectionString: bouncer.url,
      schema,
      notify: false,
      maxPoolSize: 6,
      logger,
      applicationName: `bouncer-${i}`,
    });
    logs.set(sluice, logger.records);
    afterAll(() => sluice.close({ timeoutMs: 5000 }));
    return sluice;
  });
}

test(
  'PgBouncer, transaction mode: send, claim, complete, retries and an exact cap across two instances',
  { skip, timeout: 180_000 },
  async () => {
    const [a, b] = await behindBouncer(2);
    const q = uniqueQueue('bouncer');
    await a!.queues.put(q, { concurrency: 3, backoff: { baseMs: 0, maxMs: 0 } });
    const sent = await a!.sendMany(
      q,
      Array.from({ length: 120 }, (_, i) => ({ data: i })),
    );
    const attempts = new Map<string, number>();
    let running = 0;
    let peak = 0;
    const handler = async (job: { id: string; data: unknown }) => {
      peak = Math.max(peak, ++running);
      attempts.set(job.id, (attempts.get(job.id) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      // Every fifth job fails its first attempt: retried through the bouncer.
      if ((job.data as number) % 5 === 0 && attempts.get(job.id) === 1) throw new Error('first attempt fails');
    };
    const workers = [a!, b!].map((s) => s.work(q, { concurrency: 3, pollIntervalMs: 50 }, handler));
    await waitFor(async () => (await a!.stats(q)).completed === 120, {
      timeoutMs: 120_000,
      message: '120 completed behind the bouncer',
      detail: async () => ({ jobs: await queueState((await testDatabase()).url, q), running, logged: [a!, b!].map(warnings) }),
    });
    await Promise.all(workers.map((w) => w.stop()));
    assert.ok(peak <= 3, `the cap of 3 held across both instances (peak ${peak})`);
    assert.ok(peak >= 2, `and was used (peak ${peak})`);
    const held = await (await sqlClient()).query('SELECT count(*)::int AS n FROM sluice.slot WHERE queue = $1 AND job_id IS NOT NULL', [q]);
    assert.equal(held.rows[0].n, 0, 'with every job done, every slot is free: none was kept by a job that ended');
    for (const { id } of sent) {
      const job = await b!.get(id);
      assert.equal(job?.state, 'completed');
      // Every attempt's error is kept: a failure says which attempt was extra, and why.
      assert.equal(job?.attempts, (job?.data as number) % 5 === 0 ? 2 : 1, `attempts of job ${id}, errors: ${JSON.stringify(job?.errors)}`);
    }
  },
);

test(
  'PgBouncer, transaction mode: shedding and the maintenance tick (its lock never stays behind on a server connection)',
  { skip, timeout: 180_000 },
  async () => {
    const [a, b] = await behindBouncer(2);
    const q = uniqueQueue('bouncer-tick');
    await a!.queues.put(q, { maxPending: 5, leaseSeconds: 1, backoff: { baseMs: 0, maxMs: 0 } });
    await a!.sendMany(
      q,
      Array.from({ length: 5 }, (_, i) => ({ data: i })),
    );
    await assert.rejects(b!.send(q, 'sixth'), QueueFullError);
    // Two claimed jobs whose worker never reports back: the tick must sweep them.
    const claimed = await a!.claim(q, { max: 2 });
    assert.equal(claimed.length, 2);
    const direct = await sqlClient();
    // Traffic from both instances meanwhile, so the bouncer hands server connections around.
    const busy = uniqueQueue('bouncer-busy');
    await a!.queues.put(busy, {});
    let traffic = true;
    const load = Promise.all(
      [a!, b!, a!, b!].map(async (s) => {
        while (traffic) {
          await s.send(busy, null);
          for (const job of await s.claim(busy, { max: 5 })) await s.complete(job.id, job.leaseToken);
        }
      }),
    );
    let swept = 0;
    try {
      await waitFor(
        async () => {
          for (const s of [a!, b!, a!, b!]) {
            const tick = await s.runMaintenance();
            assert.ok(tick.ran, `every tick gets the lock (${JSON.stringify(tick)})`);
            swept += tick.swept;
            // The tick's lock (a one-key advisory lock) is not left behind on a server connection.
            const { rows } = await direct.query(
              `SELECT count(*)::int AS n FROM pg_locks
             WHERE locktype = 'advisory' AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            );
            assert.equal(rows[0].n, 0, 'no maintenance lock held between ticks');
          }
          return swept === 2;
        },
        { timeoutMs: 60_000, message: 'both expired leases swept' },
      );
    } finally {
      traffic = false;
      await load;
    }
    await assert.rejects(
      a!.complete(claimed[0]!.id, claimed[0]!.leaseToken),
      /lease/i,
      'a swept lease is fenced out behind the bouncer too',
    );
  },
);

test(
  'PgBouncer, transaction mode: a fresh schema migrated by three instances at once, each migration applied exactly once',
  { skip, timeout: 180_000 },
  async () => {
    const instances = await behindBouncer(3, { schema: 'bouncer_schema' });
    const results = await Promise.all(instances.map((s) => s.migrate()));
    const applied = results.flatMap((r) => r.applied).sort((x, y) => x - y);
    assert.deepEqual(
      applied,
      Array.from({ length: results[0]!.version }, (_, i) => i + 1),
    );
    assert.deepEqual(
      await Promise.all(instances.map((s) => s.migrate())),
      results.map((r) => ({ applied: [], version: r.version })),
    );
    await instances[0]!.queues.put('after', { concurrency: 2 });
    await instances[1]!.send('after', { ok: true });
    assert.equal((await instances[2]!.stats('after')).ready, 1);
    // No migration lock stays behind on a server connection.
    const client = await sqlClient();
    const { rows } = await client.query(
      "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = hashtext('bouncer_schema.migrate')::oid",
    );
    assert.equal(rows[0].n, 0);
  },
);
