/** Liveness, readiness, Prometheus metrics and the OpenAPI document. */
import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../context.js';

export function systemRoutes(app: FastifyInstance, { sluice, adminAuth }: RouteContext): void {
  app.get('/healthz', { schema: { tags: ['system'], summary: 'The process is alive' } }, async () => ({ status: 'ok' }));

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['system'],
        summary: "The database answers within 2 s, its schema is this release's, and it runs this release's functions",
        description:
          'Not ready (503 not_ready) while the database does not answer in time (a stall, a partition, an outage), ' +
          "and during a rolling upgrade while it runs another release's functions: this instance then claims no jobs.",
      },
    },
    async (_request, reply) => {
      const readiness = await sluice.readiness();
      if (readiness.ready) return { status: 'ready' };
      return reply.code(503).send({ error: 'not_ready', message: readiness.message });
    },
  );

  app.get(
    '/api/instance',
    {
      onRequest: adminAuth,
      schema: {
        tags: ['admin'],
        summary: "This instance's readiness, and the function set it was built for against the one the database runs",
        description:
          'During a rolling upgrade an instance whose release differs from the one that migrated the database last ' +
          'claims no jobs: `problem` is then `functions`, and `functionSet` says which sets differ.',
        response: {
          200: {
            type: 'object',
            required: ['ready', 'functionSet'],
            properties: {
              ready: { type: 'boolean' },
              problem: { type: 'string', enum: ['database', 'schema', 'functions'] },
              message: { type: 'string' },
              functionSet: {
                type: 'object',
                required: ['expected', 'actual'],
                properties: { expected: { type: 'string' }, actual: { type: ['string', 'null'] } },
              },
            },
          },
        },
      },
    },
    async () => sluice.readiness(),
  );

  app.get(
    '/metrics',
    { onRequest: adminAuth, schema: { tags: ['system'], summary: 'Prometheus exposition text (admin token)' } },
    async (_request, reply) => {
      const text = await sluice.metrics.text();
      return reply.type(sluice.metrics.contentType).send(text);
    },
  );

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
