// A real server on a loopback port over its own test database, and a small fetch client.
import { after } from 'node:test';
import { createTestDatabase, type TestDatabase } from '@sluice/testkit';
import { Sluice } from 'sluice';
import { buildApp } from '../src/app.js';
import { migrateServerSchema } from '../src/db.js';
import type { HooksConfig } from '../src/hooks/config.js';
import type { FastifyInstance } from 'fastify';

export const silent = { error() {}, warn() {}, info() {}, debug() {} };
export const TOKENS = { apiToken: 'test-api-token-0123456789', adminToken: 'test-admin-token-0123456789' };

export interface TestServer {
  url: string;
  db: TestDatabase;
  sluice: Sluice;
  app: FastifyInstance;
}

/** Starts the app on 127.0.0.1 (free port) and registers its teardown with `after`. */
export async function startTestServer({
  maxBodyBytes,
  hooks,
  eventHeartbeatMs,
}: { maxBodyBytes?: number; hooks?: HooksConfig; eventHeartbeatMs?: number } = {}): Promise<TestServer> {
  const db = await createTestDatabase();
  const sluice = new Sluice({ connectionString: db.url, logger: silent, ...(maxBodyBytes ? { maxPayloadBytes: maxBodyBytes } : {}) });
  if (hooks) await migrateServerSchema(sluice.pool);
  const app = await buildApp({
    sluice,
    tokens: TOKENS,
    ...(maxBodyBytes ? { maxBodyBytes } : {}),
    ...(hooks ? { hooks } : {}),
    ...(eventHeartbeatMs ? { eventHeartbeatMs } : {}),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  after(async () => {
    await app.close();
    await sluice.close({ timeoutMs: 0 });
    await db.drop();
  });
  return { url: `http://127.0.0.1:${port}`, db, sluice, app };
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** Calls the server; `body` is sent as JSON unless `raw` is given. */
export async function call(
  url: string,
  method: string,
  path: string,
  { token, body, raw, contentType }: { token?: string | null; body?: unknown; raw?: string; contentType?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  let payload: string | undefined;
  if (raw !== undefined) payload = raw;
  else if (body !== undefined) payload = JSON.stringify(body);
  if (payload !== undefined) headers['content-type'] = contentType ?? 'application/json';
  const response = await fetch(`${url}${path}`, { method, headers, body: payload });
  const text = await response.text();
  let parsed: unknown = undefined;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

export const api = (server: { url: string }) => ({
  producer: (method: string, path: string, body?: unknown) => call(server.url, method, path, { token: TOKENS.apiToken, body }),
  admin: (method: string, path: string, body?: unknown) => call(server.url, method, path, { token: TOKENS.adminToken, body }),
});

/** Reads a server-sent event stream into `events` until it ends or `stop()`. */
export function readEventStream(baseUrl: string, path: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const events: { event: string; data: any; id?: string }[] = [];
  let status = 0;
  const ended = (async () => {
    const response = await fetch(`${baseUrl}${path}`, {
      headers: { authorization: `Bearer ${TOKENS.apiToken}`, ...headers },
      signal: controller.signal,
    });
    status = response.status;
    if (!response.ok) return;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const field = (name: string) =>
          block
            .split('\n')
            .find((l) => l.startsWith(`${name}: `))
            ?.slice(name.length + 2);
        const event = field('event');
        const id = field('id');
        if (event) events.push({ event, data: JSON.parse(field('data')!), ...(id !== undefined ? { id } : {}) });
      }
    }
  })().catch((err: Error) => {
    if (err.name !== 'AbortError') throw err;
  });
  return { events, ended, stop: () => controller.abort(), status: () => status };
}
