// Durability per queue. A queue with durability 'async' has the transactions the library
// sends on its own for it commit with synchronous_commit off; every other transaction
// keeps the server's setting. What a commit used is read where it happens: a deferred
// trigger on the job table, which runs at commit, records the setting then.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { ValidationError } from '../src/index.js';
import { makeSluice, sqlClient, uniqueQueue } from './helpers.js';

/** Commits flush by default on this file's database (the test server's own default is off), and record their setting. */
async function recordCommits(client: Awaited<ReturnType<typeof sqlClient>>): Promise<void> {
  await client.query(`
    DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = on', current_database()); END $$;
    SET synchronous_commit = on;
    CREATE TABLE IF NOT EXISTS public.commit_setting (job_id bigint, state text, setting text);
    CREATE OR REPLACE FUNCTION public.record_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- Sends and changes of state only: a heartbeat's commit is not what is checked.
      IF TG_OP = 'INSERT' OR OLD.state IS DISTINCT FROM NEW.state THEN
        INSERT INTO public.commit_setting VALUES (NEW.id, NEW.state::text, current_setting('synchronous_commit'));
      END IF;
      RETURN NULL;
    END $$;
    DROP TRIGGER IF EXISTS record_commit_setting ON sluice.job;
    CREATE CONSTRAINT TRIGGER record_commit_setting AFTER INSERT OR UPDATE ON sluice.job
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.record_commit_setting();`);
}

/** The settings the commits that wrote these jobs in this state ran with. */
async function settings(client: Awaited<ReturnType<typeof sqlClient>>, ids: string[], state: string): Promise<string[]> {
  const { rows } = await client.query(
    'SELECT DISTINCT setting FROM public.commit_setting WHERE job_id = ANY($1::bigint[]) AND state = $2 ORDER BY setting',
    [ids, state],
  );
  return rows.map((r) => r.setting as string);
}

test("durability 'async': the library's own sends, claims, completions and failures commit without the flush; the application's transaction keeps its own", async () => {
  const client = await sqlClient();
  await recordCommits(client);
  const sluice = await makeSluice();
  // Capped, so that the claim's own rule for plain queues (lone_claim) is not what is seen.
  const fast = uniqueQueue('async');
  const safe = uniqueQueue('flush');
  assert.equal((await sluice.queues.put(fast, { concurrency: 2, maxAttempts: 2, durability: 'async' })).durability, 'async');
  assert.equal((await sluice.queues.put(safe, { concurrency: 2, maxAttempts: 2 })).durability, 'flush', 'flush by default');

  const sent = [(await sluice.send(fast, 1)).id, ...(await sluice.sendMany(fast, [{ data: 2 }, { data: 3 }])).map((r) => r.id)];
  const flow = await sluice.flow([
    { ref: 'a', queue: fast, data: 4 },
    { ref: 'b', queue: fast, data: 5, dependsOn: ['a'] },
  ]);
  assert.deepEqual(await settings(client, [...sent, flow.a!.id], 'pending'), ['off']);
  const mixed = await sluice.flow([
    { ref: 'a', queue: fast, data: 6 },
    { ref: 'b', queue: safe, data: 7 },
  ]);
  assert.deepEqual(await settings(client, [mixed.a!.id, mixed.b!.id], 'pending'), ['on'], 'a flow over a flush queue flushes');
  const plain = (await sluice.send(safe, 8)).id;
  assert.deepEqual(await settings(client, [plain], 'pending'), ['on']);

  // The application's transaction: its commit keeps the server's setting, though it sent to an async queue.
  await client.query('BEGIN');
  const inside = (await sluice.send(fast, 9, { client })).id;
  await client.query('COMMIT');
  assert.deepEqual(await settings(client, [inside], 'pending'), ['on']);

  // A worker's claims and completions, of every job the async queue holds.
  const ran = [...sent, flow.a!.id, flow.b!.id, mixed.a!.id, inside];
  const done = new Set<string>();
  const worker = sluice.work(fast, { concurrency: 2 }, async (job) => void done.add(job.id));
  await waitFor(() => ran.every((id) => done.has(id)) || undefined, { message: 'the async queue drained' });
  await worker.stop();
  assert.deepEqual(await settings(client, ran, 'active'), ['off'], 'claims');
  assert.deepEqual(await settings(client, ran, 'completed'), ['off'], 'completions');

  // A pull worker's claim and failure, and the flush queue's claim and completion.
  const failing = (await sluice.send(fast, 'fails')).id;
  const [job] = await sluice.claim(fast, { max: 1 });
  assert.equal(job?.id, failing);
  await sluice.fail(job.id, job.leaseToken, { message: 'no' });
  assert.deepEqual(await settings(client, [failing], 'active'), ['off']);
  assert.deepEqual(await settings(client, [failing], 'pending'), ['off'], 'the send and the retry');
  const [flushed] = await sluice.claim(safe, { max: 1 });
  assert.ok(flushed);
  await sluice.complete(flushed.id, flushed.leaseToken, null);
  assert.deepEqual(await settings(client, [flushed.id], 'completed'), ['on']);
  assert.deepEqual(await settings(client, [flushed.id], 'active'), ['on']);

  // Another process learns the queue's durability as it reads its policy (in the background
  // of its first send; until then its sends flush, the stricter way), then commits async.
  const other = await makeSluice();
  const learned = await waitFor(
    async () => {
      const id = (await other.send(fast, 'later from another process')).id;
      return (await settings(client, [id], 'pending'))[0] === 'off' || undefined;
    },
    { message: "the other process's sends to commit async once it read the queue" },
  );
  assert.equal(learned, true);

  // Back to flush: the next commits flush.
  await sluice.queues.put(fast, { concurrency: 2 });
  const after = (await sluice.send(fast, 10)).id;
  assert.deepEqual(await settings(client, [after], 'pending'), ['on']);
});

test("durability 'async' keeps the cap: no more handlers run at once than the queue allows", async () => {
  const sluice = await makeSluice();
  const queue = uniqueQueue('async-cap');
  await sluice.queues.put(queue, { concurrency: 3, durability: 'async' });
  await sluice.sendMany(
    queue,
    Array.from({ length: 60 }, (_, i) => ({ data: i })),
  );
  let running = 0;
  let most = 0;
  let ended = 0;
  const workers = [1, 2].map(() =>
    sluice.work(queue, { concurrency: 6 }, async () => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      ended++;
    }),
  );
  await waitFor(() => ended >= 60 || undefined, { timeoutMs: 60_000, message: 'all 60 jobs ran' });
  await Promise.all(workers.map((w) => w.stop()));
  assert.ok(most <= 3, `at most 3 at once, saw ${most}`);
  assert.equal((await sluice.stats(queue)).completed, 60);
});

test('durability is flush or async, said clearly otherwise', async () => {
  const sluice = await makeSluice();
  await assert.rejects(
    sluice.queues.put(uniqueQueue('bad'), { durability: 'fast' as never }),
    (err) =>
      err instanceof ValidationError && err.field === 'durability' && /durability must be 'flush' or 'async', got "fast"/.test(err.message),
  );
});
