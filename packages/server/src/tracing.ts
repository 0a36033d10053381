/**
 * Requests continue their client's trace: a send runs in the context the request's headers
 * carry, read by the application's global propagator (W3C `traceparent` with the usual SDK
 * set-up), so the engine's `send` span is its child and the job's handler joins the trace.
 * Without a registered propagator this reads nothing and costs next to nothing.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, context, propagation, trace } from '@opentelemetry/api';

/**
 * Runs `fn` in the trace of `headers`; as it is when a span is active already (an HTTP
 * instrumentation's server span, itself a child of the headers' context).
 */
export function inRequestTrace<T>(headers: IncomingHttpHeaders, fn: () => T): T {
  if (trace.getSpan(context.active()) !== undefined) return fn();
  return context.with(propagation.extract(ROOT_CONTEXT, headers), fn);
}
