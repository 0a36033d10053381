/**
 * Builds the Fastify app (without listening): the HTTP API, the pull-worker API, the
 * dashboard, health, metrics and /openapi.json generated from the route schemas.
 */
import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Sluice } from 'sluice';
import { requireToken } from './auth.js';
import { SECURITY_HEADERS } from './security-headers.js';
import { errorResponse } from './schemas.js';
import type { AppPlugin, RouteContext } from './context.js';
import { clientErrorHandler, frameworkErrorHandler, installErrorHandlers } from './http-errors.js';
import { adminRoutes } from './routes/admin.js';
import { browseRoutes } from './routes/browse.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { eventRoutes } from './routes/events.js';
import { EventStreams } from './event-stream.js';
import { flowRoutes } from './routes/flows.js';
import { jobRoutes } from './routes/jobs.js';
import { noteRoutes } from './routes/notes.js';
import { queueRoutes } from './routes/queues.js';
import { systemRoutes } from './routes/system.js';
import { webhookRoutes } from './routes/webhooks.js';
import { workerRoutes } from './routes/workers.js';
import { NO_HOOKS, type HooksConfig } from './hooks/config.js';
import { hookRoutes } from './hooks/intake.js';
import { TokenChecker, type Tokens } from './tokens.js';
import { readFileSync } from 'node:fs';

/** This package's version, from its package.json (the same from src/ and dist/). */
const VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

export interface AppOptions {
  sluice: Sluice;
  tokens: Tokens;
  /** Largest request body (default 1 MiB). */
  maxBodyBytes?: number;
  /** Fastify's logger option; default: no request logging. */
  logger?: FastifyServerOptions['logger'];
  /** Applications' routes, mounted after the server's own with the same token checks. */
  plugins?: AppPlugin[];
  /** Webhook sources `POST /api/hooks/:source` takes in (needs the `sluice_server` schema: `migrateServerSchema`). */
  hooks?: HooksConfig;
  /** How often event streams send a heartbeat comment (default 15 s). */
  eventHeartbeatMs?: number;
}

export async function buildApp({
  sluice,
  tokens,
  maxBodyBytes = 1024 * 1024,
  logger = false,
  plugins = [],
  hooks = NO_HOOKS,
  eventHeartbeatMs = 15_000,
}: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger,
    bodyLimit: maxBodyBytes,
    // Unknown fields are errors, not silently dropped.
    ajv: { customOptions: { removeAdditional: false } },
    return503OnClosing: true,
    // Requests are counted by the metrics; logging each one would drown the errors.
    logController: new LogController({ disableRequestLogging: true }),
    // Bad URLs and unparsable requests get the API's error shape too.
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
  });
  installErrorHandlers(app);
  // The API speaks JSON only: any other body is a 415.
  app.removeContentTypeParser('text/plain');
  app.addHook('onSend', async (_request, reply, payload) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.header(name, value);
    return payload;
  });

  // Every API route documents the one error shape; replies are serialized through it too.
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/api/') && route.url !== '/metrics') return;
    const schema = (route.schema ??= {}) as { response?: Record<string, unknown> };
    schema.response = { ...schema.response, '4xx': errorResponse, '5xx': errorResponse };
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Sluice',
        version: VERSION,
        description: 'A PostgreSQL job queue with exact admission control. Every error body is { error: <stable code>, message }.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });

  const checker = new TokenChecker(tokens);
  const context: RouteContext = { sluice, apiAuth: requireToken(checker, 'api'), adminAuth: requireToken(checker, 'admin') };
  jobRoutes(app, context);
  flowRoutes(app, context);
  noteRoutes(app, context);
  const streams = new EventStreams(eventHeartbeatMs);
  // Open streams never end on their own: they are closed before the server waits for requests.
  app.addHook('preClose', async () => streams.closeAll());
  app.decorate('eventStreams', streams);
  eventRoutes(app, context, streams);
  workerRoutes(app, context);
  queueRoutes(app, context);
  adminRoutes(app, context);
  browseRoutes(app, context);
  webhookRoutes(app, context);
  systemRoutes(app, context);
  await hookRoutes(app, sluice, hooks);
  dashboardRoutes(app);
  for (const plugin of plugins) await plugin(app, context);
  return app;
}
