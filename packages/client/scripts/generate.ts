/**
 * Rewrites src/schema.ts from the server's OpenAPI document. The document comes from the
 * routes' schemas, so the app is built in this process and asked for /openapi.json; its
 * Sluice never connects (the address below is never dialled), so no database is needed.
 */
import { writeFileSync } from 'node:fs';
import { buildApp } from '@sluice/server';
import { Sluice } from 'sluice';
import { SCHEMA_FILE, schemaSource } from './schema.js';

const silent = { error() {}, warn() {}, info() {}, debug() {} };
const sluice = new Sluice({ connectionString: 'postgres://127.0.0.1:1/unused', logger: silent });
const app = await buildApp({ sluice, tokens: { apiToken: 'unused-api-token-0123456789', adminToken: 'unused-admin-token-0123456789' } });
try {
  const answer = await app.inject({ method: 'GET', url: '/openapi.json' });
  if (answer.statusCode !== 200) throw new Error(`GET /openapi.json answered ${answer.statusCode}`);
  writeFileSync(SCHEMA_FILE, await schemaSource(answer.json()));
  console.log(`wrote ${SCHEMA_FILE.pathname}`);
} finally {
  await app.close();
  await sluice.close({ timeoutMs: 0 });
}
