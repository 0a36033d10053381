// The dashboard's data over HTTP: per-minute series (a queue's, every queue's), refusals of
// every process, the job list with filters and paging, schedules with their next run;
// against a real server.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Sluice } from 'sluice';
import { waitFor } from '@sluice/testkit';
import { api, call, silent, startTestServer, type Answer } from './helpers.js';

const server = await startTestServer();
const { producer, admin } = api(server);

function assertValidation(answer: Answer): void {
  assert.equal(answer.status, 400, answer.text);
  assert.equal(answer.body.error, 'validation', answer.text);
  assert.ok(typeof answer.body.message === 'string' && answer.body.message.length > 0);
}

test('series: exactly the minutes asked for, the current one last, with the counts of every process and the sampled gauges', async () => {
  await server.sluice.queues.put('series', { maxPending: 2, maxPerKey: 1, concurrency: 3 });
  assert.equal((await producer('POST', '/api/queues/series/jobs', { key: 'a' })).status, 202);
  assert.equal((await producer('POST', '/api/queues/series/jobs', { key: 'a' })).status, 429);
  assert.equal((await producer('POST', '/api/queues/series/jobs', { key: 'b' })).status, 202);
  assert.equal((await producer('POST', '/api/queues/series/jobs', { key: 'c' })).status, 503);
  // Another process (its own pool) refuses a send too, and flushes its count.
  const other = new Sluice({ connectionString: server.db.url, logger: silent });
  try {
    await assert.rejects(other.send('series', null, { key: 'd' }), { code: 'queue_full' });
    await other.counts.runOnce();
  } finally {
    await other.close();
  }
  await server.sluice.counts.runOnce();
  await server.sluice.runMaintenance();

  const answer = await admin('GET', '/api/queues/series/series?minutes=5');
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.body.queue, 'series');
  assert.equal(answer.body.stepSeconds, 60);
  const points = answer.body.points;
  assert.equal(points.length, 5);
  const starts = points.map((p: { at: string }) => Date.parse(p.at));
  for (let i = 1; i < starts.length; i++) assert.equal(starts[i] - starts[i - 1], 60_000, 'one point a minute, oldest first');
  const last = points[4];
  // The rows are keyed by the database's clock, the same clock as the job rows.
  const [{ now }] = (await server.sluice.pool.query('SELECT now()')).rows;
  assert.ok(Date.parse(last.at) <= now.getTime() && now.getTime() - Date.parse(last.at) < 120_000, 'the last point is the current minute');
  const total = (field: string) => points.reduce((sum: number, p: Record<string, number>) => sum + p[field]!, 0);
  assert.equal(total('shed'), 2, 'shed by both processes');
  assert.equal(total('keyLimited'), 1);
  const sampled = points.filter((p: { ready: number | null }) => p.ready !== null);
  assert.equal(sampled.length, 1, 'one sample, in the minute of the tick');
  assert.deepEqual({ ready: sampled[0].ready, running: sampled[0].running, cap: sampled[0].cap }, { ready: 2, running: 0, cap: 3 });
  assert.equal(typeof sampled[0].lagMs, 'number');
  for (const p of points.filter((p: { ready: number | null }) => p.ready === null)) {
    assert.deepEqual([p.running, p.cap, p.lagMs], [null, null, null], 'gauges null in minutes not sampled');
  }

  assert.equal((await admin('GET', '/api/queues/series/series')).body.points.length, 60, 'default 60 minutes');
  assertValidation(await admin('GET', '/api/queues/series/series?minutes=0'));
  assertValidation(await admin('GET', '/api/queues/series/series?minutes=1441'));
  assertValidation(await admin('GET', '/api/queues/series/series?minutes=soon'));
  assert.equal((await admin('GET', '/api/queues/nope/series')).status, 404);
  assert.equal((await producer('GET', '/api/queues/series/series')).status, 403, 'admin only');

  const listed = await admin('GET', '/api/queues');
  const queue = listed.body.queues.find((q: { name: string }) => q.name === 'series');
  assert.deepEqual(queue.refusals, { shed: 2, keyLimited: 1 }, 'refusals of every process over the last hour');
});

test("every queue's series at once: for each queue what its own route answers; bad minutes refused", async () => {
  await server.sluice.queues.put('all-a', { concurrency: 2 });
  await server.sluice.queues.put('all-b', { maxPending: 1 });
  await server.sluice.send('all-a', null);
  await server.sluice.send('all-b', null);
  await assert.rejects(server.sluice.send('all-b', null), { code: 'queue_full' });
  const [job] = await server.sluice.claim('all-a');
  await server.sluice.complete(job!.id, job!.leaseToken);
  await server.sluice.counts.runOnce();
  await server.sluice.runMaintenance();

  // Read again when a minute turned between the answers compared (the clock is the database's).
  let lastMinutes: string[] = [];
  const { all, each } = await waitFor(
    async () => {
      const all = await admin('GET', '/api/series?minutes=5');
      assert.equal(all.status, 200, all.text);
      const each: Record<string, Answer> = {};
      for (const name of Object.keys(all.body.queues)) each[name] = await admin('GET', `/api/queues/${name}/series?minutes=5`);
      lastMinutes = [all.body.queues['all-a'].at(-1).at, ...Object.values(each).map((a) => a.body.points.at(-1).at)];
      return new Set(lastMinutes).size === 1 ? { all, each } : null;
    },
    { message: 'every answer to end on the same minute', detail: () => lastMinutes },
  );
  assert.equal(all.body.stepSeconds, 60);
  const listed = (await admin('GET', '/api/queues')).body.queues.map((q: { name: string }) => q.name);
  assert.deepEqual(Object.keys(all.body.queues).sort(), listed.sort(), 'every queue');
  for (const [name, answer] of Object.entries(each)) {
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(all.body.queues[name], answer.body.points, `${name}: as GET /api/queues/${name}/series answers`);
  }
  const total = (name: string, field: string) => all.body.queues[name].reduce((n: number, p: Record<string, number>) => n + p[field]!, 0);
  assert.deepEqual([total('all-a', 'completions'), total('all-a', 'shed')], [1, 0]);
  assert.deepEqual([total('all-b', 'completions'), total('all-b', 'shed')], [0, 1]);

  assert.equal((await admin('GET', '/api/series')).body.queues['all-a'].length, 60, 'default 60 minutes');
  assertValidation(await admin('GET', '/api/series?minutes=0'));
  assertValidation(await admin('GET', '/api/series?minutes=1441'));
  assertValidation(await admin('GET', '/api/series?minutes=soon'));
  assert.equal((await producer('GET', '/api/series')).status, 403, 'admin only');
});

test('jobs: each filter and all together, newest first, paged without gaps or repeats while jobs arrive', async () => {
  await server.sluice.queues.put('list-a', {});
  await server.sluice.queues.put('list-b', {});
  const sent: { id: string; queue: string; key: string | null }[] = [];
  for (let i = 0; i < 12; i++) {
    const queue = i % 2 ? 'list-b' : 'list-a';
    const key = i % 3 === 0 ? 'k' : null;
    const { id } = await server.sluice.send(queue, { i }, key ? { key } : {});
    sent.push({ id, queue, key });
  }
  const firstA = sent.find((j) => j.queue === 'list-a')!;
  const claimed = await server.sluice.claim('list-a', { max: 1 });
  assert.equal(claimed[0]!.id, firstA.id);
  const ids = (answer: Answer) => answer.body.jobs.map((j: { id: string }) => j.id);
  const newestFirst = (jobs: typeof sent) => jobs.map((j) => j.id).sort((x, y) => Number(BigInt(y) - BigInt(x)));

  const byQueue = await admin('GET', '/api/jobs?queue=list-b');
  assert.equal(byQueue.status, 200, byQueue.text);
  assert.deepEqual(ids(byQueue), newestFirst(sent.filter((j) => j.queue === 'list-b')));
  assert.equal(byQueue.body.nextCursor, null);
  assert.deepEqual(ids(await admin('GET', '/api/jobs?state=active')), [firstA.id]);
  assert.deepEqual(
    ids(await admin('GET', '/api/jobs?key=k&queue=list-b')),
    newestFirst(sent.filter((j) => j.key === 'k' && j.queue === 'list-b')),
  );
  const all = await admin('GET', '/api/jobs?queue=list-a&state=pending&key=k');
  assert.deepEqual(ids(all), newestFirst(sent.filter((j) => j.queue === 'list-a' && j.key === 'k' && j.id !== firstA.id)));
  const one = all.body.jobs[0];
  assert.deepEqual(one, (await producer('GET', `/api/jobs/${one.id}`)).body, 'the same representation as GET /api/jobs/:id');

  const created = (await server.sluice.get(sent[6]!.id))!.createdAt;
  const since = await admin('GET', `/api/jobs?queue=list-a&since=${encodeURIComponent(created.toISOString())}`);
  assert.deepEqual(ids(since), newestFirst(sent.filter((j) => j.queue === 'list-a' && BigInt(j.id) >= BigInt(sent[6]!.id))));
  const until = await admin('GET', `/api/jobs?queue=list-a&until=${encodeURIComponent(created.toISOString())}`);
  assert.deepEqual(ids(until), newestFirst(sent.filter((j) => j.queue === 'list-a' && BigInt(j.id) < BigInt(sent[6]!.id))));

  // Pages of 5 over both queues while more jobs arrive: the arrivals are newer, so they never shift a page.
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: Answer = await admin('GET', `/api/jobs?queue=list-a&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(page.status, 200, page.text);
    seen.push(...ids(page));
    cursor = page.body.nextCursor;
    pages++;
    await server.sluice.send('list-a', { arrived: pages });
  } while (cursor);
  assert.ok(pages > 1);
  assert.deepEqual(seen, newestFirst(sent.filter((j) => j.queue === 'list-a')), 'every job once, in order');

  assertValidation(await admin('GET', '/api/jobs?state=sleeping'));
  assertValidation(await admin('GET', '/api/jobs?limit=0'));
  assertValidation(await admin('GET', '/api/jobs?limit=501'));
  assertValidation(await admin('GET', '/api/jobs?since=yesterday'));
  assertValidation(await admin('GET', '/api/jobs?cursor=abc'));
  assertValidation(await admin('GET', '/api/jobs?cursor=99999999999999999999'));
  assertValidation(await admin('GET', '/api/jobs?queue=bad%20name'));
  assertValidation(await admin('GET', '/api/jobs?colour=red'));
  assert.equal((await producer('GET', '/api/jobs')).status, 403, 'admin only');
});

test('schedules: each with its next run, as the cron reads it in its zone', async () => {
  await server.sluice.queues.put('cron', {});
  await server.sluice.schedules.put('every-5', { cron: '*/5 * * * *', queue: 'cron', tz: 'Europe/Berlin', data: { n: 1 } });
  const answer = await admin('GET', '/api/schedules');
  assert.equal(answer.status, 200, answer.text);
  const schedule = answer.body.schedules.find((s: { name: string }) => s.name === 'every-5');
  assert.equal(schedule.queue, 'cron');
  assert.equal(schedule.cron, '*/5 * * * *');
  assert.equal(schedule.timezone, 'Europe/Berlin');
  assert.deepEqual(schedule.data, { n: 1 });
  assert.equal(schedule.lastRunAt, null, 'not run yet');
  // The first 5-minute mark after the schedule started (Berlin is a whole number of hours off UTC).
  const next = new Date(schedule.nextRunAt);
  assert.deepEqual([next.getUTCMinutes() % 5, next.getUTCSeconds(), next.getUTCMilliseconds()], [0, 0, 0]);
  const after = Date.parse(schedule.nextRunAt) - Date.parse(schedule.lastSlotAt);
  assert.ok(after > 0 && after <= 300_000, `the next mark, not a later one: ${schedule.lastSlotAt} → ${schedule.nextRunAt}`);
  assert.equal((await call(server.url, 'GET', '/api/schedules')).status, 401);
});

test('the OpenAPI document lists the dashboard routes with their answers', async () => {
  const doc = (await call(server.url, 'GET', '/openapi.json')).body;
  for (const path of ['/api/queues/{queue}/series', '/api/series', '/api/jobs', '/api/schedules']) {
    assert.ok(doc.paths[path]?.get?.responses?.['200'], `${path} documented`);
  }
  const params = doc.paths['/api/jobs'].get.parameters.map((p: { name: string }) => p.name).sort();
  assert.deepEqual(params, ['cursor', 'key', 'limit', 'queue', 'since', 'state', 'until']);
});
