// The queue commands of the `sluice` binary, run as a real process against a real database.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, waitFor, type TestDatabase } from '@sluice/testkit';
import { Sluice } from 'sluice';
import { pastTime } from '../src/connect.js';

const BIN = fileURLToPath(new URL('../bin/sluice.js', import.meta.url));
const HANDLER = fileURLToPath(new URL('./fixtures/double.mjs', import.meta.url));
const silent = { error() {}, warn() {}, info() {}, debug() {} };
/** A data directory where no server has recorded itself. */
const emptyDir = mkdtempSync(join(tmpdir(), 'sluice-cli-'));

let db: TestDatabase;
let sluice: Sluice;
const ready = (async () => {
  db = await createTestDatabase();
  sluice = new Sluice({ connectionString: db.url, logger: silent });
})();
after(async () => {
  rmSync(emptyDir, { recursive: true, force: true });
  await sluice?.close();
  await db?.drop();
});

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, DATABASE_URL: db.url, ...env }, timeout: 60_000 },
      (error, out, err) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, out, err }),
    );
  });
}

test('migrate, queues put/list/pause/resume, and --help on every command', async () => {
  await ready;
  const migrated = await run(['migrate']);
  assert.equal(migrated.code, 0, migrated.err);
  assert.match(migrated.out, /schema already at version \d+/);
  const fresh = await run(['migrate', '--schema', 'cli_fresh', '--json']);
  assert.ok(JSON.parse(fresh.out).applied.length >= 3);

  const put = await run([
    'queues',
    'put',
    'emails',
    '--concurrency',
    '40',
    '--max-per-key',
    '3',
    '--max-pending',
    '2',
    '--backoff-base-ms',
    '500',
  ]);
  assert.equal(put.code, 0, put.err);
  assert.match(put.out, /emails\s+40\s+-\s+3\s+2\s+5\s+600s\s+no/);
  const list = JSON.parse((await run(['queues', 'list', '--json'])).out);
  assert.deepEqual(
    list.map((q: { name: string }) => q.name),
    ['emails'],
  );
  assert.equal(list[0].backoff.baseMs, 500);
  assert.match((await run(['queues', 'pause', 'emails'])).out, /emails paused/);
  assert.match((await run(['queues', 'resume', 'emails'])).out, /emails resumed/);

  for (const command of [
    [],
    ['queues', 'put'],
    ['send'],
    ['stats'],
    ['dead', 'list'],
    ['replay'],
    ['cancel'],
    ['schedules', 'put'],
    ['worker'],
    ['migrate'],
  ]) {
    const help = await run([...command, '--help']);
    assert.equal(help.code, 0, `${command.join(' ')} --help`);
    assert.match(help.out, /Usage: sluice/);
  }
  const bad = await run(['queues', 'put', 'x', '--concurrency', 'lots']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--concurrency must be an integer/);
});

test('send, refusals with a one-line reason, stats table and JSON', async () => {
  await ready;
  await sluice.queues.put('cli-send', { maxPending: 2, maxPerKey: 1, concurrency: 7 });
  const sent = await run(['send', 'cli-send', '{"n":1}', '--key', 'u1']);
  assert.equal(sent.code, 0, sent.err);
  const id = /enqueued job (\d+)/.exec(sent.out)?.[1];
  assert.ok(id);
  assert.deepEqual((await sluice.get(id!))?.data, { n: 1 });
  const limited = await run(['send', 'cli-send', '{}', '--key', 'u1']);
  assert.equal(limited.code, 2);
  assert.match(limited.err, /^sluice: key "u1" has 1 jobs in queue "cli-send" \(limit 1\)\n$/);
  await run(['send', 'cli-send', '{}']);
  const full = await run(['send', 'cli-send', '{}']);
  assert.equal(full.code, 2);
  assert.match(full.err, /is full/);
  const badJson = await run(['send', 'cli-send', '{nope']);
  assert.equal(badJson.code, 2);
  assert.match(badJson.err, /data is not valid JSON/);
  const missing = await run(['send', 'no-such-queue', '{}']);
  assert.match(missing.err, /queue "no-such-queue" does not exist/);

  const stats = await run(['stats', '--queue', 'cli-send']);
  assert.match(stats.out, /queue\s+ready\s+scheduled\s+waiting\s+active\/cap\s+dead\s+lag/);
  assert.match(stats.out, /cli-send\s+2\s+0\s+0\s+0\/7\s+0/);
  const watched = await run(['stats', '--queue', 'cli-send', '--watch', '1', '--count', '2', '--json']);
  const lines = watched.out.trim().split('\n');
  assert.equal(lines.length, 2);
  assert.equal(JSON.parse(lines[1]!)[0].ready, 2);
  const noDb = await run(['stats'], { DATABASE_URL: '', SLUICE_DATA_DIR: emptyDir });
  assert.match(noDb.err, /no database: pass --database-url, set DATABASE_URL, or start the server here/);
});

test('queues put takes a rate, a budget and a max wait; list and stats show them, their use and the jobs held back', async () => {
  await ready;
  const put = await run(['queues', 'put', 'cli-rated', '--rate-limit', '2/10m', '--budget', '10000/60s', '--max-wait', '2h']);
  assert.equal(put.code, 0, put.err);
  assert.match(put.out, /rate\s+budget\s+max wait\s+rate\/key\s+budget\/key\s+durability\n/);
  assert.match(put.out, /cli-rated\s+-\s+-\s+-\s+-\s+5\s+600s\s+no\s+2\/10m\s+10000\/60s\s+2h\s+-\s+-\s+flush\n/);
  const queue = await sluice.queues.get('cli-rated');
  assert.deepEqual(
    [queue?.rateLimit, queue?.budget, queue?.maxWaitMs],
    [{ count: 2, periodMs: 600_000 }, { units: 10_000, periodMs: 60_000 }, 7_200_000],
  );

  await sluice.sendMany(
    'cli-rated',
    [4000, 120, 5000, 900].map((cost) => ({ data: null, cost })),
  );
  assert.equal((await sluice.claim('cli-rated', { max: 4 })).length, 2, 'the rate lets two start');
  const stats = await run(['stats', '--queue', 'cli-rated']);
  assert.equal(stats.code, 0, stats.err);
  assert.match(stats.out, /rate used\s+budget used\s+held\n/);
  assert.match(stats.out, /cli-rated\s+2\s+0\s+0\s+2\/∞\s+0\s+\S+\s+2\/2 per 10m\s+4120\/10000 per 60s\s+2\n/);
  const [json] = JSON.parse((await run(['stats', '--queue', 'cli-rated', '--json'])).out);
  assert.deepEqual(
    [json.rateUse, json.budgetUse, json.heldBack],
    [{ used: 2, limit: 2, periodMs: 600_000 }, { used: 4120, limit: 10_000, periodMs: 60_000 }, 2],
  );
  assert.match((await run(['stats', '--queue', 'cli-send'])).out, /cli-send\s+.*\s+-\s+-\s+0\n/, 'a queue without either');

  for (const [args, reason] of [
    [['--rate-limit', '50'], /--rate-limit must be AMOUNT\/PERIOD such as 50\/1s/],
    [['--rate-limit', '0/1s'], /--rate-limit must be AMOUNT\/PERIOD/],
    [['--budget', '100/1d'], /--budget must be AMOUNT\/PERIOD .* got "100\/1d"/],
    [['--max-wait', '30'], /--max-wait must be a duration .* such as 500ms, 30s/],
    [['--rate-limit', '5/25h'], /rateLimit.periodMs must be an integer between 1 and 86400000/],
    [['--max-wait', '30s'], /maxWaitMs needs a rateLimit or a budget/],
    [['--durability', 'fast'], /durability must be 'flush' or 'async', got "fast"/],
  ] as const) {
    const bad = await run(['queues', 'put', 'cli-rated', ...args]);
    assert.equal(bad.code, 2, args.join(' '));
    assert.match(bad.err, reason);
    assert.equal(bad.err.trim().split('\n').length, 1, 'one line');
  }
  assert.deepEqual((await sluice.queues.get('cli-rated'))?.rateLimit, { count: 2, periodMs: 600_000 }, 'refused puts changed nothing');
  assert.equal((await run(['queues', 'put', 'cli-per-second', '--rate-limit', '50/s', '--durability', 'async', '--json'])).code, 0);
  assert.equal((await sluice.queues.get('cli-per-second'))?.durability, 'async');
  assert.deepEqual((await sluice.queues.get('cli-per-second'))?.rateLimit, { count: 50, periodMs: 1000 }, '50/s is 50 per second');
});

test('queues put takes a per-key rate and budget; list shows them; a put without them removes them', async () => {
  await ready;
  const put = await run([
    'queues',
    'put',
    'cli-per-key',
    '--rate-limit',
    '50/1s',
    '--per-key-rate-limit',
    '5/1s',
    '--per-key-budget',
    '100/60s',
  ]);
  assert.equal(put.code, 0, put.err);
  assert.match(put.out, /max wait\s+rate\/key\s+budget\/key\s+durability\n/);
  assert.match(put.out, /cli-per-key\s+.*\s+50\/1s\s+-\s+-\s+5\/1s\s+100\/60s\s+flush\n/);
  const queue = await sluice.queues.get('cli-per-key');
  assert.deepEqual(
    [queue?.perKeyRateLimit, queue?.perKeyBudget],
    [
      { count: 5, periodMs: 1000 },
      { units: 100, periodMs: 60_000 },
    ],
  );
  const [listed] = JSON.parse((await run(['queues', 'list', '--json'])).out).filter((q: { name: string }) => q.name === 'cli-per-key');
  assert.deepEqual(
    [listed.perKeyRateLimit, listed.perKeyBudget],
    [
      { count: 5, periodMs: 1000 },
      { units: 100, periodMs: 60_000 },
    ],
  );
  assert.match((await run(['queues', 'list'])).out, /cli-per-key\s+.*\s+5\/1s\s+100\/60s\s+flush\n/);

  for (const [args, reason] of [
    [['--per-key-rate-limit', '5'], /--per-key-rate-limit must be AMOUNT\/PERIOD such as 50\/1s/],
    [['--per-key-budget', '0/60s'], /--per-key-budget must be AMOUNT\/PERIOD .* got "0\/60s"/],
    [['--per-key-budget', '100/25h'], /perKeyBudget.periodMs must be an integer between 1 and 86400000/],
  ] as const) {
    const bad = await run(['queues', 'put', 'cli-per-key', ...args]);
    assert.equal(bad.code, 2, args.join(' '));
    assert.match(bad.err, reason);
    assert.equal(bad.err.trim().split('\n').length, 1, 'one line');
  }
  assert.deepEqual(
    (await sluice.queues.get('cli-per-key'))?.perKeyBudget,
    { units: 100, periodMs: 60_000 },
    'refused puts changed nothing',
  );

  // put replaces the whole policy: a per-key window left out is removed, as a rate left out is.
  const cleared = await run(['queues', 'put', 'cli-per-key', '--per-key-budget', '100/60s']);
  assert.equal(cleared.code, 0, cleared.err);
  assert.match(cleared.out, /cli-per-key\s+.*\s+-\s+-\s+-\s+-\s+100\/60s\s+flush\n/);
  const stored = await sluice.queues.get('cli-per-key');
  assert.deepEqual([stored?.rateLimit, stored?.perKeyRateLimit, stored?.perKeyBudget], [null, null, { units: 100, periodMs: 60_000 }]);
});

test('jobs list: filters, a table or JSON, pages by cursor, bad input refused in one line', async () => {
  await ready;
  await sluice.queues.put('cli-jobs', {});
  await sluice.queues.put('cli-other', {});
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await sluice.send('cli-jobs', { i }, { key: 'cli-jobs-tenant' })).id);
  await sluice.send('cli-other', null);
  const [claimed] = await sluice.claim('cli-jobs');

  const table = await run(['jobs', 'list', '--queue', 'cli-jobs']);
  assert.equal(table.code, 0, table.err);
  assert.match(table.out, /id\s+queue\s+state\s+key\s+attempts\s+created/);
  assert.equal(table.out.trim().split('\n').length, 5, 'header, rule and three jobs');

  const active = JSON.parse((await run(['jobs', 'list', '--queue', 'cli-jobs', '--state', 'active', '--json'])).out);
  assert.deepEqual(
    active.jobs.map((j: { id: string }) => j.id),
    [claimed!.id],
  );

  const first = JSON.parse((await run(['jobs', 'list', '--key', 'cli-jobs-tenant', '--limit', '2', '--json'])).out);
  assert.deepEqual(
    first.jobs.map((j: { id: string }) => j.id),
    [ids[2], ids[1]],
  );
  assert.ok(first.nextCursor);
  const second = JSON.parse(
    (await run(['jobs', 'list', '--key', 'cli-jobs-tenant', '--limit', '2', '--cursor', first.nextCursor, '--json'])).out,
  );
  assert.deepEqual(
    second.jobs.map((j: { id: string }) => j.id),
    [ids[0]],
  );
  assert.equal(second.nextCursor, null);
  assert.match(
    (await run(['jobs', 'list', '--key', 'cli-jobs-tenant', '--limit', '2'])).out,
    new RegExp(`more: --cursor ${first.nextCursor}`),
  );

  const bad = await run(['jobs', 'list', '--state', 'sleeping']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /^sluice: state must be one of/);
});

test('an unknown queue is an error in CLI terms, not "no jobs"', async () => {
  await ready;
  for (const args of [
    ['send', 'cli-typo', '{}'],
    ['jobs', 'list', '--queue', 'cli-typo'],
    ['dead', 'list', '--queue', 'cli-typo'],
    ['replay', '--queue', 'cli-typo'],
    ['stats', '--queue', 'cli-typo'],
  ]) {
    const typo = await run(args);
    assert.equal(typo.code, 2, args.join(' '));
    assert.equal(
      typo.err,
      'sluice: queue "cli-typo" does not exist ("sluice queues list" shows the queues, "sluice queues put cli-typo" creates it)\n',
      args.join(' '),
    );
  }
});

test('--since and --until take an age (1h ago), today, yesterday or an ISO time', async () => {
  await ready;
  const now = new Date(2030, 0, 31, 15, 30);
  const at = pastTime('--since', () => new Date(now));
  assert.deepEqual(at('1h'), new Date(2030, 0, 31, 14, 30));
  assert.deepEqual(at('30m'), new Date(2030, 0, 31, 15, 0));
  assert.deepEqual(at('2d'), new Date(2030, 0, 29, 15, 30));
  assert.deepEqual(at('1w'), new Date(2030, 0, 24, 15, 30));
  assert.deepEqual(at('today'), new Date(2030, 0, 31));
  assert.deepEqual(at('Yesterday'), new Date(2030, 0, 30));
  assert.deepEqual(at('2030-01-31T12:00:00Z'), new Date('2030-01-31T12:00:00Z'));
  for (const bad of ['1y', 'soon', '-1h', '5'])
    assert.throws(() => at(bad), /--since must be a time such as 1h \(an hour ago\), 30m, 2d, today, yesterday or 2030-01-31T12:00:00Z/);

  await sluice.queues.put('cli-since', {});
  const { id } = await sluice.send('cli-since', null);
  const recent = JSON.parse((await run(['jobs', 'list', '--queue', 'cli-since', '--since', '1h', '--json'])).out);
  assert.deepEqual(
    recent.jobs.map((j: { id: string }) => j.id),
    [id],
  );
  const older = JSON.parse((await run(['jobs', 'list', '--queue', 'cli-since', '--until', '1h', '--json'])).out);
  assert.deepEqual(older.jobs, []);
  const bad = await run(['jobs', 'list', '--since', 'last week']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--since must be a time such as 1h/);
});

test('send holds a singleton key over a period and debounces; flow sends jobs with their dependencies from a file', async () => {
  await ready;
  await sluice.queues.put('cli-unique', {});
  const period = ['send', 'cli-unique', '"deadline"', '--singleton-key', 'deadline:hw1', '--singleton-period', '1h', '--json'];
  const first = JSON.parse((await run(period)).out);
  const [claimed] = await sluice.claim('cli-unique', { max: 1 });
  await sluice.complete(first.id, claimed!.leaseToken, null);
  assert.deepEqual(JSON.parse((await run(period)).out), { id: first.id, deduplicated: true }, 'completed, within the hour');

  const debounced = ['send', 'cli-unique', '--debounce-key', 'sync:r1', '--debounce-delay', '1h', '--json'];
  const d1 = JSON.parse((await run([...debounced, '--', '{"v":1}'])).out);
  const d2 = JSON.parse((await run([...debounced, '--', '{"v":2}'])).out);
  assert.deepEqual(d2, { id: d1.id, deduplicated: true });
  assert.deepEqual((await sluice.get(d1.id))?.data, { v: 2 });
  const noDelay = await run(['send', 'cli-unique', '--debounce-key', 'k']);
  assert.deepEqual([noDelay.code, noDelay.err], [2, 'sluice: --debounce-key needs --debounce-delay, such as 10s\n']);

  const dir = mkdtempSync(join(tmpdir(), 'sluice-flow-'));
  const file = join(dir, 'flow.json');
  writeFileSync(
    file,
    JSON.stringify([
      { ref: 'tests', queue: 'cli-unique', data: 'unit' },
      { ref: 'grade', queue: 'cli-unique', data: null, dependsOn: ['tests'] },
    ]),
  );
  const flow = await run(['flow', file]);
  assert.equal(flow.code, 0, flow.err);
  const ids = Object.fromEntries([...flow.out.matchAll(/^(\w+)\tjob (\d+)$/gm)].map((m) => [m[1], m[2]]));
  assert.deepEqual([(await sluice.get(ids.tests!))?.state, (await sluice.get(ids.grade!))?.state], ['pending', 'waiting']);
  writeFileSync(file, JSON.stringify([{ ref: 'a', queue: 'cli-unique', dependsOn: ['a'] }]));
  const cycle = await run(['flow', file]);
  assert.equal(cycle.code, 2);
  assert.match(cycle.err, /^sluice: .*cycle/);
  rmSync(dir, { recursive: true, force: true });
  await sluice.cancel(d1.id);
});

test('dead list, replay one and by filter, cancel', async () => {
  await ready;
  await sluice.queues.put('cli-dead', { maxAttempts: 1 });
  const ids: string[] = [];
  for (const message of ['smtp timeout', 'smtp timeout', 'bad address']) {
    const { id } = await sluice.send('cli-dead', {});
    const [job] = await sluice.claim('cli-dead');
    await sluice.fail(job!.id, job!.leaseToken, { message });
    ids.push(id);
  }
  const list = await run(['dead', 'list', '--queue', 'cli-dead']);
  assert.match(list.out, /id\s+queue\s+attempts\s+died\s+last error/);
  assert.equal(list.out.trim().split('\n').length, 5);
  const filtered = JSON.parse((await run(['dead', 'list', '--error', 'SMTP', '--json'])).out);
  assert.equal(filtered.length, 2);
  const one = await run(['replay', ids[2]!]);
  assert.match(one.out, new RegExp(`job ${ids[2]} is pending again`));
  const bulk = await run(['replay', '--queue', 'cli-dead', '--error', 'timeout']);
  assert.match(bulk.out, /replayed 2 dead job\(s\)/);
  assert.equal((await sluice.stats('cli-dead')).ready, 3);
  const neither = await run(['replay']);
  assert.equal(neither.code, 2);
  assert.match(neither.err, /give a job id, or a filter/);
  const cancelled = await run(['cancel', ids[0]!]);
  assert.match(cancelled.out, /cancelled/);
  const again = await run(['cancel', ids[0]!]);
  assert.match(again.err, /it is cancelled, and only waiting, pending or active jobs can be/);
});

test('schedules put, list, remove; an invalid cron expression is refused with its reason', async () => {
  await ready;
  await sluice.queues.put('cli-cron', {});
  const put = await run([
    'schedules',
    'put',
    'nightly',
    '--cron',
    '0 3 * * *',
    '--tz',
    'Europe/Paris',
    '--queue',
    'cli-cron',
    '--data',
    '{"r":1}',
  ]);
  assert.equal(put.code, 0, put.err);
  assert.match(put.out, /schedule nightly: next slot \d{4}-/);
  assert.match((await run(['schedules', 'list'])).out, /nightly\s+0 3 \* \* \*\s+Europe\/Paris\s+cli-cron\s+latest/);
  const bad = await run(['schedules', 'put', 'broken', '--cron', '99 * * * *', '--queue', 'cli-cron']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /invalid cron expression/);
  assert.match((await run(['schedules', 'remove', 'nightly'])).out, /removed/);
  assert.match((await run(['schedules', 'remove', 'nightly'])).err, /does not exist/);
});

test('worker runs a handler module until SIGTERM, then drains and exits 0', async () => {
  await ready;
  await sluice.queues.put('cli-work', {});
  const sent = await sluice.sendMany(
    'cli-work',
    [1, 2, 3].map((n) => ({ data: { n } })),
  );
  const child = spawn(process.execPath, [BIN, 'worker', '--queue', 'cli-work', '--handler', HANDLER, '--concurrency', '2'], {
    env: { ...process.env, DATABASE_URL: db.url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  await waitFor(async () => (await sluice.stats('cli-work')).completed === 3, { timeoutMs: 60_000, message: 'three jobs done' });
  for (const [i, { id }] of sent.entries()) assert.deepEqual((await sluice.get(id))?.result, { doubled: (i + 1) * 2 });
  child.kill('SIGTERM');
  const [code] = await once(child, 'exit');
  assert.equal(code, 0, err);
  assert.match(err, /stopped/);
  const broken = await run(['worker', '--queue', 'cli-work', '--handler', '/nonexistent/module.mjs']);
  assert.equal(broken.code, 2);
  assert.match(broken.err, /cannot load handler module/);
});
