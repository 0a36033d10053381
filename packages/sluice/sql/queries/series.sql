-- Per-queue, per-minute figures (table queue_minute): src/queue/counts.ts adds counters,
-- the maintenance tick samples gauges and prunes, src/queue/series.ts reads.

-- name: QueueMinuteAdd
-- One process's counts since its last flush, added to the current minute's rows ($1 the
-- injected clock, else the database's). Queues in array order: concurrent flushes lock
-- the rows in the same order.
INSERT INTO :SCHEMA.queue_minute AS m (queue, minute, starts, completions, failures, dead, shed, key_limited)
SELECT c.queue, date_trunc('minute', coalesce($1::timestamptz, now())), c.starts, c.completions, c.failures, c.dead, c.shed, c.key_limited
FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[])
  AS c(queue, starts, completions, failures, dead, shed, key_limited)
ORDER BY c.queue
ON CONFLICT (queue, minute) DO UPDATE SET
  starts = m.starts + excluded.starts,
  completions = m.completions + excluded.completions,
  failures = m.failures + excluded.failures,
  dead = m.dead + excluded.dead,
  shed = m.shed + excluded.shed,
  key_limited = m.key_limited + excluded.key_limited;

-- name: QueueMinuteSample
-- Every queue's gauges into the current minute: running (active jobs, claimed-ahead ones
-- excluded) and lag keep the largest sample of the minute, ready depth the last one.
INSERT INTO :SCHEMA.queue_minute AS m (queue, minute, running, cap, ready, lag_ms)
SELECT q.name, date_trunc('minute', t.now), c.active::integer, q.concurrency,
  least(c.ready, 2147483647)::integer, floor(c.oldest_ready_age_seconds * 1000)::bigint
FROM :SCHEMA.queue q
CROSS JOIN (SELECT coalesce($1::timestamptz, now()) AS now) t
-- Bounded in cost: past count_bound() ready jobs, the depth is an estimate (sql/functions/counts.sql).
CROSS JOIN LATERAL :SCHEMA.queue_counts(q.name, t.now, false) c
ORDER BY q.name
ON CONFLICT (queue, minute) DO UPDATE SET
  running = greatest(m.running, excluded.running),
  cap = excluded.cap,
  ready = excluded.ready,
  lag_ms = greatest(m.lag_ms, excluded.lag_ms);

-- name: QueueMinutePrune
-- Rows of minutes older than the retention ($2 minutes).
DELETE FROM :SCHEMA.queue_minute
WHERE minute < date_trunc('minute', coalesce($1::timestamptz, now())) - make_interval(mins => $2::integer);

-- name: QueueSeries
-- The last $3 minutes of queue $1, oldest first, the current minute last; a minute with
-- no row comes back with zero counters and NULL gauges.
SELECT g.minute AS at,
  coalesce(m.starts, 0) AS starts, coalesce(m.completions, 0) AS completions, coalesce(m.failures, 0) AS failures,
  coalesce(m.dead, 0) AS dead, coalesce(m.shed, 0) AS shed, coalesce(m.key_limited, 0) AS key_limited,
  m.running, m.cap, m.ready, m.lag_ms
FROM (SELECT date_trunc('minute', coalesce($2::timestamptz, now())) AS last) t
CROSS JOIN LATERAL generate_series(t.last - make_interval(mins => $3::integer - 1), t.last, interval '1 minute') AS g(minute)
LEFT JOIN :SCHEMA.queue_minute m ON m.queue = $1 AND m.minute = g.minute
ORDER BY g.minute;

-- name: QueueSeriesAll
-- QueueSeries for every queue at once (one statement for the dashboard's overview): the
-- last $2 minutes of each queue, by queue name, then oldest first.
SELECT q.name AS queue, g.minute AS at,
  coalesce(m.starts, 0) AS starts, coalesce(m.completions, 0) AS completions, coalesce(m.failures, 0) AS failures,
  coalesce(m.dead, 0) AS dead, coalesce(m.shed, 0) AS shed, coalesce(m.key_limited, 0) AS key_limited,
  m.running, m.cap, m.ready, m.lag_ms
FROM (SELECT date_trunc('minute', coalesce($1::timestamptz, now())) AS last) t
CROSS JOIN LATERAL generate_series(t.last - make_interval(mins => $2::integer - 1), t.last, interval '1 minute') AS g(minute)
CROSS JOIN :SCHEMA.queue q
LEFT JOIN :SCHEMA.queue_minute m ON m.queue = q.name AND m.minute = g.minute
ORDER BY q.name, g.minute;

-- name: QueueRefusals
-- Sends refused per queue over the last $2 minutes, the current one included.
SELECT queue, sum(shed)::bigint AS shed, sum(key_limited)::bigint AS key_limited
FROM :SCHEMA.queue_minute
WHERE minute > date_trunc('minute', coalesce($1::timestamptz, now())) - make_interval(mins => $2::integer)
GROUP BY queue;
