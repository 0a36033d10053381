/** Row → public type mapping, in one place (snake_case columns → camelCase fields). */
import type { Job, JobParent, Queue, QueueStats } from '../types.js';

export function toJob<T = unknown>(r: any): Job<T> {
  return {
    id: String(r.id),
    queue: r.queue,
    state: r.state,
    data: r.data as T,
    key: r.key,
    singletonKey: r.singleton_key,
    priority: r.priority,
    runAt: r.run_at,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    cost: r.cost ?? 1,
    timeoutMs: r.timeout_ms ?? null,
    leaseExpiresAt: r.lease_expires_at,
    workerId: r.worker_id,
    result: r.result,
    errors: r.errors ?? [],
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    cancelRequestedAt: r.cancel_requested_at ?? null,
    waitingParents: r.waiting_parents ?? null,
    onParentFailure: r.on_parent_failure ?? null,
    traceContext: r.trace_context ?? null,
    progress: r.progress ?? null,
    logCount: r.log_count ?? 0,
  };
}

export function toParent(r: any): JobParent {
  return { id: String(r.id), queue: r.queue ?? null, state: r.state ?? null, result: r.result ?? null };
}

/**
 * The columns of a claimed job as complete_and_claim answers them, in order: one `json`
 * array per job (sql/functions/claim.sql). The two lists change together.
 */
export const CLAIMED_COLUMNS = [
  'id',
  'queue',
  'state',
  'data',
  'key',
  'singleton_key',
  'priority',
  'run_at',
  'attempts',
  'max_attempts',
  'lease_token',
  'lease_expires_at',
  'worker_id',
  'result',
  'errors',
  'created_at',
  'started_at',
  'finished_at',
  'slot',
  'cost',
  'timeout_ms',
  'cancel_requested_at',
  'waiting_parents',
  'on_parent_failure',
  'trace_context',
  'start_reserved',
  'start_in_ms',
] as const;

const date = (v: unknown): Date | null => (typeof v === 'string' ? new Date(v) : null);

/**
 * A claimed job's array (above) as a row in the shape of the table's. Built by one literal,
 * so every held row shares one compact shape: a worker holding a thousand jobs ahead keeps
 * them in fewer bytes than the parsed objects of a keyed answer.
 */
export function claimedRow(v: readonly unknown[]): any {
  return {
    id: v[0],
    queue: v[1],
    state: v[2],
    data: v[3],
    key: v[4],
    singleton_key: v[5],
    priority: v[6],
    run_at: date(v[7]),
    attempts: v[8],
    max_attempts: v[9],
    lease_token: v[10],
    lease_expires_at: date(v[11]),
    worker_id: v[12],
    result: v[13],
    errors: v[14],
    created_at: date(v[15]),
    started_at: date(v[16]),
    finished_at: date(v[17]),
    slot: v[18],
    cost: v[19],
    timeout_ms: v[20],
    cancel_requested_at: date(v[21]),
    waiting_parents: v[22],
    on_parent_failure: v[23],
    trace_context: v[24],
    start_reserved: v[25],
    start_in_ms: v[26],
  };
}

export function toQueue(r: any): Queue {
  return {
    name: r.name,
    concurrency: r.concurrency,
    perKeyConcurrency: r.per_key_concurrency,
    maxPerKey: r.max_per_key,
    maxPending: r.max_pending,
    maxAttempts: r.max_attempts,
    backoff: { baseMs: r.backoff_base_ms, maxMs: r.backoff_max_ms, jitter: r.backoff_jitter },
    leaseSeconds: r.lease_seconds,
    retryAfterSeconds: r.retry_after_seconds,
    paused: r.paused,
    retention: {
      completedSeconds: r.retain_completed_seconds,
      cancelledSeconds: r.retain_cancelled_seconds,
      deadSeconds: r.retain_dead_seconds,
    },
    archive: r.archive,
    deadLetterQueue: r.dead_letter_queue,
    rateLimit: r.rate_count == null ? null : { count: r.rate_count, periodMs: r.rate_period_ms },
    budget: r.budget_units == null ? null : { units: Number(r.budget_units), periodMs: r.budget_period_ms },
    maxWaitMs: r.max_wait_ms ?? null,
    perKeyRateLimit: r.key_rate_count == null ? null : { count: r.key_rate_count, periodMs: r.key_rate_period_ms },
    perKeyBudget: r.key_budget_units == null ? null : { units: Number(r.key_budget_units), periodMs: r.key_budget_period_ms },
    durability: r.durability,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export function toStats(queue: Queue, r: any): QueueStats {
  return {
    queue: queue.name,
    ready: Number(r.ready),
    scheduled: Number(r.scheduled),
    waiting: Number(r.waiting),
    active: Number(r.active),
    claimedAhead: Number(r.claimed_ahead),
    completed: Number(r.completed),
    cancelled: Number(r.cancelled),
    dead: Number(r.dead),
    oldestReadyAgeSeconds: Math.max(0, Number(r.oldest_ready_age_seconds ?? 0)),
    concurrency: queue.concurrency,
    paused: queue.paused,
    rateUse: queue.rateLimit && { used: Number(r.window_starts ?? 0), limit: queue.rateLimit.count, periodMs: queue.rateLimit.periodMs },
    budgetUse: queue.budget && { used: Number(r.window_units ?? 0), limit: queue.budget.units, periodMs: queue.budget.periodMs },
    heldBack: Number(r.held ?? 0),
    // The held-back count comes from the ready one (sql/functions/use.sql).
    estimated: r.held != null && r.estimated.includes('ready') ? [...r.estimated, 'heldBack'] : r.estimated,
  };
}
