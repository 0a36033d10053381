/** What every route needs: the Sluice instance and the token checks. */
import type { preHandlerAsyncHookHandler } from 'fastify';
import type { Sluice } from 'sluice';

export interface RouteContext {
  sluice: Sluice;
  /** Pre-handler for producer and worker endpoints (API or admin token). */
  apiAuth: preHandlerAsyncHookHandler;
  /** Pre-handler for admin endpoints and the dashboard's data (admin token). */
  adminAuth: preHandlerAsyncHookHandler;
}
