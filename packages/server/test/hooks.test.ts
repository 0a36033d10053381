// Webhook intake against a real server and PostgreSQL: GitHub-style signed deliveries
// accepted, tampered or unsigned ones refused with nothing written, replays made one job,
// refusals of the queue (shedding, per-key limits) rolled back whole, the acknowledgement
// bound kept while the database holds the delivery up, and the hooks file's checks.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { parseHooksConfig, HooksConfigError, type HooksConfig } from '../src/hooks/config.js';
import { signBody, signatureMatches } from '../src/hooks/signature.js';
import { call, startTestServer, type Answer } from './helpers.js';

const GITHUB_SECRET = 'gh-webhook-secret-0123456789';
const GENERIC_SECRET = 'generic-webhook-secret-0123456789';
/** https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation */
const GITHUB_EXAMPLE_SECRET = "It's a Secret to Everybody";
const GITHUB_EXAMPLE_SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

const hooks: HooksConfig = parseHooksConfig(
  JSON.stringify({
    sources: [
      { name: 'github', queue: 'gh-events', scheme: 'github', secret: GITHUB_SECRET },
      {
        name: 'billing',
        queue: 'billing-events',
        scheme: 'hmac-sha256',
        secretEnv: 'BILLING_SECRET',
        signatureHeader: 'X-Billing-Signature',
        deliveryHeader: 'X-Billing-Delivery',
        eventHeader: 'X-Billing-Event',
      },
      { name: 'slow', queue: 'slow-events', scheme: 'hmac-sha256', secret: GENERIC_SECRET },
      // GitHub's published signature example is signed over a plain-text body: a source that declares text/plain.
      {
        name: 'octo',
        queue: 'gh-events',
        scheme: 'github',
        secret: GITHUB_EXAMPLE_SECRET,
        contentTypes: ['text/plain', 'application/json'],
      },
    ],
    ackTimeoutMs: 1_000,
  }),
  { BILLING_SECRET: GENERIC_SECRET },
);

const server = await startTestServer({ hooks });
const { sluice } = server;
for (const queue of ['gh-events', 'billing-events', 'slow-events']) await sluice.queues.put(queue, {});

/** A push event as GitHub sends it: its headers, and the signature over the exact bytes. */
function githubPush(deliveryId = randomUUID()) {
  const body = JSON.stringify({
    ref: 'refs/heads/main',
    before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
    after: '0000000000000000000000000000000000000000',
    repository: { id: 1296269, full_name: 'octocat/Hello-World', private: false },
    pusher: { name: 'octocat', email: 'octocat@github.com' },
    commits: [{ id: '6113728f27ae82c7b1a177c8d03f9e96e0adf246', message: 'Fix all the bugs ✓', author: { name: 'Monalisa Octocat' } }],
  });
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'GitHub-Hookshot/044aadd',
    'x-github-event': 'push',
    'x-github-delivery': deliveryId,
    'x-github-hook-id': '292430182',
    'x-hub-signature-256': signBody(GITHUB_SECRET, body),
  };
  return { body, headers, deliveryId };
}

async function post(path: string, body: string, headers: Record<string, string>): Promise<Answer> {
  const response = await fetch(`${server.url}${path}`, { method: 'POST', headers, body });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

async function jobsIn(queue: string): Promise<number> {
  const { rows } = await sluice.pool.query<{ n: string }>('SELECT count(*) AS n FROM sluice.job WHERE queue = $1', [queue]);
  return Number(rows[0]!.n);
}

async function deliveriesOf(source: string): Promise<number> {
  const { rows } = await sluice.pool.query<{ n: string }>('SELECT count(*) AS n FROM sluice_server.hook_delivery WHERE source = $1', [
    source,
  ]);
  return Number(rows[0]!.n);
}

test("signatures: GitHub's documented test vector, and constant-time comparison of 32 bytes", () => {
  // From GitHub's "Validating webhook deliveries".
  const secret = "It's a Secret to Everybody";
  const vector = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
  assert.equal(signBody(secret, 'Hello, World!'), vector);
  assert.ok(signatureMatches(secret, Buffer.from('Hello, World!'), vector));
  assert.ok(signatureMatches(secret, Buffer.from('Hello, World!'), vector.toUpperCase().replace('SHA256=', 'sha256=')));
  assert.ok(!signatureMatches(secret, Buffer.from('Hello, World?'), vector));
  assert.ok(!signatureMatches('another secret entirely', Buffer.from('Hello, World!'), vector));
  for (const bad of [undefined, '', 'sha256=', vector.slice(0, -2), `${vector}00`, vector.replace('sha256=', 'sha1='), [vector, vector]]) {
    assert.ok(!signatureMatches(secret, Buffer.from('Hello, World!'), bad), String(bad));
  }
});

test('a GitHub-style signed push is accepted (202) and becomes a job with the payload, event and delivery id', async () => {
  const push = githubPush();
  const answer = await post('/api/hooks/github', push.body, push.headers);
  assert.equal(answer.status, 202, answer.text);
  assert.equal(answer.body.deliveryId, push.deliveryId);
  const job = await sluice.get(answer.body.id);
  assert.ok(job);
  assert.equal(job.queue, 'gh-events');
  assert.equal(job.key, 'github');
  assert.deepEqual(job.data, { source: 'github', deliveryId: push.deliveryId, event: 'push', payload: JSON.parse(push.body) });
});

test("GitHub's form encoding: payload=<JSON> is accepted, signed over the raw form body; a form without it is webhook_body_invalid", async () => {
  const push = githubPush();
  // What GitHub sends for a hook whose content type is application/x-www-form-urlencoded.
  const form = new URLSearchParams({ payload: push.body }).toString();
  const headers = {
    ...push.headers,
    'content-type': 'application/x-www-form-urlencoded',
    'x-hub-signature-256': signBody(GITHUB_SECRET, form),
  };
  const answer = await post('/api/hooks/github', form, headers);
  assert.equal(answer.status, 202, answer.text);
  assert.deepEqual((await sluice.get(answer.body.id))?.data, {
    source: 'github',
    deliveryId: push.deliveryId,
    event: 'push',
    payload: JSON.parse(push.body),
  });

  // The signature over the parsed JSON rather than the bytes sent is refused.
  const resigned = await post('/api/hooks/github', form, {
    ...headers,
    'x-hub-signature-256': signBody(GITHUB_SECRET, push.body),
    'x-github-delivery': randomUUID(),
  });
  assert.equal(resigned.status, 401);

  const before = await deliveriesOf('github');
  for (const bad of ['data=%7B%7D', 'payload=%7Bnot%20json', '']) {
    const refused = await post('/api/hooks/github', bad, {
      ...headers,
      'x-hub-signature-256': signBody(GITHUB_SECRET, bad),
      'x-github-delivery': randomUUID(),
    });
    assert.equal(refused.status, 400, bad);
    assert.equal(refused.body.error, 'webhook_body_invalid');
    assert.match(refused.body.message, /payload/);
  }
  assert.equal(await deliveriesOf('github'), before, 'a refused body records no delivery');
});

test("GitHub's published signature example passes over HTTP; its plain-text body is kept, and refused where undeclared", async () => {
  const body = 'Hello, World!';
  const headers = {
    'content-type': 'text/plain',
    'x-github-event': 'ping',
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': GITHUB_EXAMPLE_SIGNATURE,
  };
  const accepted = await post('/api/hooks/octo', body, headers);
  assert.equal(accepted.status, 202, accepted.text);
  assert.deepEqual((await sluice.get(accepted.body.id))?.data, {
    source: 'octo',
    deliveryId: headers['x-github-delivery'],
    event: 'ping',
    payload: 'Hello, World!',
  });

  // Signed right, but declared JSON: the signature passes, the body does not.
  const asJson = await post('/api/hooks/octo', body, { ...headers, 'content-type': 'application/json', 'x-github-delivery': randomUUID() });
  assert.equal(asJson.status, 400);
  assert.deepEqual(asJson.body, {
    error: 'webhook_body_invalid',
    message: 'the webhook body is declared application/json but is not UTF-8 JSON',
  });
  // A type the source does not declare.
  const asForm = await post('/api/hooks/octo', body, {
    ...headers,
    'content-type': 'application/x-www-form-urlencoded',
    'x-github-delivery': randomUUID(),
  });
  assert.equal(asForm.status, 415);
  assert.equal(asForm.body.error, 'unsupported_media_type');
  assert.match(asForm.body.message, /text\/plain or application\/json/);
  // One byte changed: the example's signature no longer matches.
  const tampered = await post('/api/hooks/octo', 'Hello, World?', { ...headers, 'x-github-delivery': randomUUID() });
  assert.equal(tampered.status, 401);
});

test('a tampered, unsigned, wrongly signed or unknown-source delivery is 401 and writes nothing', async () => {
  const before = { jobs: await jobsIn('gh-events'), deliveries: await deliveriesOf('github') };
  const push = githubPush();
  const tampered = push.body.replace('"private":false', '"private":true');
  assert.notEqual(tampered, push.body);
  const { 'x-hub-signature-256': _signature, ...unsigned } = push.headers;
  const attempts: [string, string, Record<string, string>][] = [
    ['/api/hooks/github', tampered, push.headers],
    ['/api/hooks/github', push.body, unsigned],
    ['/api/hooks/github', push.body, { ...push.headers, 'x-hub-signature-256': signBody('not-the-secret-0123456789', push.body) }],
    ['/api/hooks/github', push.body, { ...push.headers, 'x-hub-signature-256': 'sha256=zz' }],
    // The generic scheme's header does not stand in for GitHub's.
    ['/api/hooks/github', push.body, { ...unsigned, 'x-signature-256': signBody(GITHUB_SECRET, push.body) }],
    ['/api/hooks/gitlab', push.body, push.headers],
  ];
  for (const [path, body, headers] of attempts) {
    const answer = await post(path, body, headers);
    assert.equal(answer.status, 401, `${path} ${answer.text}`);
    assert.equal(answer.body.error, 'unauthorized');
  }
  assert.equal(await jobsIn('gh-events'), before.jobs);
  assert.equal(await deliveriesOf('github'), before.deliveries);
  // The same delivery, untampered, is still accepted afterwards.
  assert.equal((await post('/api/hooks/github', push.body, push.headers)).status, 202);
});

test('100 replays of one delivery make one job: one 202, then 200 duplicates with the same id', async () => {
  const push = githubPush();
  const before = await jobsIn('gh-events');
  const answers: Answer[] = [];
  // 100 deliveries, 10 in flight at a time: concurrent replays race for the one record.
  for (let round = 0; round < 10; round++) {
    answers.push(...(await Promise.all(Array.from({ length: 10 }, () => post('/api/hooks/github', push.body, push.headers)))));
  }
  const accepted = answers.filter((a) => a.status === 202);
  const duplicates = answers.filter((a) => a.status === 200);
  assert.equal(accepted.length, 1, answers.map((a) => a.status).join(','));
  assert.equal(duplicates.length, 99);
  const id = accepted[0]!.body.id;
  assert.ok(duplicates.every((a) => a.body.id === id && a.body.duplicate === true));
  assert.equal(await jobsIn('gh-events'), before + 1);

  // Still a duplicate after its job finished.
  const [claimed] = await sluice.claim('gh-events', { max: 100 }).then((jobs) => jobs.filter((j) => j.id === id));
  assert.ok(claimed);
  await sluice.complete(claimed.id, claimed.leaseToken, { ok: true });
  const late = await post('/api/hooks/github', push.body, push.headers);
  assert.equal(late.status, 200);
  assert.equal(late.body.id, id);
  assert.equal(await jobsIn('gh-events'), before + 1);
});

test('the generic hmac-sha256 scheme: configured headers, secret from the environment; bad input is a 400 or 415', async () => {
  const body = JSON.stringify({ type: 'invoice.paid', amount: 4200 });
  const deliveryId = randomUUID();
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'x-billing-signature': signBody(GENERIC_SECRET, body),
    'x-billing-delivery': deliveryId,
    'x-billing-event': 'invoice.paid',
  };
  const accepted = await post('/api/hooks/billing', body, headers);
  assert.equal(accepted.status, 202, accepted.text);
  assert.deepEqual((await sluice.get(accepted.body.id))?.data, {
    source: 'billing',
    deliveryId,
    event: 'invoice.paid',
    payload: { type: 'invoice.paid', amount: 4200 },
  });

  const { 'x-billing-delivery': _id, ...noDelivery } = headers;
  const missing = await post('/api/hooks/billing', body, noDelivery);
  assert.equal(missing.status, 400);
  assert.match(missing.body.message, /x-billing-delivery/);

  const plain = 'invoice paid';
  const notJson = await post('/api/hooks/billing', plain, {
    ...headers,
    'content-type': 'text/plain',
    'x-billing-signature': signBody(GENERIC_SECRET, plain),
    'x-billing-delivery': randomUUID(),
  });
  assert.equal(notJson.status, 415);
  const broken = '{"type": ';
  const badJson = await post('/api/hooks/billing', broken, {
    ...headers,
    'x-billing-signature': signBody(GENERIC_SECRET, broken),
    'x-billing-delivery': randomUUID(),
  });
  assert.equal(badJson.status, 400);
  assert.equal(await deliveriesOf('billing'), 1, 'only the accepted delivery was recorded');
});

test('shedding and per-key limits apply: the refusal writes nothing, and the retry of the delivery is accepted later', async () => {
  await sluice.queues.put('billing-events', { maxPending: 0 });
  const body = JSON.stringify({ type: 'invoice.created' });
  const deliveryId = randomUUID();
  const headers = {
    'content-type': 'application/json',
    'x-billing-signature': signBody(GENERIC_SECRET, body),
    'x-billing-delivery': deliveryId,
  };
  const before = { jobs: await jobsIn('billing-events'), deliveries: await deliveriesOf('billing') };
  const shed = await post('/api/hooks/billing', body, headers);
  assert.equal(shed.status, 503, shed.text);
  assert.equal(shed.body.error, 'queue_full');
  assert.ok(Number(shed.headers.get('retry-after')) >= 1);
  assert.deepEqual({ jobs: await jobsIn('billing-events'), deliveries: await deliveriesOf('billing') }, before);

  // The source's name is the jobs' key: maxPerKey bounds one source's jobs in the system.
  await sluice.queues.put('billing-events', { maxPerKey: before.jobs + 1 });
  assert.equal((await post('/api/hooks/billing', body, headers)).status, 202, 'the same delivery, once there is room');
  const other = JSON.stringify({ type: 'invoice.voided' });
  const limited = await post('/api/hooks/billing', other, {
    ...headers,
    'x-billing-signature': signBody(GENERIC_SECRET, other),
    'x-billing-delivery': randomUUID(),
  });
  assert.equal(limited.status, 429, limited.text);
  assert.equal(limited.body.error, 'key_limit');
  assert.equal(await deliveriesOf('billing'), before.deliveries + 1);
});

test('held up past the acknowledgement bound, a delivery is answered 503; once recorded, its retry is a duplicate', async () => {
  const body = JSON.stringify({ n: 1 });
  const deliveryId = randomUUID();
  const headers = { 'content-type': 'application/json', 'x-signature-256': signBody(GENERIC_SECRET, body), 'idempotency-key': deliveryId };
  // Another transaction holds the delivery's row (as a concurrent first delivery would).
  const holder = new pg.Client({ connectionString: server.db.url });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('INSERT INTO sluice_server.hook_delivery (source, delivery_id) VALUES ($1, $2)', ['slow', deliveryId]);
    const held = await post('/api/hooks/slow', body, headers);
    assert.equal(held.status, 503, held.text);
    assert.equal(held.body.error, 'admission_unavailable');
    assert.equal(held.headers.get('retry-after'), '1');
    // The holder gives up: the held intake takes the delivery over and enqueues it.
    await holder.query('ROLLBACK');
  } finally {
    await holder.end();
  }
  const { waitFor } = await import('@sluice/testkit');
  await waitFor(async () => (await jobsIn('slow-events')) === 1, { message: 'the held intake finished' });
  const retry = await post('/api/hooks/slow', body, headers);
  assert.equal(retry.status, 200, retry.text);
  assert.equal(retry.body.duplicate, true);
  assert.equal(await jobsIn('slow-events'), 1);
});

test('the hooks file: secrets from the environment, unknown fields, short secrets and duplicates refused without echoing a secret', () => {
  const source = { name: 'gh', queue: 'q', scheme: 'github', secret: 'a-secret-of-enough-length' };
  const parse = (value: unknown, env: NodeJS.ProcessEnv = {}) => parseHooksConfig(JSON.stringify(value), env);
  assert.equal(parse({ sources: [source] }).sources[0]!.secret, 'a-secret-of-enough-length');
  assert.equal(
    parse({ sources: [{ ...source, secret: undefined, secretEnv: 'S' }] }, { S: 'from-the-environment-0123' }).sources[0]!.secret,
    'from-the-environment-0123',
  );
  assert.deepEqual(parse({ sources: [source] }).sources[0]!.contentTypes, ['application/json', 'application/x-www-form-urlencoded']);
  assert.deepEqual(parse({ sources: [{ ...source, contentTypes: ['Text/Plain', 'text/plain'] }] }).sources[0]!.contentTypes, [
    'text/plain',
  ]);
  const refusals: [unknown, RegExp][] = [
    [{ sources: [{ ...source, secret: 'short-secret' }] }, /sources\[0\]\.secret must give a secret of at least 16/],
    [{ sources: [{ ...source, secret: undefined, secretEnv: 'MISSING' }] }, /secretEnv \(MISSING\)/],
    [{ sources: [{ ...source, secretEnv: 'S' }] }, /exactly one of secret and secretEnv/],
    [{ sources: [{ ...source, scheme: 'md5' }] }, /scheme must be/],
    [{ sources: [{ ...source, name: 'Has Spaces' }] }, /name must be/],
    [{ sources: [{ ...source, signatureHeader: 'x-sig' }] }, /custom headers are for hmac-sha256/],
    [{ sources: [source, source] }, /named twice/],
    [{ sources: [{ ...source, url: 'x' }] }, /unknown field "url"/],
    [{ sourcez: [] }, /unknown field "sourcez"/],
    [{ sources: [{ ...source, contentTypes: [] }] }, /contentTypes must be a non-empty list of media types/],
    [{ sources: [{ ...source, contentTypes: ['json'] }] }, /contentTypes must be/],
    [{ ackTimeoutMs: 10 }, /ackTimeoutMs must be/],
  ];
  for (const [value, message] of refusals) {
    assert.throws(
      () => parse(value),
      (err: Error) => err instanceof HooksConfigError && message.test(err.message) && !err.message.includes('a-secret-of-enough-length'),
      String(message),
    );
  }
  assert.throws(() => parseHooksConfig('{', {}), /not JSON/);
});

test('OpenAPI documents the intake as authenticated by its signature, not a token', async () => {
  const { body } = await call(server.url, 'GET', '/openapi.json');
  const intake = body.paths['/api/hooks/{source}'].post;
  assert.deepEqual(intake.security, []);
  assert.ok(intake.responses['202'] && intake.responses['200'] && intake.responses['4XX'], Object.keys(intake.responses).join());
});

test('--hooks-file and SLUICE_HOOKS_FILE load the sources; a bad file stops the start with its reason', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { loadConfig, ConfigError } = await import('../src/config.js');
  const dir = mkdtempSync(join(tmpdir(), 'sluice-hooks-'));
  writeFileSync(
    join(dir, 'hooks.json'),
    JSON.stringify({ sources: [{ name: 'gh', queue: 'q', scheme: 'github', secretEnv: 'GH_SECRET' }] }),
  );
  const fromFlag = loadConfig(['--hooks-file', 'hooks.json'], { GH_SECRET: 'flag-secret-0123456789' }, dir);
  assert.deepEqual(
    fromFlag.hooks.sources.map((s) => [s.name, s.queue, s.signatureHeader]),
    [['gh', 'q', 'x-hub-signature-256']],
  );
  assert.equal(
    loadConfig([], { SLUICE_HOOKS_FILE: join(dir, 'hooks.json'), GH_SECRET: 'env-secret-0123456789' }, dir).hooks.sources[0]!.secret,
    'env-secret-0123456789',
  );
  assert.deepEqual(loadConfig([], {}, dir).hooks.sources, []);
  assert.throws(
    () => loadConfig(['--hooks-file', 'hooks.json'], { GH_SECRET: 'short' }, dir),
    (err: Error) =>
      err instanceof ConfigError && /hooks file hooks\.json .*at least 16/.test(err.message) && !err.message.includes('short'),
  );
  assert.throws(() => loadConfig(['--hooks-file', 'missing.json'], {}, dir), /cannot be read: ENOENT/);
});
