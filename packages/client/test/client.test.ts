// The typed HTTP client against a real server: the checked-in types match the server's live
// OpenAPI document, and a job goes send → claim → complete → get through the typed calls.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { buildApp } from '@sluice/server';
import { createTestDatabase } from '@sluice/testkit';
import { Sluice } from 'sluice';
import { createSluiceHttpClient } from '../src/index.js';
import { SCHEMA_FILE, schemaSource } from '../scripts/schema.js';

const TOKENS = { apiToken: 'client-api-token-0123456789', adminToken: 'client-admin-token-0123456789' };
const silent = { error() {}, warn() {}, info() {}, debug() {} };

const db = await createTestDatabase();
const sluice = new Sluice({ connectionString: db.url, logger: silent });
const app = await buildApp({ sluice, tokens: TOKENS });
await app.listen({ host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
after(async () => {
  await app.close();
  await sluice.close({ timeoutMs: 0 });
  await db.drop();
});

test('the checked-in types are those generated from the live OpenAPI document', async () => {
  const document = await (await fetch(`${url}/openapi.json`)).json();
  const expected = await schemaSource(document as object);
  assert.ok(
    readFileSync(SCHEMA_FILE, 'utf8') === expected,
    'packages/client/src/schema.ts is stale: run `npm run generate -w packages/client`',
  );
});

test('typed calls: a job sent, claimed, completed and read back; an error answer is typed too', async () => {
  const admin = createSluiceHttpClient({ baseUrl: url, token: TOKENS.adminToken });
  const client = createSluiceHttpClient({ baseUrl: url, token: TOKENS.apiToken });
  const put = await admin.PUT('/api/queues/{queue}', { params: { path: { queue: 'typed' } }, body: { maxAttempts: 1 } });
  assert.equal(put.response.status, 200, JSON.stringify(put.error));

  const sent = await client.POST('/api/queues/{queue}/jobs', { params: { path: { queue: 'typed' } }, body: { data: { n: 1 }, key: 'k' } });
  assert.equal(sent.response.status, 202);
  const id: string = sent.data!.id;
  const claimed = await client.POST('/api/queues/{queue}/claim', {
    params: { path: { queue: 'typed' } },
    body: { max: 1, workerId: 'typed-client' },
  });
  const job = claimed.data?.jobs?.[0];
  assert.equal(job?.id, id);
  assert.ok(job?.leaseToken);
  const done = await client.POST('/api/jobs/{id}/complete', {
    params: { path: { id } },
    body: { leaseToken: job.leaseToken, result: { ok: true } },
  });
  assert.equal(done.data?.state, 'completed');
  const read = await client.GET('/api/jobs/{id}', { params: { path: { id } } });
  assert.equal(read.data?.state, 'completed');
  assert.deepEqual(read.data?.result, { ok: true });

  const missing = await client.GET('/api/jobs/{id}', { params: { path: { id: '999999999' } } });
  assert.equal(missing.response.status, 404);
  assert.equal((missing.error as { error?: string } | undefined)?.error, 'job_not_found');
  assert.throws(() => createSluiceHttpClient({ baseUrl: url, token: '' }), /token is required/);
});
