-- Queue policies (src/queue/queues.ts).

-- name: QueuePut
-- $1: the queue's policy as its row's columns by name (validate.ts, policyRow), every one
-- of those listed here given; the others keep their defaults.
INSERT INTO :SCHEMA.queue AS q (
  name, concurrency, per_key_concurrency, max_per_key, max_pending, max_attempts,
  backoff_base_ms, backoff_max_ms, backoff_jitter, lease_seconds, retry_after_seconds, paused,
  retain_completed_seconds, retain_cancelled_seconds, retain_dead_seconds, archive, dead_letter_queue,
  rate_count, rate_period_ms, budget_units, budget_period_ms, max_wait_ms,
  key_rate_count, key_rate_period_ms, key_budget_units, key_budget_period_ms, durability)
SELECT r.name, r.concurrency, r.per_key_concurrency, r.max_per_key, r.max_pending, r.max_attempts,
  r.backoff_base_ms, r.backoff_max_ms, r.backoff_jitter, r.lease_seconds, r.retry_after_seconds, r.paused,
  r.retain_completed_seconds, r.retain_cancelled_seconds, r.retain_dead_seconds, r.archive, r.dead_letter_queue,
  r.rate_count, r.rate_period_ms, r.budget_units, r.budget_period_ms, r.max_wait_ms,
  r.key_rate_count, r.key_rate_period_ms, r.key_budget_units, r.key_budget_period_ms, r.durability
FROM jsonb_populate_record(NULL:::SCHEMA.queue, $1::jsonb) r
ON CONFLICT (name) DO UPDATE SET
  concurrency = excluded.concurrency,
  per_key_concurrency = excluded.per_key_concurrency,
  max_per_key = excluded.max_per_key,
  max_pending = excluded.max_pending,
  max_attempts = excluded.max_attempts,
  backoff_base_ms = excluded.backoff_base_ms,
  backoff_max_ms = excluded.backoff_max_ms,
  backoff_jitter = excluded.backoff_jitter,
  lease_seconds = excluded.lease_seconds,
  retry_after_seconds = excluded.retry_after_seconds,
  paused = excluded.paused,
  retain_completed_seconds = excluded.retain_completed_seconds,
  retain_cancelled_seconds = excluded.retain_cancelled_seconds,
  retain_dead_seconds = excluded.retain_dead_seconds,
  archive = excluded.archive,
  dead_letter_queue = excluded.dead_letter_queue,
  rate_count = excluded.rate_count,
  rate_period_ms = excluded.rate_period_ms,
  budget_units = excluded.budget_units,
  budget_period_ms = excluded.budget_period_ms,
  max_wait_ms = excluded.max_wait_ms,
  key_rate_count = excluded.key_rate_count,
  key_rate_period_ms = excluded.key_rate_period_ms,
  key_budget_units = excluded.key_budget_units,
  key_budget_period_ms = excluded.key_budget_period_ms,
  durability = excluded.durability,
  updated_at = now()
RETURNING q.*;

-- name: QueueGet
SELECT * FROM :SCHEMA.queue WHERE name = $1;

-- name: QueueList
SELECT * FROM :SCHEMA.queue ORDER BY name;

-- name: QueueSetPaused
UPDATE :SCHEMA.queue SET paused = $2, updated_at = now() WHERE name = $1 RETURNING *;

-- name: QueueNotify
SELECT pg_notify(':CHANNEL', $1);

-- name: QueueStats
-- Each count bounded in cost, past count_bound() an estimate named in `estimated`
-- (queue_counts, sql/functions/counts.sql).
SELECT c.*,
  -- What the rate and the budget have used of their windows, and the ready jobs they hold
  -- back (sql/functions/use.sql): NULL without them.
  u.window_starts, u.window_units, u.held
FROM :SCHEMA.queue q
CROSS JOIN LATERAL :SCHEMA.queue_counts(q.name, coalesce($2::timestamptz, now()), true) c
LEFT JOIN LATERAL :SCHEMA.start_use(q, coalesce($2::timestamptz, now())) u ON true
WHERE q.name = $1;

-- name: MetricsSnapshot
-- Every queue's gauges in one statement, each bounded in cost (queue_counts,
-- sql/functions/counts.sql). Completed and cancelled totals are counters of the
-- processes, not gauges.
SELECT q.name, q.concurrency, q.paused, q.rate_count, q.budget_units,
  u.window_starts AS rate_window_starts, u.window_units AS budget_window_units, u.held AS rate_held_jobs,
  c.ready, c.scheduled, c.waiting, c.active, c.claimed_ahead, c.dead, c.oldest_ready_age_seconds
FROM :SCHEMA.queue q
CROSS JOIN LATERAL :SCHEMA.queue_counts(q.name, now(), false) c
-- What the rate and the budget have used of their current windows, and the ready jobs they
-- hold back (use.sql): NULL without them.
LEFT JOIN LATERAL :SCHEMA.start_use(q, now()) u ON true
ORDER BY q.name;

-- name: QueueThroughput
-- Finished jobs per time bucket ($3 seconds wide) since $2, from the finished-jobs index.
SELECT (floor(extract(epoch FROM finished_at) / $3) * $3)::bigint AS bucket_epoch, state::text AS state, count(*)::integer AS n
FROM :SCHEMA.job
WHERE queue = $1 AND state IN ('completed', 'dead') AND finished_at >= $2
GROUP BY 1, 2
ORDER BY 1;
