// What a running job reports: progress and log lines, from a library handler and from a
// pull worker. Stored on the job and bounded (4 KiB progress, 2,000-character lines, the
// newest 1,000 lines kept), fenced by the lease like a completion, stamped with the attempt
// that wrote them, announced to event followers, and gone with their job.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '@sluice/testkit';
import { LeaseLostError, PayloadTooLargeError, ValidationError, type JobEvent } from '../src/index.js';
import { makeSluice, sqlClient, uniqueQueue } from './helpers.js';

test("a handler's progress and log lines: stored on the job, read in order, announced to followers", async () => {
  const sluice = await makeSluice();
  const queue = uniqueQueue('notes');
  await sluice.queues.put(queue, {});
  const controller = new AbortController();
  const events = sluice.events(queue, { signal: controller.signal });
  await events.ready;
  const heard: JobEvent[] = [];
  const reading = (async () => {
    for await (const e of events) heard.push(e);
  })();
  const { id } = await sluice.send(queue, { rows: 3 });
  const worker = sluice.work(queue, {}, async (_job, { progress, log }) => {
    for (let done = 1; done <= 3; done++) {
      await log(`row ${done} imported`);
      await progress({ done, total: 3 });
    }
    // Not awaited one by one: written together, in order.
    await Promise.all(['a', 'b', 'c'].map((line) => log(line)));
    return 'ok';
  });
  const job = await sluice.result(id, { timeoutMs: 30_000 });
  await worker.stop();
  assert.deepEqual(job.progress, { done: 3, total: 3 });
  assert.equal(job.logCount, 6);
  const logs = await sluice.logs(id);
  assert.deepEqual(
    logs.lines.map((l) => [l.seq, l.attempt, l.line]),
    [
      [1, 1, 'row 1 imported'],
      [2, 1, 'row 2 imported'],
      [3, 1, 'row 3 imported'],
      [4, 1, 'a'],
      [5, 1, 'b'],
      [6, 1, 'c'],
    ],
  );
  assert.deepEqual([logs.total, logs.dropped], [6, 0]);
  assert.deepEqual(
    (await sluice.logs(id, { afterSeq: 4, limit: 1 })).lines.map((l) => l.line),
    ['b'],
  );

  await waitFor(() => heard.some((e) => e.type === 'completed'), { message: 'the end announced' });
  controller.abort();
  await reading;
  const progress = heard.filter((e) => e.type === 'progress');
  assert.deepEqual(
    progress.map((e) => e.type === 'progress' && e.progress),
    [
      { done: 1, total: 3 },
      { done: 2, total: 3 },
      { done: 3, total: 3 },
    ],
  );
  assert.ok(progress.every((e) => e.type === 'progress' && e.jobId === id));
  const logEvents = heard.filter((e) => e.type === 'log');
  const lastLog = logEvents.at(-1);
  assert.ok(lastLog?.type === 'log' && lastLog.seq === 6, JSON.stringify(logEvents));
});

test('a pull worker reports with its lease token; bounds; a lost lease is refused; a retry stamps its attempt; lines go with their job', async () => {
  const sluice = await makeSluice();
  const client = await sqlClient();
  const queue = uniqueQueue('pull-notes');
  await sluice.queues.put(queue, { maxAttempts: 2, backoff: { baseMs: 0, maxMs: 0 } });
  const { id } = await sluice.send(queue, null);
  const [first] = await sluice.claim(queue, { max: 1 });
  await sluice.progress(id, first!.leaseToken, 0.5);
  assert.equal(await sluice.log(id, first!.leaseToken, 'one'), 1);
  assert.equal(await sluice.log(id, first!.leaseToken, ['two', 'x'.repeat(5000)]), 3);
  assert.equal((await sluice.logs(id)).lines[2]!.line.length, 2000, 'a long line is cut');

  await assert.rejects(sluice.progress(id, first!.leaseToken, 'y'.repeat(5000)), PayloadTooLargeError);
  await assert.rejects(
    sluice.log(
      id,
      first!.leaseToken,
      Array.from({ length: 101 }, () => 'l'),
    ),
    ValidationError,
  );
  await assert.rejects(sluice.log(id, first!.leaseToken, []), ValidationError);
  await assert.rejects(sluice.log(id, '00000000-0000-0000-0000-000000000000', 'stolen'), LeaseLostError);

  await sluice.fail(id, first!.leaseToken, { message: 'try again' });
  await assert.rejects(sluice.log(id, first!.leaseToken, 'late'), LeaseLostError, 'the old attempt cannot write');
  await assert.rejects(sluice.progress(id, first!.leaseToken, 1), LeaseLostError);
  const [second] = await waitFor(async () => {
    const claimed = await sluice.claim(queue, { max: 1 });
    return claimed.length ? claimed : null;
  });
  assert.equal((await sluice.get(id))!.progress, 0.5, 'progress stays until a new value');
  assert.equal(await sluice.log(id, second!.leaseToken, 'second attempt'), 4);
  assert.deepEqual(
    (await sluice.logs(id)).lines.map((l) => l.attempt),
    [1, 1, 1, 2],
  );

  // The newest 1,000 are kept: 1,050 more lines, 100 a call.
  for (let i = 0; i < 1050; i += 100) {
    await sluice.log(
      id,
      second!.leaseToken,
      Array.from({ length: Math.min(100, 1050 - i) }, (_, k) => `bulk ${i + k}`),
    );
  }
  const kept = await sluice.logs(id);
  assert.deepEqual(
    [kept.total, kept.dropped, kept.lines.length, kept.lines[0]!.seq, kept.lines.at(-1)!.line],
    [1054, 54, 1000, 55, 'bulk 1049'],
  );
  await sluice.complete(id, second!.leaseToken, null);

  await client.query(`DELETE FROM sluice.job WHERE id = $1`, [id]);
  assert.equal(
    Number((await client.query(`SELECT count(*) FROM sluice.job_log WHERE job_id = $1`, [id])).rows[0].count),
    0,
    'lines go with their job',
  );
  await assert.rejects(sluice.logs(id), /does not exist/);
  const { id: quiet } = await sluice.send(queue, null);
  assert.deepEqual([(await sluice.get(quiet))!.progress, (await sluice.get(quiet))!.logCount], [null, 0], 'a job that reports nothing');
});
