/** What every route needs (the Sluice instance and the token checks), and how an application extends the server. */
import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify';
import type { Sluice } from 'sluice';

export interface RouteContext {
  sluice: Sluice;
  /** onRequest hook for producer and worker endpoints (API or admin token), run before the body is read. */
  apiAuth: onRequestAsyncHookHandler;
  /** onRequest hook for admin endpoints and the dashboard's data (admin token). */
  adminAuth: onRequestAsyncHookHandler;
}

/** Mounts an application's routes on the app, guarded by the server's own token checks. */
export type AppPlugin = (app: FastifyInstance, context: RouteContext) => void | Promise<void>;

/** What an extension gets when the server starts it. */
export interface ExtensionStartContext {
  sluice: Sluice;
  /** The database the server uses (the embedded one's URL when it runs one). */
  databaseUrl: string;
  print: (line: string) => void;
}

/**
 * An application running inside the server process (the missions platform is one): it
 * starts once the database is migrated, mounts its routes before the server listens, and
 * stops after the server stopped accepting requests, before Sluice closes. The server
 * never imports an application; the application hands itself to `startServer`.
 */
export interface ServerExtension {
  /** Named in the start-up lines and errors. */
  name: string;
  start?(context: ExtensionStartContext): Promise<void> | void;
  register?: AppPlugin;
  /** Drains the extension's own work (its workers) within about `timeoutMs`; called once, on close. */
  stop?(options: { timeoutMs: number }): Promise<void>;
}
