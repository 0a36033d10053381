/** Liveness, readiness, Prometheus metrics and the OpenAPI document. */
import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../context.js';

export function systemRoutes(app: FastifyInstance, { sluice, adminAuth }: RouteContext): void {
  app.get('/healthz', { schema: { tags: ['system'], summary: 'The process is alive' } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { tags: ['system'], summary: 'The database is reachable and the schema current' } }, async (_request, reply) => {
    try {
      await sluice.pool.query('SELECT 1');
      await sluice.ready();
      return { status: 'ready' };
    } catch (err) {
      return reply.code(503).send({ error: 'not_ready', message: (err as Error).message });
    }
  });

  app.get('/metrics', { onRequest: adminAuth, schema: { tags: ['system'], summary: 'Prometheus exposition text (admin token)' } }, async (_request, reply) => {
    const text = await sluice.metrics.text();
    return reply.type(sluice.metrics.contentType).send(text);
  });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
