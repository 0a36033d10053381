// Flows: jobs that wait for their parents. Across real worker processes killed at random,
// while half the flows are still being sent, every job runs only after all its parents
// completed, exactly once but for runs cut short by a kill, within its queue's cap, and none
// is left waiting; released children keep their own queue's limits; a parent that ends dead
// or cancelled cancels its children (or lets them run, when they ask to); bad flows are
// refused with nothing written.
//
// The suite runs 400 flows and 4 kills (about 25 s here); SLUICE_TEST_FLOWS=1000
// SLUICE_TEST_FLOW_KILLS=6 runs the size first measured (about 80 s on 2 shared cores).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@sluice/testkit';
import { FlowInvalidError, KeyLimitError, ParentNotFoundError, type FlowJob } from '../src/index.js';
import { forkFixture, makeSluice, sqlClient, testDatabase, uniqueQueue, type ForkedFixture } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/flow-worker.ts', import.meta.url));
const FLOWS = Number(process.env.SLUICE_TEST_FLOWS ?? 400);
const FAN_OUT = 10;
const KILLS = Number(process.env.SLUICE_TEST_FLOW_KILLS ?? 4);
const FAN_CAP = 8;

// A flow's jobs; with `root`, the jobs below an existing root job.
const flowOf = (n: number, [a, b, c]: string[], root?: { jobId: string }): FlowJob[] => [
  ...(root ? [] : [{ ref: 'root', queue: a!, data: n }]),
  ...Array.from({ length: FAN_OUT }, (_, i) => ({ ref: `child${i}`, queue: b!, data: null, dependsOn: [root ?? 'root'] })),
  { ref: 'join', queue: c!, data: null, dependsOn: Array.from({ length: FAN_OUT }, (_, i) => `child${i}`) },
];

test(`${FLOWS} flows (a root, ${FAN_OUT} children, a fan-in) across 4 worker processes, ${KILLS} of them SIGKILLed: every job runs only after its parents completed, exactly once but in killed workers, within the cap, none is left waiting`, async () => {
  const db = await testDatabase();
  const sluice = await makeSluice();
  const client = await sqlClient();
  await client.query(
    `CREATE TABLE flow_run (job_id bigint, attempt int, pid int, parent_states text[], at timestamptz DEFAULT clock_timestamp(), ended_at timestamptz);
     CREATE INDEX ON flow_run (job_id, attempt)`,
  );
  const queues = [uniqueQueue('root'), uniqueQueue('fan'), uniqueQueue('join')];
  // Short leases: a killed worker's jobs come back within seconds (live ones are renewed by heartbeats).
  for (const q of queues) await sluice.queues.put(q, { leaseSeconds: 2, maxAttempts: 20, backoff: { baseMs: 0, maxMs: 0 } });
  await sluice.queues.put(queues[1]!, { leaseSeconds: 2, maxAttempts: 20, backoff: { baseMs: 0, maxMs: 0 }, concurrency: FAN_CAP });

  const deadlocks = async () =>
    Number((await client.query('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()')).rows[0].deadlocks);
  const deadlocksBefore = await deadlocks();
  const spawn = () => forkFixture<{ type: string }>(FIXTURE, { url: db.url, queues, concurrency: 4, maintenanceIntervalMs: 500 });

  // The first half of the flows before the workers start, 8 at a time. The second half while
  // they run and are killed: each root sent on its own first, then its children linked to it
  // as it is claimed, run or completed meanwhile (the parent lock of send_after).
  const joins: string[] = [];
  const sendFlows = (from: number, to: number) => {
    let next = from;
    return Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < to) {
          const n = next++;
          const root = n < FLOWS / 2 ? undefined : { jobId: (await sluice.send(queues[0]!, n)).id };
          joins[n] = (await sluice.flow(flowOf(n, queues, root))).join!.id;
        }
      }),
    );
  };
  await sendFlows(0, FLOWS / 2);

  const workers: ForkedFixture<{ type: string }>[] = await Promise.all(Array.from({ length: 4 }, spawn));
  const killed: number[] = [];
  const completed = async () =>
    (await client.query("SELECT count(*)::int AS n FROM sluice.job WHERE queue = ANY ($1) AND state = 'completed'", [queues])).rows[0]
      .n as number;
  const total = FLOWS * (FAN_OUT + 2);
  const kills = async () => {
    for (let kill = 1; kill <= KILLS; kill++) {
      await waitFor(async () => (await completed()) >= (total * kill) / (KILLS + 2), { timeoutMs: 240_000, message: `kill ${kill}` });
      const victim = workers.splice(Math.floor(Math.random() * workers.length), 1)[0]!;
      killed.push(victim.proc.pid!);
      victim.proc.kill('SIGKILL');
      await once(victim.proc, 'exit');
      workers.push(await spawn());
    }
  };
  await Promise.all([sendFlows(FLOWS / 2, FLOWS), kills()]);
  await waitFor(async () => (await completed()) === total, { timeoutMs: 300_000, message: 'every job completed' });

  // Each backend reports its statistics once idle (within a second or so): long since, for
  // all but the last releases.
  assert.equal(await deadlocks(), deadlocksBefore, 'no deadlock between releases of shared children');

  const states = await client.query('SELECT state, count(*)::int AS n FROM sluice.job WHERE queue = ANY ($1) GROUP BY state', [queues]);
  assert.deepEqual(states.rows, [{ state: 'completed', n: total }], 'nothing waiting, pending, dead or cancelled');

  // Every run of a job with parents (killed runs included) began after its last parent's
  // completion, and saw every parent completed.
  const early = await client.query(
    `SELECT r.job_id FROM flow_run r
     JOIN sluice.job_parent l ON l.child_id = r.job_id
     JOIN sluice.job p ON p.id = l.parent_id
     GROUP BY r.job_id, r.at, r.parent_states
     HAVING r.at <= max(p.finished_at) OR NOT ('completed' = ALL (r.parent_states)) OR cardinality(r.parent_states) <> count(*)`,
  );
  assert.equal(early.rowCount, 0, `runs before their parents completed: ${JSON.stringify(early.rows.slice(0, 5))}`);
  const lastStart = await client.query(
    `SELECT c.id FROM sluice.job c JOIN sluice.job_parent l ON l.child_id = c.id JOIN sluice.job p ON p.id = l.parent_id
     WHERE c.queue = ANY ($1) GROUP BY c.id, c.started_at HAVING c.started_at <= max(p.finished_at)`,
    [queues],
  );
  assert.equal(lastStart.rowCount, 0, 'every start after the last parent completed');

  // Exactly once: each job has one run of its last attempt (the run that completed it); any
  // other run was of an earlier attempt, in a worker killed before it completed (or, on a
  // host stalled past the lease, one whose attempt the sweep recorded as LeaseExpired: its
  // completion was fenced off); no attempt ran twice.
  const completing = await client.query(
    `SELECT j.id, count(r.*) FILTER (WHERE r.attempt = j.attempts)::int AS runs FROM sluice.job j
     LEFT JOIN flow_run r ON r.job_id = j.id WHERE j.queue = ANY ($1) GROUP BY j.id
     HAVING count(r.*) FILTER (WHERE r.attempt = j.attempts) <> 1`,
    [queues],
  );
  assert.equal(
    completing.rowCount,
    0,
    `jobs without exactly one run of their last attempt: ${JSON.stringify(completing.rows.slice(0, 5))}`,
  );
  const unexplained = await client.query(
    `SELECT r.job_id, r.attempt, r.pid, j.attempts, j.errors FROM flow_run r JOIN sluice.job j ON j.id = r.job_id
     WHERE r.attempt > j.attempts OR (r.attempt < j.attempts AND NOT r.pid = ANY ($1::int[]) AND NOT EXISTS (
       SELECT 1 FROM jsonb_array_elements(j.errors) e WHERE (e->>'attempt')::int = r.attempt AND e->>'name' = 'LeaseExpired'))`,
    [killed],
  );
  assert.equal(killed.length, KILLS);
  assert.equal(
    unexplained.rowCount,
    0,
    `runs that did not complete, in workers not killed (${killed.join(', ')}): ${JSON.stringify(unexplained.rows.slice(0, 3))}`,
  );
  const twice = await client.query('SELECT job_id, attempt FROM flow_run GROUP BY job_id, attempt HAVING count(*) > 1');
  assert.equal(twice.rowCount, 0, 'one run per attempt');
  const fanIns = await client.query(
    `SELECT count(*)::int AS n, count(*) FILTER (WHERE (SELECT count(*) FROM flow_run r WHERE r.job_id = j.id) > 1)::int AS rerun
     FROM sluice.job j WHERE j.id = ANY ($1::bigint[])`,
    [joins],
  );
  assert.equal(fanIns.rows[0].n, FLOWS);

  // The fan queue's cap held: no more than FAN_CAP of its handlers overlapped. A handler runs
  // inside its slot's lifetime (a slot handed over from a completed job is taken once that
  // job's handler has returned), so the peak is at most the slots held at once. A run that
  // never ended (its worker was killed) is counted at its start only.
  const overlap = await client.query(
    `WITH run AS (
       SELECT r.at AS from_at, coalesce(r.ended_at, r.at) AS to_at
       FROM flow_run r JOIN sluice.job j ON j.id = r.job_id WHERE j.queue = $1
     ), edge AS (SELECT from_at AS t, 1 AS d FROM run UNION ALL SELECT to_at, -1 FROM run)
     SELECT max(n)::int AS peak FROM (SELECT sum(d) OVER (ORDER BY t, d DESC ROWS UNBOUNDED PRECEDING) AS n FROM edge) s`,
    [queues[1]],
  );
  const peak = overlap.rows[0].peak as number;
  assert.ok(peak <= FAN_CAP, `at most ${FAN_CAP} fan jobs ran at once, not ${peak}`);
  // Reached, or nearly: handlers are short next to the claims between them, so the bound is
  // loose (16 local slots ask for the 8).
  assert.ok(peak >= FAN_CAP / 2, `the cap was used: ${peak} fan jobs at most ran at once`);

  // The second half's children were linked to roots pending, running or ended at the time.
  const linked = await client.query(
    `SELECT count(*) FILTER (WHERE c.created_at < p.started_at)::int AS pending,
            count(*) FILTER (WHERE c.created_at BETWEEN p.started_at AND p.finished_at)::int AS running,
            count(*) FILTER (WHERE c.created_at > p.finished_at)::int AS ended
     FROM sluice.job p JOIN sluice.job_parent l ON l.parent_id = p.id JOIN sluice.job c ON c.id = l.child_id
     WHERE p.queue = $1 AND p.data::int >= $2`,
    [queues[0], FLOWS / 2],
  );
  assert.ok(linked.rows[0].running > 0, `some children were linked to a running root: ${JSON.stringify(linked.rows[0])}`);
  const wrong = await client.query(
    `SELECT j.id FROM sluice.job j JOIN sluice.job_parent l ON l.child_id = j.id JOIN sluice.job root ON root.id = (
       SELECT l2.parent_id FROM sluice.job_parent l2 WHERE l2.child_id = l.parent_id LIMIT 1)
     WHERE j.id = ANY ($1::bigint[]) GROUP BY j.id, j.result, root.data
     HAVING j.result::int <> $2 * (root.data::int + 1) + 1`,
    [joins, FAN_OUT],
  );
  assert.equal(wrong.rowCount, 0, 'each fan-in read its parents results');
  const workedBy = await client.query('SELECT count(DISTINCT pid)::int AS n FROM flow_run');
  assert.ok(workedBy.rows[0].n >= 4 + 1, 'workers started after kills ran jobs too');
  const extra = await client.query(
    'SELECT count(*)::int AS n FROM flow_run r JOIN sluice.job j ON j.id = r.job_id WHERE r.attempt < j.attempts',
  );
  console.log(
    `# ${FLOWS} flows, ${KILLS} kills: ${extra.rows[0].n} runs in killed workers, ${fanIns.rows[0].rerun} fan-ins run again; ` +
      `fan peak ${peak} of ${FAN_CAP}; children linked to a root ${JSON.stringify(linked.rows[0])}`,
  );

  for (const w of workers) w.proc.kill('SIGTERM');
});

test("children released by their parent keep their own queue's limits: per-key concurrency and rate", async () => {
  await testDatabase();
  const sluice = await makeSluice();
  const [parentQueue, childQueue] = [uniqueQueue('parent'), uniqueQueue('limited')];
  await sluice.queues.put(parentQueue, {});
  await sluice.queues.put(childQueue, { perKeyConcurrency: 2, rateLimit: { count: 3, periodMs: 1000 } });
  // The database's clock injected, as in rate.test.ts: T0 and after.
  const T0 = new Date('2030-01-01T00:00:00.000Z');
  const at = (ms: number) => new Date(T0.getTime() + ms);
  const claim = async (queue: string, now: Date) =>
    (await sluice.pool.query("SELECT id::text, lease_token::text AS token FROM sluice.claim($1, 10, 'w', $2, 0)", [queue, now])).rows as {
      id: string;
      token: string;
    }[];
  const complete = (jobs: { id: string; token: string }[], now: Date) =>
    sluice.pool.query(
      "SELECT * FROM sluice.complete_many($1::bigint[], $2::uuid[], array_fill('null'::jsonb, ARRAY[$3::int]), $4, false)",
      [jobs.map((j) => j.id), jobs.map((j) => j.token), jobs.length, now],
    );
  const childStates = async () =>
    (
      await sluice.pool.query('SELECT state, count(*)::int AS n FROM sluice.job WHERE queue = $1 GROUP BY state ORDER BY state::text', [
        childQueue,
      ])
    ).rows;

  await sluice.flow([
    { ref: 'parent', queue: parentQueue, data: null },
    ...Array.from({ length: 6 }, (_, i) => ({ ref: `child${i}`, queue: childQueue, data: i, key: 'k', dependsOn: ['parent'] })),
  ]);
  assert.deepEqual(await claim(childQueue, T0), [], 'waiting for their parent');
  const parent = await claim(parentQueue, T0);
  assert.equal(parent.length, 1);
  await complete(parent, T0);
  assert.deepEqual(await childStates(), [{ state: 'pending', n: 6 }], 'released by the completion');

  const first = await claim(childQueue, at(1));
  assert.equal(first.length, 2, 'two of the six: perKeyConcurrency 2');
  assert.deepEqual(await claim(childQueue, at(2)), [], 'the key is full');
  await complete(first, at(3));
  const second = await claim(childQueue, at(4));
  assert.equal(second.length, 1, 'room for two in the key, but the third start fills the window of 3 per second');
  assert.equal((await sluice.pool.query('SELECT sluice.next_start_ms($1, $2) AS ms', [childQueue, at(4)])).rows[0].ms, 998);
  await complete(second, at(5));
  assert.deepEqual(await claim(childQueue, at(1001)), [], 'a start exactly one period ago still counts');
  assert.equal((await claim(childQueue, at(1002))).length, 2, 'the window moved past the first two starts');
  assert.deepEqual(await childStates(), [
    { state: 'active', n: 2 },
    { state: 'completed', n: 3 },
    { state: 'pending', n: 1 },
  ]);
});

test("a flow's waiting children count against their key's maxPerKey from their send, so their release cannot pass it", async () => {
  await testDatabase();
  const sluice = await makeSluice();
  const [parentQueue, childQueue] = [uniqueQueue('parent'), uniqueQueue('per-key')];
  await sluice.queues.put(parentQueue, {});
  await sluice.queues.put(childQueue, { maxPerKey: 2 });
  const flow = await sluice.flow([
    { ref: 'root', queue: parentQueue, data: null },
    { ref: 'a', queue: childQueue, data: 'a', key: 'tenant', dependsOn: ['root'] },
    { ref: 'b', queue: childQueue, data: 'b', key: 'tenant', dependsOn: ['root'] },
  ]);
  assert.equal((await sluice.stats(childQueue)).waiting, 2);
  await assert.rejects(sluice.send(childQueue, 'c', { key: 'tenant' }), KeyLimitError, 'two waiting jobs fill the key');
  await assert.rejects(sluice.send(childQueue, 'c', { key: 'tenant', dependsOn: [flow.root!.id] }), KeyLimitError);
  await sluice.send(childQueue, 'other', { key: 'other-tenant' });
  const [root] = await sluice.claim(parentQueue, { max: 1 });
  await sluice.complete(root!.id, root!.leaseToken, null);
  const keyed = await sluice.pool.query(
    "SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1 AND key = 'tenant' AND state = 'pending'",
    [childQueue],
  );
  assert.equal(keyed.rows[0].n, 2, 'released: the key holds its limit, not more');
});

test('a dead parent cancels its children and theirs; under onParentFailure: run they run; a cancelled waiting job releases its children', async () => {
  await testDatabase();
  const sluice = await makeSluice();
  const q = uniqueQueue('dead-parent');
  await sluice.queues.put(q, { maxAttempts: 1 });

  const flow = await sluice.flow([
    { ref: 'root', queue: q, data: 'fails' },
    { ref: 'a', queue: q, data: 'a', dependsOn: ['root'] },
    { ref: 'b', queue: q, data: 'b', dependsOn: ['root'], onParentFailure: 'run' },
    { ref: 'c', queue: q, data: 'c', dependsOn: ['a'] },
    { ref: 'd', queue: q, data: 'd', dependsOn: ['a', 'b'], onParentFailure: 'run' },
  ]);
  for (const ref of ['a', 'b', 'c', 'd']) assert.equal((await sluice.get(flow[ref]!.id))!.state, 'waiting', ref);
  assert.equal((await sluice.stats(q)).waiting, 4);
  assert.deepEqual((await sluice.children(flow.root!.id)).map((c) => c.id).sort(), [flow.a!.id, flow.b!.id].sort());

  const ran: string[] = [];
  const worker = sluice.work(q, { pollIntervalMs: 50 }, async (job) => {
    ran.push(job.data as string);
    if (job.data === 'fails') throw new Error('root fails');
    return job.parents?.map((p) => p.state).join(',') ?? null;
  });
  await waitFor(async () => (await sluice.get(flow.d!.id))!.state === 'completed', { timeoutMs: 30_000, message: 'd ran' });
  await worker.stop();

  const a = (await sluice.get(flow.a!.id))!;
  assert.equal(a.state, 'cancelled');
  assert.equal(a.errors.at(-1)!.name, 'ParentFailed');
  assert.match(a.errors.at(-1)!.message, new RegExp(`parent job ${flow.root!.id} ended dead`));
  assert.equal((await sluice.get(flow.c!.id))!.state, 'cancelled', 'a cancelled parent cancels its children in turn');
  assert.equal((await sluice.get(flow.b!.id))!.result, 'dead', 'b ran, and saw its parent dead');
  assert.equal((await sluice.get(flow.d!.id))!.result, 'cancelled,completed', 'd ran after a (cancelled) and b');
  assert.deepEqual(ran.sort(), ['b', 'd', 'fails']);

  // A parent that ended before the send: counted at once.
  const done = await sluice.send(q, 'x', { dependsOn: [flow.b!.id] });
  assert.equal((await sluice.get(done.id))!.state, 'pending');
  const dead = await sluice.send(q, 'y', { dependsOn: [flow.root!.id] });
  assert.equal((await sluice.get(dead.id))!.state, 'cancelled');

  // Cancelling a waiting job cancels its children.
  const blocker = await sluice.send(q, 'later', { delayMs: 3_600_000 });
  const w1 = await sluice.send(q, 'w1', { dependsOn: [blocker.id] });
  const w2 = await sluice.send(q, 'w2', { dependsOn: [w1.id] });
  assert.equal((await sluice.cancel(w1.id)).state, 'cancelled');
  assert.equal((await sluice.get(w2.id))!.state, 'cancelled');
});

test('bad flows and unknown parents are refused, and nothing is written', async () => {
  await testDatabase();
  const sluice = await makeSluice();
  const client = await sqlClient();
  const q = uniqueQueue('bad-flow');
  await sluice.queues.put(q, {});
  const count = async () => (await client.query('SELECT count(*)::int AS n FROM sluice.job WHERE queue = $1', [q])).rows[0].n;

  await assert.rejects(
    sluice.flow([
      { ref: 'a', queue: q, data: 1, dependsOn: ['c'] },
      { ref: 'b', queue: q, data: 2, dependsOn: ['a'] },
      { ref: 'c', queue: q, data: 3, dependsOn: ['b'] },
    ]),
    (err: unknown) => err instanceof FlowInvalidError && err.code === 'flow_invalid' && /cycle: a → c → b → a/.test(err.message),
  );
  await assert.rejects(sluice.flow([{ ref: 'a', queue: q, data: 1, dependsOn: ['nope'] }]), FlowInvalidError);
  await assert.rejects(
    sluice.flow([
      { ref: 'a', queue: q, data: 1 },
      { ref: 'a', queue: q, data: 2 },
    ]),
    FlowInvalidError,
  );
  // The first job is written before the unknown parent is found: the transaction takes it back.
  await assert.rejects(
    sluice.flow([
      { ref: 'a', queue: q, data: 1 },
      { ref: 'b', queue: q, data: 2, dependsOn: ['a', { jobId: '987654321' }] },
    ]),
    (err: unknown) => err instanceof ParentNotFoundError && err.code === 'parent_not_found' && err.jobIds.join() === '987654321',
  );
  await assert.rejects(sluice.send(q, 1, { dependsOn: ['987654321'] }), ParentNotFoundError);
  await assert.rejects(sluice.send(q, 1, { dependsOn: [] }), /dependsOn must be an array of 1 to 1000 job ids/);
  await assert.rejects(sluice.send(q, 1, { onParentFailure: 'run' }), /onParentFailure needs dependsOn/);
  assert.equal(await count(), 0);
});
