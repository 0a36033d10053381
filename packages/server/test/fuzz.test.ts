// The HTTP API under a seeded fuzzer: every registered route gets malformed JSON, wrong
// types, huge and deeply nested bodies, injection-looking names, keys and ids, hostile
// numbers, missing, forged and wrong-kind tokens, unknown methods and content types.
// Expected: no 5xx (503 only for honest shedding), every refusal is `{ error, message }`
// with a known code, a refused request writes nothing (the schema's tables are
// checksummed around it), and the server is healthy afterwards. Text PostgreSQL cannot
// store (NUL, unpaired surrogates: in strings, in keys, nested in JSON) is mixed into every
// field, and aimed on purpose at every field a route stores, where it must be a 400 that
// names the field. A few raw-socket cases cover what `inject` cannot send: invalid UTF-8,
// wrong Content-Length, bad headers.
// FUZZ_SEED and FUZZ_CASES override the defaults; a failure prints the seed to rerun.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import fc from 'fast-check';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Sluice } from 'sluice';
import { startWithMissions } from './missions-app.js';
import { registeredRoutes, type RegisteredRoute } from './routes.js';
import { startTestServer, TOKENS } from './helpers.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_130);
const CASES = Number(process.env.FUZZ_CASES ?? 1200);
const BODY_LIMIT = 256 * 1024;

/** Every code an error body may carry: the library's and the server's own. */
const KNOWN_CODES = new Set([
  'validation',
  'queue_not_found',
  'job_not_found',
  'queue_full',
  'key_limit',
  'invalid_state',
  'lease_lost',
  'unauthorized',
  'forbidden',
  'not_found',
  'payload_too_large',
  'unsupported_media_type',
  'uri_too_long',
  'timeout',
  'headers_too_large',
  'admission_unavailable',
  'webhook_body_invalid',
]);

const server = await startTestServer({ maxBodyBytes: BODY_LIMIT });
const { app, sluice } = server;

// Fixtures the fuzzer aims at, so valid-by-chance requests reach deep into the handlers.
await sluice.queues.put('fuzz', {});
await sluice.queues.put('fuzz-capped', { maxPending: 3, maxPerKey: 1, maxAttempts: 1 });
const jobIds: string[] = [];
for (let i = 0; i < 4; i++) jobIds.push((await sluice.send('fuzz', { i })).id);
const claimed = await sluice.claim('fuzz', { max: 2 });
const leaseTokens = claimed.map((j) => j.leaseToken);
await sluice.send('fuzz-capped', 'dies');
const [dying] = await sluice.claim('fuzz-capped', { max: 1 });
await sluice.fail(dying!.id, dying!.leaseToken, { message: 'fixture' });
jobIds.push(dying!.id);

/** One text for every table of `schemas`: equal before and after means nothing was written. */
async function checksum(pool: Sluice['pool'] = sluice.pool, schemas = ['sluice']): Promise<string> {
  const key = schemas.join(',');
  let statement = checksumStatements.get(key);
  if (!statement) {
    const { rows: tables } = await pool.query(
      // Not event_listener: it records which connections follow job ends, not data (a long
      // poll registers its server's listener while it waits, whatever it is answered). Not
      // queue_minute: each process adds the counts of earlier requests on its own timer.
      "SELECT format('%I.%I', table_schema, table_name) AS t FROM information_schema.tables WHERE table_schema = ANY($1) AND table_type = 'BASE TABLE' AND table_name NOT IN ('event_listener', 'queue_minute') ORDER BY 1",
      [schemas],
    );
    const parts = tables.map(({ t }) => `(SELECT md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) FROM ${t} r)`);
    statement = `SELECT ${parts.join(" || ':' || ")} AS sum`;
    checksumStatements.set(key, statement);
  }
  const { rows } = await pool.query(statement);
  return rows[0].sum as string;
}
const checksumStatements = new Map<string, string>();

// ---------------------------------------------------------------- generators

const NASTY_STRINGS = [
  "'; DROP TABLE sluice.job; --",
  "fuzz' OR '1'='1",
  '../../etc/passwd',
  '..',
  '.',
  '%2e%2e%2f',
  'fuzz\u0000',
  '\u0000',
  '\u202Eevil',
  '😀',
  'ﬀuzz',
  'FUZZ',
  'fuzz ',
  ' fuzz',
  'a'.repeat(129),
  'k'.repeat(513),
  'x'.repeat(5000),
  'queue name',
  '\r\nX-Injected: 1',
  '$1',
  'sluice.job',
  '-',
  '_x',
  'fuzz;',
  '<script>alert(1)</script>',
  '',
  '\ud800',
  '\udfff',
  '\t',
  '\u0085',
  '{{7*7}}',
  '${7*7}',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  '\\',
  '%',
  '_',
  '*',
  '?',
  '#',
];
/** Text PostgreSQL cannot store: a NUL or an unpaired surrogate somewhere in a string. */
const unstorable = fc
  .tuple(fc.string({ maxLength: 12 }), fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff'), fc.string({ maxLength: 12 }))
  .map(([before, bad, after]) => before + bad + after);
/** JSON holding such text in a value or in a key, at the top or nested a few levels down among storable siblings. */
const unstorableJson: fc.Arbitrary<unknown> = fc
  .tuple(
    fc.oneof(
      unstorable,
      fc.tuple(unstorable, fc.jsonValue({ maxDepth: 1 })).map(([key, value]) => ({ [key]: value })),
    ),
    fc.array(fc.tuple(fc.boolean(), fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 })), { maxLength: 4 }),
  )
  .map(([inner, wraps]) =>
    wraps.reduce<unknown>((value, [inArray, key, sibling]) => (inArray ? [sibling, value] : { sibling, [`k${key}`]: value }), inner),
  );
const nastyString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 1, arbitrary: unstorable },
);
const queueName = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('fuzz', 'fuzz-capped', 'missing-queue') },
  { weight: 4, arbitrary: nastyString },
);
const idText = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...jobIds) },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '0',
      '-1',
      '1.5',
      '1e3',
      'abc',
      '99999999999999999999',
      '9223372036854775807',
      '9223372036854775808',
      '9999999999999999999',
      "1' OR '1'='1",
      '0x10',
      ' 1',
      '١',
      '00000000000000000001',
      '1;DELETE',
      '',
    ),
  },
  { weight: 1, arbitrary: nastyString },
);
const EDGE_NUMBERS = [-1, 0, -0, 1, 1.5, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 + 2, 1e308, -1e308, 5e-324, 86_401, 7 * 86_400 + 1];
const int = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -5, max: 2000 }) },
  { weight: 2, arbitrary: fc.constantFrom(...EDGE_NUMBERS) },
);
const DATES = [
  '2026-01-01T00:00:00Z',
  '2030-06-01T12:00:00.123+02:00',
  '2026-13-45T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '0001-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '275760-09-13T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  'tomorrow',
  '2026-02-30T00:00:00Z',
  '1970-01-01',
  '2026-01-01T24:00:00Z',
  '2026-01-01T00:00:60Z',
];
const date = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...DATES) },
  { weight: 1, arbitrary: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()) },
);
const weird = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, '', 'NaN', [], {}, '\u0000', '\ud800', 'x'.repeat(600), -0, 1e308, [[[[[]]]]], {
    a: { b: { c: null } },
  }),
  fc.jsonValue({ maxDepth: 3 }),
  nastyString,
  int,
);
const jsonData = fc.oneof(fc.jsonValue({ maxDepth: 4 }), weird, unstorableJson);

/** A plausible value for each known field, or anything at all. */
function fieldValue(name: string): fc.Arbitrary<unknown> {
  const typical: Record<string, fc.Arbitrary<unknown>> = {
    data: jsonData,
    result: jsonData,
    key: nastyString,
    singletonKey: nastyString,
    workerId: nastyString,
    errorContains: nastyString,
    note: nastyString,
    userId: nastyString,
    role: fc.oneof(
      fc.constantFrom('software-engineer', 'data-analyst', 'Data-Engineer', 'data-engineer ', 'data-analyst\u0000'),
      nastyString,
    ),
    files: fc.dictionary(
      fc.oneof(fc.constantFrom('solution.py', 'src/index.js', '../../etc/passwd', '/etc/passwd', 'a\u0000b', ''), nastyString),
      fc.oneof(nastyString, fc.constant('x'.repeat(70_000))),
      { maxKeys: 3 },
    ),
    before: idText,
    runAt: date,
    since: date,
    until: date,
    paused: fc.boolean(),
    archive: fc.boolean(),
    queue: queueName,
    deadLetterQueue: fc.oneof(queueName, fc.constant(null)),
    leaseToken: fc.oneof(fc.constantFrom(...leaseTokens), fc.uuid(), nastyString),
    backoff: fc.record({ baseMs: int, maxMs: int, jitter: fc.oneof(fc.double(), int) }, { requiredKeys: [] }),
    retention: fc.record({ completedSeconds: int, cancelledSeconds: int, deadSeconds: int }, { requiredKeys: [] }),
    error: fc.record({ message: nastyString, name: nastyString, stack: nastyString }, { requiredKeys: [] }),
    jobs: fc.oneof(
      { weight: 5, arbitrary: fc.array(fc.oneof(sendBodyArb(), weird), { maxLength: 5 }) },
      { weight: 1, arbitrary: fc.constant(Array.from({ length: 1001 }, () => ({}))) },
    ),
  };
  return fc.oneof({ weight: 4, arbitrary: typical[name] ?? int }, { weight: 1, arbitrary: weird });
}

const FIELDS = [
  'data',
  'key',
  'singletonKey',
  'runAt',
  'delayMs',
  'priority',
  'maxAttempts',
  'jobs',
  'concurrency',
  'perKeyConcurrency',
  'maxPerKey',
  'maxPending',
  'backoff',
  'leaseSeconds',
  'retryAfterSeconds',
  'paused',
  'retention',
  'archive',
  'deadLetterQueue',
  'max',
  'workerId',
  'leaseToken',
  'result',
  'error',
  'queue',
  'errorContains',
  'since',
  'until',
  'limit',
  'before',
  'windowSeconds',
  'bucketSeconds',
  'userId',
  'role',
  'note',
  'qaStatus',
  'files',
];
const SEND_FIELDS = ['data', 'key', 'singletonKey', 'runAt', 'delayMs', 'priority', 'maxAttempts'];

function bodyOf(fields: string[], extra: fc.Arbitrary<string>): fc.Arbitrary<Record<string, unknown>> {
  const entry = fc.oneof(
    { weight: 9, arbitrary: fc.constantFrom(...fields).chain((f) => fieldValue(f).map((v) => [f, v] as const)) },
    { weight: 1, arbitrary: fc.tuple(extra, weird) },
  );
  return fc.array(entry, { maxLength: 4 }).map((entries) => Object.fromEntries(entries));
}
function sendBodyArb() {
  return bodyOf(SEND_FIELDS, fc.constantFrom('colour', '__proto__', 'client'));
}
const EXTRA_FIELDS = fc.constantFrom('colour', '__proto__', 'constructor', 'prototype');

function deep(depth: number): string {
  return `{"data":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}
const MALFORMED = [
  '{',
  '{"a":}',
  "{'data':1}",
  'NaN',
  '[1,]',
  '',
  ' ',
  'null',
  '"str"',
  '1',
  '[]',
  '{"__proto__":{"x":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '{"data":1}{"data":2}',
  '\ufeff{"data":1}',
  '{"data": 1e999}',
  '{"data":1,"data":2}',
  '{"data":"\\ud800"}',
  '{"data":"\\u0000"}',
  '{"key":"\\u0000"}',
  '{"data":{"\\u0000":1}}',
  '{"jobs":[{"data":"\\udfff"}]}',
  '{"error":{"message":"\\u0000"},"leaseToken":"00000000-0000-0000-0000-000000000000"}',
  '{"workerId":"\\u0000"}',
  '{"errorContains":"\\u0000"}',
  '{"data":-0}',
  '{"delayMs":1e400}',
  '{"priority":1e400}',
  '{"data":' + '1'.repeat(400) + '}',
];
/** Bodies aimed at a route: mostly its own fields (from its schema), sometimes any field. */
function payloadArb(own: string[]): fc.Arbitrary<{ kind: string; text: string }> {
  const body = own.length
    ? fc.oneof({ weight: 4, arbitrary: bodyOf(own, EXTRA_FIELDS) }, { weight: 1, arbitrary: bodyOf(FIELDS, EXTRA_FIELDS) })
    : bodyOf(FIELDS, EXTRA_FIELDS);
  return payloadOf(body);
}
const payloadOf = (anyBody: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<{ kind: string; text: string }> =>
  fc.oneof(
    { weight: 14, arbitrary: anyBody.map((b) => ({ kind: 'json', text: JSON.stringify(b) })) },
    { weight: 3, arbitrary: fc.constantFrom(...MALFORMED).map((text) => ({ kind: 'malformed', text })) },
    {
      weight: 2,
      arbitrary: fc.tuple(anyBody, fc.nat()).map(([b, n]) => {
        const t = JSON.stringify(b);
        return { kind: 'truncated', text: t.slice(0, n % Math.max(t.length, 1)) };
      }),
    },
    { weight: 1, arbitrary: fc.constantFrom(200, 1000, 5000, 20_000, 100_000).map((d) => ({ kind: `nested-${d}`, text: deep(d) })) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(BODY_LIMIT - 100, BODY_LIMIT + 1, 4 * BODY_LIMIT)
        .map((n) => ({ kind: 'huge', text: JSON.stringify({ data: 'x'.repeat(n) }) })),
    },
    { weight: 1, arbitrary: fc.jsonValue().map((v) => ({ kind: 'random-json', text: JSON.stringify(v) ?? 'null' })) },
  );
const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'APPLICATION/JSON',
  'application/vnd.api+json',
  'application/octet-stream',
  '*/*',
  'application/json; charset=latin1',
  'json',
];
const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  { weight: 3, arbitrary: fc.constantFrom(...CONTENT_TYPES, null) },
);
const authorization = fc.oneof(
  { weight: 7, arbitrary: fc.constant(`Bearer ${TOKENS.adminToken}`) },
  { weight: 3, arbitrary: fc.constant(`Bearer ${TOKENS.apiToken}`) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      null,
      'Bearer',
      'Bearer ',
      `Bearer ${TOKENS.apiToken}x`,
      `bearer ${TOKENS.adminToken.slice(0, -1)}`,
      `Basic ${Buffer.from(`admin:${TOKENS.adminToken}`).toString('base64')}`,
      `Token ${TOKENS.adminToken}`,
      `Bearer ${TOKENS.adminToken} ${TOKENS.adminToken}`,
      `Bearer ${'a'.repeat(8000)}`,
      // A forged and an expired JWT: Sluice's tokens are opaque, so both are simply unknown.
      'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.',
      'Bearer eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjF9.c2ln',
    ),
  },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~+/=-]{1,120}$/).map((t) => `Bearer ${t}`) },
);
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];
const UNKNOWN_PATHS = [
  '/api/nope',
  '/api/queues/fuzz/jobs/extra',
  '/api/../etc/passwd',
  '/%2e%2e/%2e%2e/etc/passwd',
  '//api/queues',
  '/API/QUEUES',
  '/api/jobs/1/complete/',
  '/api/queues/fuzz/',
  '/api/queues/%E0%A4%A/jobs',
  '/api/queues/%ZZ/jobs',
  '/api/queues/%00/jobs',
  '/api/jobs/%ED%A0%80',
  '/.env',
  '/public/../package.json',
  '/app.js/..%2f..%2fpackage.json',
  '/api/dead-letters/replay/x',
];

/** Percent-encodes a path segment; a lone surrogate (which `encodeURIComponent` refuses) becomes invalid UTF-8 on purpose. */
function segment(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(text.replace(/[\ud800-\udfff]/g, '')) + '%ED%A0%80';
  }
}

function query(entries: [string, unknown][]): string {
  const parts = entries.map(([k, v]) => `${segment(k)}=${segment(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

/**
 * A route's own body and query fields, read from the OpenAPI document its schemas feed, or
 * from `bodyFields` for a route that checks its body by hand.
 */
function fieldsOf(
  target: FastifyInstance,
  route: RegisteredRoute,
  bodyFields: Record<string, string[]> = {},
): { body: string[]; query: string[] } {
  const doc = target.swagger() as { paths: Record<string, Record<string, any>> };
  const operation = doc.paths[route.url.replace(/:([A-Za-z]+)/g, '{$1}')]?.[route.method.toLowerCase()];
  const body = bodyFields[route.url] ?? Object.keys(operation?.requestBody?.content?.['application/json']?.schema?.properties ?? {});
  const query = ((operation?.parameters ?? []) as { in: string; name: string }[]).filter((p) => p.in === 'query').map((p) => p.name);
  return { body, query };
}

/** `arb` in `weight` of `outOf` cases, else null. */
function sometimes<T>(arb: fc.Arbitrary<T>, weight: number, outOf: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight, arbitrary: arb }, { weight: outOf - weight, arbitrary: fc.constant(null) });
}

interface Case {
  label: string;
  request: InjectOptions;
}

function caseArbFor(
  target: FastifyInstance,
  routes: RegisteredRoute[],
  { ids = idText, bodyFields }: FuzzOptions = {},
): fc.Arbitrary<Case> {
  // Routes that take input are aimed at more often than the static ones.
  const routeArb = fc.oneof(
    ...routes.map((route) => ({
      weight: route.url.startsWith('/api/') ? (route.method === 'HEAD' ? 1 : 6) : 1,
      arbitrary: fc.constant({ ...route, fields: fieldsOf(target, route, bodyFields) }),
    })),
  );
  return fc
    .record({
      route: routeArb,
      otherMethod: sometimes(fc.constantFrom(...METHODS), 1, 7),
      unknownPath: sometimes(fc.constantFrom(...UNKNOWN_PATHS), 1, 12),
      queue: queueName,
      id: ids,
      contentType,
      authorization,
    })
    .chain((c) =>
      fc
        .record({
          query: fc.array(
            fc
              .constantFrom(...(c.route.fields.query.length && c.otherMethod === null ? c.route.fields.query : FIELDS))
              .chain((f) => fieldValue(f).map((v) => [f, v] as [string, unknown])),
            { maxLength: 3 },
          ),
          payload: payloadArb(c.route.fields.body),
        })
        .map((more) => ({ ...c, ...more })),
    )
    .map(({ route, otherMethod, unknownPath, queue, id, query: q, payload, contentType: type, authorization: auth }) => {
      const method = (otherMethod ?? route.method) as InjectOptions['method'] & string;
      const path =
        unknownPath ??
        route.url
          .replace(':queue', segment(queue))
          .replace(/:id\b/, segment(id))
          .replace(/:[A-Za-z]+/g, '1');
      const url = `${path}${query(q)}`;
      const headers: Record<string, string> = {};
      if (auth !== null) headers.authorization = auth;
      const hasBody = method !== 'GET' && method !== 'HEAD';
      if (hasBody && type !== null) headers['content-type'] = type;
      const request: InjectOptions = { method, url, headers, ...(hasBody ? { payload: payload.text } : {}) };
      return { label: `${method} ${url.slice(0, 200)} [${payload.kind}, ${type}] ${hasBody ? payload.text.slice(0, 200) : ''}`, request };
    });
}

// ---------------------------------------------------------------- checks

interface Tally {
  statuses: Map<number, number>;
  codes: Map<string, number>;
}

interface FuzzOptions {
  /** Codes an application adds to the server's. */
  extraCodes?: Set<string>;
  /** Path ids to aim at (default: the fixture jobs' ids and hostile ones). */
  ids?: fc.Arbitrary<string>;
  /** Body fields of routes without a body schema, by route url. */
  bodyFields?: Record<string, string[]>;
}

/** Statuses that have one meaning, hence one code, whichever route answers. */
const CODE_OF_STATUS: Record<number, string> = {
  401: 'unauthorized',
  403: 'forbidden',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
};

function checkAnswer(c: Case, res: LightMyRequestResponse, { statuses, codes }: Tally, { extraCodes }: FuzzOptions): void {
  statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
  const where = `${c.label}\n→ ${res.statusCode} ${res.body.slice(0, 300)}`;
  if (res.statusCode < 400) return;
  if (c.request.method === 'HEAD') {
    assert.ok(res.statusCode < 500, where);
    return;
  }
  assert.match(String(res.headers['content-type']), /^application\/json/, where);
  const body = JSON.parse(res.body) as { error?: unknown; message?: unknown; code?: unknown };
  assert.equal(typeof body.error, 'string', where);
  assert.ok(KNOWN_CODES.has(body.error as string) || (extraCodes?.has(body.error as string) ?? false), `unknown error code: ${where}`);
  assert.equal(typeof body.message, 'string', where);
  assert.ok((body.message as string).length > 0, where);
  codes.set(body.error as string, (codes.get(body.error as string) ?? 0) + 1);
  const expected = CODE_OF_STATUS[res.statusCode];
  if (expected) assert.equal(body.error, expected, `a ${res.statusCode} must say "${expected}": ${where}`);
  // 503 is honest shedding only (with Retry-After); anything else at 5xx is a server bug.
  if (res.statusCode >= 500) {
    assert.equal(body.error, 'queue_full', where);
    assert.ok(res.headers['retry-after'], where);
  }
}

/**
 * Sends `cases` generated requests to `target`, checking each answer and, after each
 * refusal, that the tables' checksum did not move. Prints and returns the figures.
 */
async function fuzz(
  name: string,
  target: FastifyInstance,
  routes: RegisteredRoute[],
  cases: number,
  sum: () => Promise<string>,
  options: FuzzOptions = {},
): Promise<Tally> {
  const tally: Tally = { statuses: new Map(), codes: new Map() };
  const started = Date.now();
  let run = 0;
  process.stdout.write(`# ${name}: seed ${SEED}, ${cases} cases over ${routes.length} routes (rerun with FUZZ_SEED=${SEED})\n`);
  try {
    // The checksum after each case is the next case's "before".
    let before = await sum();
    await fc.assert(
      fc.asyncProperty(caseArbFor(target, routes, options), async (c) => {
        run++;
        const res = await target.inject(c.request);
        checkAnswer(c, res, tally, options);
        const after = await sum();
        if (res.statusCode >= 400) assert.equal(after, before, `a refused request wrote rows: ${c.label} → ${res.statusCode}`);
        before = after;
      }),
      { seed: SEED, numRuns: cases, endOnFailure: true, includeErrorInReport: true },
    );
  } catch (err) {
    process.stdout.write(`# ${name} FAILED with seed ${SEED} (FUZZ_SEED=${SEED} to rerun)\n`);
    throw err;
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const byStatus = [...tally.statuses]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}×${n}`)
    .join(' ');
  const byCode = [...tally.codes]
    .sort(([, a], [, b]) => b - a)
    .map(([c, n]) => `${c}×${n}`)
    .join(' ');
  process.stdout.write(`# ${name}: ${run} cases in ${seconds} s; statuses ${byStatus}; error codes ${byCode}\n`);
  assert.equal(run, cases);
  return tally;
}

// ---------------------------------------------------------------- text PostgreSQL cannot store, aimed

/** A well-formed request to a route that stores text, with unstorable text in one field. */
interface TextCase {
  /** Which route and field, for the tally. */
  target: string;
  /** The field as the refusal must name it. */
  field: string;
  request: InjectOptions & { url: string };
}

const API = { authorization: `Bearer ${TOKENS.apiToken}` };
const ADMIN = { authorization: `Bearer ${TOKENS.adminToken}` };
const aimed =
  (target: string, url: string, field: string, headers = API) =>
  (payload: Record<string, unknown>): TextCase => ({ target, field, request: { method: 'POST', url, headers, payload } });

/** Every field the server's routes store text from (or search stored text with), each carrying unstorable text. */
function serverTextCases(queue: string, leases: { id: string; leaseToken: string }[]): fc.Arbitrary<TextCase> {
  const lease = fc.constantFrom(...leases);
  const key = fc.constantFrom('user-1', 'tenant:9', 'k');
  const data = fc.jsonValue({ maxDepth: 2 });
  const goodItem = fc.record({ data, key }, { requiredKeys: ['data'] });
  const badItem = fc.oneof(
    fc.record({ data: unstorableJson, key }, { requiredKeys: ['data'] }).map((item) => ['data', item] as const),
    fc.record({ data, key: unstorable }).map((item) => ['key', item] as const),
  );
  const jobs = `/api/queues/${queue}/jobs`;
  return fc.oneof(
    fc.record({ data: unstorableJson, key }, { requiredKeys: ['data'] }).map(aimed('send data', jobs, 'data')),
    fc.record({ data, key: unstorable }).map(aimed('send key', jobs, 'key')),
    fc.record({ data, singletonKey: unstorable }).map(aimed('send singletonKey', jobs, 'singletonKey')),
    fc
      .tuple(fc.array(goodItem, { maxLength: 3 }), badItem, fc.array(goodItem, { maxLength: 3 }))
      .map(([before, [field, bad], after]) => aimed(`bulk ${field}`, `${jobs}/bulk`, field)({ jobs: [...before, bad, ...after] })),
    fc
      .tuple(lease, unstorableJson)
      .map(([l, result]) => aimed('complete result', `/api/jobs/${l.id}/complete`, 'result')({ leaseToken: l.leaseToken, result })),
    fc
      .tuple(lease, fc.constantFrom('message', 'name', 'stack'), unstorable)
      .map(([l, part, bad]) =>
        aimed(
          `fail error.${part}`,
          `/api/jobs/${l.id}/fail`,
          `error/${part}`,
        )({ leaseToken: l.leaseToken, error: { message: 'failed', [part]: bad } }),
      ),
    unstorable.map((workerId) => aimed('claim workerId', `/api/queues/${queue}/claim`, 'workerId')({ workerId })),
    unstorable.map((errorContains) => aimed('replay errorContains', '/api/dead-letters/replay', 'errorContains', ADMIN)({ errorContains })),
    unstorable.map((errorContains) => aimed('purge errorContains', '/api/dead-letters/purge', 'errorContains', ADMIN)({ errorContains })),
  );
}

/** The same for the missions routes: the review note, the request's user and role, a submitted file. */
function missionsTextCases({ pending, instance }: { pending: string; instance: string }): fc.Arbitrary<TextCase> {
  return fc.oneof(
    fc
      .tuple(fc.constantFrom('approve', 'reject'), unstorable)
      .map(([decision, note]) => aimed(`${decision} note`, `/api/missions/${pending}/${decision}`, 'note', ADMIN)({ note })),
    fc
      .tuple(unstorable, fc.constantFrom('software-engineer', 'data-analyst'))
      .map(([userId, role]) => aimed('request userId', '/api/missions/request', 'userId')({ userId, role })),
    unstorable.map((role) => aimed('request role', '/api/missions/request', 'role')({ userId: 'fuzz-user', role })),
    unstorable.map((text) =>
      aimed('submission files', `/api/instances/${instance}/submissions`, 'files')({ files: { 'solution.py': text } }),
    ),
  );
}

/**
 * Sends `cases` requests from `arb`: each must be refused 400 `validation` with a message
 * that names the field and the reason, and the tables must not move. Returns how many
 * cases each target got.
 */
async function aimUnstorable(
  name: string,
  target: FastifyInstance,
  arb: fc.Arbitrary<TextCase>,
  cases: number,
  sum: () => Promise<string>,
): Promise<Map<string, number>> {
  const hits = new Map<string, number>();
  const started = Date.now();
  process.stdout.write(`# ${name}: seed ${SEED}, ${cases} cases (rerun with FUZZ_SEED=${SEED})\n`);
  const baseline = await sum();
  try {
    await fc.assert(
      fc.asyncProperty(arb, async (c) => {
        hits.set(c.target, (hits.get(c.target) ?? 0) + 1);
        const res = await target.inject(c.request);
        const where = `${c.target}: ${c.request.url} ${JSON.stringify(c.request.payload).slice(0, 300)}\n→ ${res.statusCode} ${res.body.slice(0, 300)}`;
        assert.equal(res.statusCode, 400, where);
        const body = JSON.parse(res.body) as { error: string; message: string };
        assert.equal(body.error, 'validation', where);
        assert.match(body.message, /NUL|unpaired surrogate/, where);
        assert.ok(body.message.includes(c.field), `the refusal names ${c.field}: ${where}`);
        assert.equal(await sum(), baseline, `a refused request wrote rows: ${where}`);
      }),
      { seed: SEED, numRuns: cases, endOnFailure: true, includeErrorInReport: true },
    );
  } catch (err) {
    process.stdout.write(`# ${name} FAILED with seed ${SEED} (FUZZ_SEED=${SEED} to rerun)\n`);
    throw err;
  }
  const byTarget = [...hits]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([t, n]) => `${t}×${n}`)
    .join(' ');
  process.stdout.write(`# ${name}: ${cases} cases in ${((Date.now() - started) / 1000).toFixed(1)} s, every one 400; ${byTarget}\n`);
  return hits;
}

test(
  `${CASES} fuzzed requests over every route: only 4xx (or a documented answer), a JSON error, nothing written on refusal`,
  { timeout: 600_000 },
  async () => {
    // Event streams stay open by design, so a fuzzed request that is valid would never end:
    // their refusals are tested in events.test.ts.
    const routes = registeredRoutes(app).filter((r) => !r.url.endsWith('/events'));
    assert.ok(routes.length >= 30, `found ${routes.length} routes`);
    const { statuses } = await fuzz('http fuzz', app, routes, CASES, () => checksum());
    assert.ok(
      [...statuses.keys()].some((s) => s < 300),
      'some fuzzed requests were valid by chance',
    );
  },
);

const TEXT_CASES = Number(process.env.FUZZ_TEXT_CASES ?? 400);
test(
  `${TEXT_CASES} requests with text PostgreSQL cannot store, aimed at every field a route stores: 400 naming the field, nothing written`,
  { timeout: 600_000 },
  async () => {
    // Live leases and pending jobs, so that a field let through would really be written.
    await sluice.queues.put('fuzz-text', {});
    for (let i = 0; i < 4; i++) await sluice.send('fuzz-text', { i });
    const leases = (await sluice.claim('fuzz-text', { max: 2 })).map(({ id, leaseToken }) => ({ id, leaseToken }));
    const hits = await aimUnstorable('unstorable text, server routes', app, serverTextCases('fuzz-text', leases), TEXT_CASES, () =>
      checksum(),
    );
    assert.equal(hits.size, 12, `every route and field was aimed at: ${[...hits.keys()].join(', ')}`);
  },
);

// The missions platform's routes, mounted the way `npm start` mounts them, with its workers
// held (queues paused) so that every row written is a request's own.
const MISSIONS_CASES = Number(process.env.FUZZ_MISSIONS_CASES ?? 600);
const MISSIONS_CODES = new Set([
  'unknown_role',
  'unknown_domain',
  'mission_not_found',
  'variant_not_found',
  'instance_not_found',
  'submission_not_found',
  'request_not_found',
  'proof_rejected',
]);
const MISSIONS_TEXT_CASES = Number(process.env.FUZZ_MISSIONS_TEXT_CASES ?? 200);

/**
 * What the missions fuzz aims at: a mission pending review, an approved one served to a
 * user (an instance, whose solution file is `solution.py`, as the generators' file names
 * include), and a submission. Missions are stored directly, as if generated and proven.
 */
async function missionsFixture(
  target: FastifyInstance,
  pool: Sluice['pool'],
): Promise<{ pending: string; approved: string; instance: string; submission: string }> {
  const insert = async (qaStatus: string) =>
    String(
      (
        await pool.query(
          `INSERT INTO missions.mission (source, domain, language, title, brief, gold, sabotaged, tests, bug_description, saboteur, proof, qa_status, max_serves)
           VALUES ('fuzz', 'engineering', 'python', 'fuzz', 'brief', '{"solution.py": "gold"}', '{"solution.py": "bug"}', '{"test_solution.py": "t"}',
                   'bug', 'mutation', '{"summary": "ok", "tests": [], "attempts": []}', $1, 1000)
           RETURNING id`,
          [qaStatus],
        )
      ).rows[0].id,
    );
  const pending = await insert('pending');
  const approved = await insert('approved');
  const served = await target.inject({
    method: 'POST',
    url: '/api/missions/request',
    headers: API,
    payload: { userId: 'fuzz-user', role: 'software-engineer' },
  });
  assert.equal(served.statusCode, 200, served.body);
  const instance = String(served.json().instance.id);
  const submitted = await target.inject({
    method: 'POST',
    url: `/api/instances/${instance}/submissions`,
    headers: API,
    payload: { files: { 'solution.py': 'fixed' } },
  });
  assert.equal(submitted.statusCode, 202, submitted.body);
  return { pending, approved, instance, submission: String(submitted.json().id) };
}
test(`${MISSIONS_CASES} fuzzed requests over the missions routes, when the platform is present`, { timeout: 600_000 }, async (t) => {
  const started = await startWithMissions();
  if ('skip' in started) {
    t.skip(started.skip);
    return;
  }
  const { running } = started;
  try {
    const fixture = await missionsFixture(running.app, running.sluice.pool);
    // Event streams excluded, as above: a valid request to one stays open.
    const routes = registeredRoutes(running.app).filter(
      (r) => /^\/api\/(missions|instances|submissions)\b/.test(r.url) && !r.url.endsWith('/events'),
    );
    assert.ok(routes.length >= 8, `found ${routes.length} missions routes`);
    const sum = () => checksum(running.sluice.pool, ['sluice', 'missions']);
    await fuzz('missions fuzz', running.app, routes, MISSIONS_CASES, sum, {
      extraCodes: MISSIONS_CODES,
      // Mostly the fixtures' ids, so requests reach the statements that store text.
      ids: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...Object.values(fixture)) }, { weight: 2, arbitrary: idText }),
      // The review routes check their optional body by hand (no body schema to read).
      bodyFields: {
        '/api/missions/:id/approve': ['note'],
        '/api/missions/:id/reject': ['note'],
        '/api/missions/:id/variants/:variant/reject': ['note'],
      },
    });
    const hits = await aimUnstorable('unstorable text, missions routes', running.app, missionsTextCases(fixture), MISSIONS_TEXT_CASES, sum);
    assert.equal(hits.size, 5, `every route and field was aimed at: ${[...hits.keys()].join(', ')}`);
    assert.equal((await running.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  } finally {
    await started.close();
  }
});

test('after the fuzzing the server is healthy and a job still goes through end to end', async () => {
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  await sluice.queues.put('after-fuzz', {});
  const auth = { authorization: `Bearer ${TOKENS.apiToken}` };
  const sent = await app.inject({ method: 'POST', url: '/api/queues/after-fuzz/jobs', headers: auth, payload: { data: { ok: true } } });
  assert.equal(sent.statusCode, 202, sent.body);
  const claim = await app.inject({ method: 'POST', url: '/api/queues/after-fuzz/claim', headers: auth, payload: {} });
  const [job] = claim.json().jobs;
  assert.equal(job.id, sent.json().id);
  const done = await app.inject({
    method: 'POST',
    url: `/api/jobs/${job.id}/complete`,
    headers: auth,
    payload: { leaseToken: job.leaseToken },
  });
  assert.equal(done.statusCode, 200, done.body);
});

// ---------------------------------------------------------------- raw sockets

const { port } = app.server.address() as { port: number };

/**
 * Writes `bytes` on a fresh connection and returns everything the server answered before
 * closing it; `halfClose` also ends the client's side (for bodies that never complete).
 */
function raw(bytes: Buffer | string, halfClose = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    const data = typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes;
    if (halfClose) socket.end(data);
    else socket.write(data);
  });
}

function statusesOf(answer: string): number[] {
  return [...answer.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]));
}

function post(path: string, body: Buffer, extraHeaders = '', length = body.length): Buffer {
  const head =
    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKENS.apiToken}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${length}\r\nConnection: close\r\n${extraHeaders}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

test('raw sockets: invalid UTF-8, wrong Content-Length, smuggling-shaped and malformed headers are refused with a 4xx and write nothing', async () => {
  const before = await checksum();
  const send = '/api/queues/fuzz/jobs';
  const cases: [string, Buffer | string, (answer: string) => void, boolean?][] = [
    [
      'invalid UTF-8 in a JSON string',
      post(send, Buffer.from([...Buffer.from('{"data":"'), 0xff, 0xfe, 0xc3, ...Buffer.from('"}')])),
      expectJsonError(400),
    ],
    [
      'an overlong UTF-8 encoding of "/"',
      post(send, Buffer.from([...Buffer.from('{"data":"'), 0xc0, 0xaf, ...Buffer.from('"}')])),
      expectJsonError(400),
    ],
    [
      'an encoded surrogate (CESU-8)',
      post(send, Buffer.from([...Buffer.from('{"data":"'), 0xed, 0xa0, 0x80, ...Buffer.from('"}')])),
      expectJsonError(400),
    ],
    ['a body shorter than its Content-Length', post(send, Buffer.from('{"data":1'), '', 50), expectOnly4xx, true],
    ['a body longer than its Content-Length', post(send, Buffer.from('{"data":1}{"data":2}'), '', 9), expectOnly4xx],
    [
      'Content-Length and Transfer-Encoding together',
      post(send, Buffer.from('{"data":1}'), 'Transfer-Encoding: chunked\r\n'),
      expectOnly4xx,
    ],
    [
      'a broken chunked body',
      `POST ${send} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKENS.apiToken}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{"data":1}\r\n0\r\n\r\n`,
      expectOnly4xx,
    ],
    [
      'a control character in the Authorization header',
      `GET /api/queues HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \x01${TOKENS.adminToken}\r\nConnection: close\r\n\r\n`,
      expectOnly4xx,
    ],
    ['a negative Content-Length', post(send, Buffer.from('{"data":1}'), '', -1), expectOnly4xx],
    [
      'raw non-ASCII bytes in the path',
      `GET /api/queues/\xff\xfe HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKENS.adminToken}\r\nConnection: close\r\n\r\n`,
      expectOnly4xx,
    ],
    ['a header line without a colon', `GET /healthz HTTP/1.1\r\nHost: x\r\nnonsense\r\nConnection: close\r\n\r\n`, expectOnly4xx],
  ];
  for (const [name, bytes, expect, halfClose] of cases) {
    const answer = await raw(bytes, halfClose);
    try {
      expect(answer);
    } catch (err) {
      throw new Error(`${name}: ${(err as Error).message}\n${answer.slice(0, 500)}`);
    }
  }
  assert.equal(await checksum(), before, 'a refused raw request wrote rows');
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
});

/** The server answered (or closed) without a 5xx; every answer it gave is a 4xx. */
function expectOnly4xx(answer: string): void {
  const seen = statusesOf(answer);
  assert.ok(
    seen.every((s) => s >= 400 && s < 500),
    `answers ${seen.join(', ')}`,
  );
  if (seen.length === 1) expectJsonError(seen[0]!)(answer);
}

function expectJsonError(status: number) {
  return (answer: string) => {
    assert.deepEqual(statusesOf(answer), [status]);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { error: string; message: string };
    assert.ok(KNOWN_CODES.has(body.error), answer);
    assert.ok(body.message.length > 0);
  };
}
