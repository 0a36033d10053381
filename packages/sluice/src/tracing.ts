/**
 * OpenTelemetry spans, through `@opentelemetry/api` only: the application registers an SDK
 * (a tracer provider, a context manager and a propagator) or none.
 *
 *   send <queue>     PRODUCER  a send, sendMany (one span per batch) or a flow's job; its
 *                              context is stored with the jobs (`job.trace_context`)
 *   receive <queue>  CLIENT    a claim round trip (a root span)
 *   process <queue>  CONSUMER  a handler run, a child of the context stored by the send
 *   settle <queue>   CLIENT    a write of results (one span per statement, linked to each
 *                              result's `process` span; a pull worker's complete or fail: one
 *                              per job, in the caller's context)
 *   sluice.flow      INTERNAL  a flow: the sends of its jobs are its children
 *
 * Without a tracer provider no span is started and nothing is allocated for tracing: every
 * entry point asks `tracer()` first, which then answers null without allocating. A send then
 * stores the active context's carrier only if a span context is active (NULL otherwise).
 */
import { readFileSync } from 'node:fs';
import {
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  isSpanContextValid,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';

/** The instrumentation scope: this package's name and version. */
const NAME = 'sluice';
const VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

/** A propagation carrier as stored with a job: `{ traceparent, tracestate? }` for W3C trace context. */
export type TraceCarrier = Record<string, string>;

export const ATTR = {
  system: 'messaging.system',
  destination: 'messaging.destination.name',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  messageId: 'messaging.message.id',
  batchCount: 'messaging.batch.message_count',
  attempt: 'sluice.job.attempt',
  key: 'sluice.job.key',
  outcome: 'sluice.settle.outcome',
} as const;

/**
 * The registered SDK's tracer, or null when no tracer provider is registered (every span
 * would be a no-op). Asked per operation, so a provider registered after Sluice loaded is
 * used; without one it allocates nothing.
 */
export function tracer(): Tracer | null {
  const provider = trace.getTracerProvider();
  if (provider instanceof ProxyTracerProvider) return provider.getDelegateTracer(NAME, VERSION) ?? null;
  return provider.getTracer(NAME, VERSION);
}

/** The carrier of `ctx`'s span context, by the global propagator; null when there is none to carry. */
export function carrierOf(ctx: Context): TraceCarrier | null {
  const spanContext = trace.getSpanContext(ctx);
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return null;
  const carrier: TraceCarrier = {};
  propagation.inject(ctx, carrier);
  return Object.keys(carrier).length > 0 ? carrier : null;
}

/** The context a job's carrier describes (the root context without one): the parent of its handler's span. */
export function contextOf(carrier: TraceCarrier | null | undefined): Context {
  return carrier ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
}

function attributes(queue: string, operation: 'send' | 'receive' | 'process' | 'settle', extra?: Attributes): Attributes {
  return { [ATTR.system]: 'sluice', [ATTR.destination]: queue, [ATTR.operationType]: operation, [ATTR.operationName]: operation, ...extra };
}

/** Marks `span` failed with `err`. */
export function spanFailed(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * Runs `fn` with `span` active and the carrier of its context, ends the span, and marks it
 * failed if `fn` throws.
 */
async function within<R>(span: Span, fn: (carrier: TraceCarrier | null) => Promise<R>): Promise<R> {
  const ctx = trace.setSpan(context.active(), span);
  try {
    return await context.with(ctx, fn, undefined, carrierOf(ctx));
  } catch (err) {
    spanFailed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * A send of `count` jobs (null: a single send) to `queue` with tracer `t`: `fn` writes them
 * with the carrier it is given (its span's context); `id` names what was written, for the
 * span. Without a tracer, callers skip this and store `carrierOf(context.active())`.
 */
export function traceSend<R>(
  t: Tracer,
  queue: string,
  count: number | null,
  fn: (carrier: TraceCarrier | null) => Promise<R>,
  id: (r: R) => string | null,
): Promise<R> {
  const span = t.startSpan(`send ${queue}`, {
    kind: SpanKind.PRODUCER,
    attributes: attributes(queue, 'send', count === null ? undefined : { [ATTR.batchCount]: count }),
  });
  return within(span, async (carrier) => {
    const r = await fn(carrier);
    const sent = id(r);
    if (sent !== null) span.setAttribute(ATTR.messageId, sent);
    return r;
  });
}

/** A flow of `count` jobs: the sends of its jobs are children of its span. */
export function traceFlow<R>(count: number, fn: () => Promise<R>): Promise<R> {
  const t = tracer();
  if (t === null) return fn();
  const span = t.startSpan('sluice.flow', { kind: SpanKind.INTERNAL, attributes: { [ATTR.system]: 'sluice', [ATTR.batchCount]: count } });
  return within(span, () => fn());
}

/**
 * A claim round trip on `queue` (end it with `endReceive`), or null without a tracer. A
 * worker's claims are root spans: the context a worker was started in is not their parent.
 */
export function startReceive(queue: string, root: boolean): Span | null {
  const t = tracer();
  if (t === null) return null;
  return t.startSpan(`receive ${queue}`, { kind: SpanKind.CLIENT, root, attributes: attributes(queue, 'receive') });
}

/**
 * Runs `fn` with `span` active in a context of its own. A worker's statements are scheduled
 * from inside handlers' contexts (a job's end wakes the next claim): without this, their
 * database spans (an instrumented `pg`) would be children of a job that already ended.
 */
export function activeIn<R>(span: Span, fn: () => R): R {
  return context.with(trace.setSpan(ROOT_CONTEXT, span), fn);
}

/** Ends a claim's span: `claimed` jobs, or failed with `err`. */
export function endReceive(span: Span | null, claimed: number, err?: unknown): void {
  if (span !== null && err === undefined) span.setAttribute(ATTR.batchCount, claimed);
  endSpan(span, err);
}

/** A handler's run of a claimed job, child of the context its send stored, or null without a tracer. */
export function startProcess(
  queue: string,
  id: string,
  attempt: number,
  key: string | null,
  carrier: TraceCarrier | null,
): { span: Span; ctx: Context } | null {
  const t = tracer();
  if (t === null) return null;
  const parent = contextOf(carrier);
  const span = t.startSpan(
    `process ${queue}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: attributes(
        queue,
        'process',
        key === null
          ? { [ATTR.messageId]: id, [ATTR.attempt]: attempt }
          : { [ATTR.messageId]: id, [ATTR.attempt]: attempt, [ATTR.key]: key },
      ),
    },
    parent,
  );
  return { span, ctx: trace.setSpan(parent, span) };
}

/**
 * A statement writing `results` of `queue` (completions or failures: `outcome`), linked to
 * each result's `process` span; null without a tracer or results. A worker's writes are
 * root spans, a pull worker's children of the active context.
 */
export function startSettle(
  queue: string,
  results: readonly { span?: SpanContext }[],
  outcome: 'completed' | 'failed',
  root: boolean,
): Span | null {
  if (results.length === 0) return null;
  const t = tracer();
  if (t === null) return null;
  const links: Link[] = [];
  for (const r of results) if (r.span) links.push({ context: r.span });
  return t.startSpan(`settle ${queue}`, {
    kind: SpanKind.CLIENT,
    root,
    links,
    attributes: attributes(queue, 'settle', { [ATTR.batchCount]: results.length, [ATTR.outcome]: outcome }),
  });
}

/**
 * A pull worker's write of one job's result (`sluice.complete`, `sluice.fail`): a `settle`
 * span in the caller's context (say, the HTTP request's), named for the job's queue once the
 * write has said which it is.
 */
export async function traceSettleOne<R extends { queue: string }>(
  id: string,
  outcome: 'completed' | 'failed',
  fn: () => Promise<R>,
): Promise<R> {
  const t = tracer();
  if (t === null) return fn();
  const span = t.startSpan('settle', {
    kind: SpanKind.CLIENT,
    attributes: {
      [ATTR.system]: 'sluice',
      [ATTR.operationType]: 'settle',
      [ATTR.operationName]: 'settle',
      [ATTR.messageId]: id,
      [ATTR.outcome]: outcome,
    },
  });
  return runIn(span, async () => {
    const written = await fn();
    span.updateName(`settle ${written.queue}`);
    span.setAttribute(ATTR.destination, written.queue);
    return written;
  });
}

/** Runs `fn` with `span` active (as `activeIn`) and ends the span, failed if `fn` throws; without a span, just `fn`. */
export async function runIn<R>(span: Span | null, fn: () => Promise<R>): Promise<R> {
  if (span === null) return fn();
  let result: R;
  try {
    result = await activeIn(span, fn);
  } catch (err) {
    endSpan(span, err);
    throw err;
  }
  endSpan(span);
  return result;
}

export function endSpan(span: Span | null, err?: unknown): void {
  if (span === null) return;
  if (err !== undefined) spanFailed(span, err);
  span.end();
}
