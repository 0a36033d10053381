-- Queue policies (src/queue/queues.ts).

-- name: QueuePut
INSERT INTO :SCHEMA.queue AS q (
  name, concurrency, per_key_concurrency, max_per_key, max_pending, max_attempts,
  backoff_base_ms, backoff_max_ms, backoff_jitter, lease_seconds, retry_after_seconds, paused,
  retain_completed_seconds, retain_cancelled_seconds, retain_dead_seconds, archive, dead_letter_queue,
  rate_count, rate_period_ms, budget_units, budget_period_ms, max_wait_ms,
  key_rate_count, key_rate_period_ms, key_budget_units, key_budget_period_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
        $23, $24, $25, $26)
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
-- Each count reads one partial index; completed/dead/cancelled read the finished index.
SELECT
  (SELECT count(*) FROM :SCHEMA.job WHERE queue = $1 AND state = 'pending' AND run_at <= coalesce($2::timestamptz, now())) AS ready,
  (SELECT count(*) FROM :SCHEMA.job WHERE queue = $1 AND state = 'pending' AND run_at > coalesce($2::timestamptz, now())) AS scheduled,
  (SELECT count(*) FROM :SCHEMA.job WHERE queue = $1 AND waiting_parents IS NOT NULL AND state = 'waiting') AS waiting,
  -- Jobs claimed ahead on a capped queue wait for a slot (slot 0, sql/functions/slots.sql): not active yet.
  (SELECT count(*) FROM :SCHEMA.job WHERE queue = $1 AND state = 'active' AND slot IS DISTINCT FROM 0) AS active,
  (SELECT count(*) FROM :SCHEMA.job WHERE queue = $1 AND state = 'active' AND slot = 0) AS claimed_ahead,
  (SELECT count(*) FROM :SCHEMA.job WHERE queue = $1 AND state = 'completed') AS completed,
  (SELECT count(*) FROM :SCHEMA.job WHERE queue = $1 AND state = 'cancelled') AS cancelled,
  (SELECT count(*) FROM :SCHEMA.job WHERE queue = $1 AND state = 'dead') AS dead,
  (SELECT extract(epoch FROM coalesce($2::timestamptz, now()) - min(run_at))
     FROM :SCHEMA.job WHERE queue = $1 AND state = 'pending' AND run_at <= coalesce($2::timestamptz, now())) AS oldest_ready_age_seconds,
  -- What the rate and the budget have used of their windows, and the ready jobs they hold
  -- back (sql/functions/use.sql): NULL without them.
  u.window_starts, u.window_units, u.held
FROM :SCHEMA.queue q
LEFT JOIN LATERAL :SCHEMA.start_use(q, coalesce($2::timestamptz, now())) u ON true
WHERE q.name = $1;

-- name: MetricsSnapshot
-- Every queue's gauges in one statement, each count read from a partial index.
-- Completed and cancelled totals are counters of the processes, not gauges (counting
-- a large finished set at every scrape would not be cheap).
SELECT q.name, q.concurrency, q.paused, q.rate_count, q.budget_units,
  u.window_starts AS rate_window_starts, u.window_units AS budget_window_units, u.held AS rate_held_jobs,
  (SELECT count(*) FROM :SCHEMA.job j WHERE j.queue = q.name AND j.state = 'pending' AND j.run_at <= now()) AS ready,
  (SELECT count(*) FROM :SCHEMA.job j WHERE j.queue = q.name AND j.state = 'pending' AND j.run_at > now()) AS scheduled,
  (SELECT count(*) FROM :SCHEMA.job j WHERE j.queue = q.name AND j.waiting_parents IS NOT NULL AND j.state = 'waiting') AS waiting,
  (SELECT count(*) FROM :SCHEMA.job j WHERE j.queue = q.name AND j.state = 'active' AND j.slot IS DISTINCT FROM 0) AS active,
  (SELECT count(*) FROM :SCHEMA.job j WHERE j.queue = q.name AND j.state = 'active' AND j.slot = 0) AS claimed_ahead,
  (SELECT count(*) FROM :SCHEMA.job j WHERE j.queue = q.name AND j.state = 'dead') AS dead,
  (SELECT coalesce(extract(epoch FROM now() - min(j.run_at)), 0) FROM :SCHEMA.job j
     WHERE j.queue = q.name AND j.state = 'pending' AND j.run_at <= now()) AS oldest_ready_age_seconds
FROM :SCHEMA.queue q
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
