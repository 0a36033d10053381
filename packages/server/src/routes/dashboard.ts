/**
 * The admin dashboard: static HTML, JS and CSS from ../../public (no build step). The
 * files hold no data; the page asks for the admin token and calls the admin API with it.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

const PUBLIC_DIR = new URL('../../public/', import.meta.url);

const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

export function dashboardRoutes(app: FastifyInstance): void {
  const contents = new Map(Object.keys(FILES).map((name) => [name, readFileSync(new URL(name, PUBLIC_DIR))]));
  const serve = (name: string) => async (_request: unknown, reply: import('fastify').FastifyReply) =>
    reply.type(FILES[name]!).header('cache-control', 'no-cache').send(contents.get(name));
  app.get('/', { schema: { hide: true } }, serve('index.html'));
  for (const name of ['app.js', 'app.css']) app.get(`/${name}`, { schema: { hide: true } }, serve(name));
}
