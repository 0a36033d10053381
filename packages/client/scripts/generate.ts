/** Rewrites src/schema.ts from a running server's /openapi.json (SLUICE_URL, default http://127.0.0.1:8080). */
import { writeFileSync } from 'node:fs';
import { SCHEMA_FILE, schemaSource } from './schema.js';

const url = (process.env.SLUICE_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
const response = await fetch(`${url}/openapi.json`);
if (!response.ok) throw new Error(`GET ${url}/openapi.json answered ${response.status}`);
writeFileSync(SCHEMA_FILE, await schemaSource(await response.json()));
console.log(`wrote ${SCHEMA_FILE.pathname}`);
