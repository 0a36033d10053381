-- The maintenance tick (src/maintenance/).

-- name: MaintenanceTryLock
-- A session lock held by the tick's connection while the tick runs: one tick at a time
-- across the cluster. Released by MaintenanceUnlock, or by the server if the connection dies.
SELECT pg_try_advisory_lock(hashtext(':SCHEMA_NAME.maintenance')) AS acquired;

-- name: MaintenanceUnlock
SELECT pg_advisory_unlock(hashtext(':SCHEMA_NAME.maintenance'));

-- name: JobSweepExpired
-- Expired leases, oldest expiry first, a batch at a time: the rows locked here (skipping
-- any a worker is finishing right now), then retried or dead like a failure (retry_or_dead,
-- sql/functions/retry.sql), freeing their capacity slots.
SELECT * FROM :SCHEMA.retry_or_dead(
  ARRAY(SELECT id FROM :SCHEMA.job
        WHERE state IN ('active', 'claimed') AND lease_expires_at < coalesce($1::timestamptz, now())
        ORDER BY lease_expires_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED),
  NULL, NULL,
  jsonb_build_object('message', 'lease expired: the worker stopped heartbeating or died', 'name', 'LeaseExpired'),
  $1::timestamptz, $3::boolean, true);

-- name: SlotFreeStray
-- A cap slot is held by an active job of its queue whose `slot` names it: every statement
-- writes both sides in one transaction, so a snapshot sees them agree. A slot whose
-- holder is gone, finished, or names another slot was left behind by a fault, and would
-- keep the queue's cap one lower for good: freed, fenced on the holder seen (a slot
-- freed and taken again meanwhile is left to its new holder), and its queue woken.
WITH stray AS (
  SELECT s.queue, s.n, s.job_id
  FROM :SCHEMA.slot s
  LEFT JOIN :SCHEMA.job j ON j.id = s.job_id
  WHERE s.job_id IS NOT NULL
    AND (j.id IS NULL OR j.state <> 'active' OR j.queue <> s.queue OR j.slot IS DISTINCT FROM s.n)
), freed AS (
  UPDATE :SCHEMA.slot s SET job_id = NULL
  FROM stray t
  WHERE s.queue = t.queue AND s.n = t.n AND s.job_id = t.job_id
  RETURNING s.queue, s.n, t.job_id
), woken AS (
  SELECT pg_notify(':CHANNEL', f.queue) FROM (SELECT DISTINCT queue FROM freed) f WHERE $1::boolean
)
SELECT f.queue, f.n, f.job_id::text AS job_id FROM freed f, (SELECT count(*) FROM woken) w;

-- name: JobDeleteFinished
-- Retention: delete a batch of finished jobs of one queue and state older than the cutoff,
-- but for jobs still holding their singleton key over its period (sql/functions/unique.sql).
-- The constant list of finished states is what lets the planner read the partial index of
-- finished jobs: a state from a parameter cannot prove its predicate, and a plan without it
-- sorts every finished job of the queue for each batch.
DELETE FROM :SCHEMA.job
WHERE id IN (
  SELECT id FROM :SCHEMA.job
  WHERE queue = $1 AND state = $2::text:::SCHEMA.job_state AND finished_at < $3::timestamptz
    AND state IN ('completed', 'cancelled', 'dead')
    AND (singleton_until IS NULL OR singleton_until <= coalesce($5::timestamptz, now()))
  ORDER BY finished_at
  LIMIT $4
  FOR UPDATE SKIP LOCKED
)
RETURNING id;

-- name: JobArchiveFinished
-- Retention with archiving: move the batch into job_archive instead. The columns are
-- named: the job table's own bookkeeping (its cap slot) has no place in the archive. The
-- list of finished states: as in JobDeleteFinished.
WITH moved AS (
  DELETE FROM :SCHEMA.job
  WHERE id IN (
    SELECT id FROM :SCHEMA.job
    WHERE queue = $1 AND state = $2::text:::SCHEMA.job_state AND finished_at < $3::timestamptz
      AND state IN ('completed', 'cancelled', 'dead')
      AND (singleton_until IS NULL OR singleton_until <= coalesce($5::timestamptz, now()))
    ORDER BY finished_at
    LIMIT $4
    FOR UPDATE SKIP LOCKED
  )
  RETURNING id, queue, state, data, key, singleton_key, priority, run_at, attempts, max_attempts,
            lease_token, lease_expires_at, worker_id, result, errors, created_at, started_at, finished_at
)
INSERT INTO :SCHEMA.job_archive (id, queue, state, data, key, singleton_key, priority, run_at, attempts, max_attempts,
                                 lease_token, lease_expires_at, worker_id, result, errors, created_at, started_at, finished_at,
                                 archived_at)
SELECT m.*, coalesce($5::timestamptz, now()) FROM moved m
RETURNING id;

-- name: QueueRetentionList
SELECT name, retain_completed_seconds, retain_cancelled_seconds, retain_dead_seconds, archive
FROM :SCHEMA.queue ORDER BY name;

-- name: ScheduleAdvance
-- Compare-and-set: only the caller that saw `last_slot_at` = $2 moves it to $3.
UPDATE :SCHEMA.schedule SET last_slot_at = $3
WHERE name = $1 AND last_slot_at = $2
RETURNING name;

-- name: JobInsertScheduled
-- A cron slot's job. Schedules bypass admission (shedding is for callers, and a missed
-- critical slot is worse than a deeper queue); returns nothing if the queue is gone.
INSERT INTO :SCHEMA.job (queue, data, max_attempts, run_at, created_at)
SELECT q.name, $2, q.max_attempts, $3, coalesce($4::timestamptz, now())
FROM :SCHEMA.queue q WHERE q.name = $1
RETURNING id;

-- name: DatabaseNow
SELECT now() AS now;

-- name: JobStartPrune
-- Starts older than their queue's longest rate or budget window (its own or per key) count for nothing any more
-- (sql/functions/rate.sql); a queue without either keeps none. So do grants past their rate's window.
WITH grants AS (
  DELETE FROM :SCHEMA.rate_grant g
  WHERE g.until < coalesce($1::timestamptz, now()) - coalesce(
    (SELECT q.rate_period_ms FROM :SCHEMA.queue q WHERE q.name = g.queue), 0) * interval '1 millisecond'
)
DELETE FROM :SCHEMA.job_start s
WHERE s.started_at < coalesce($1::timestamptz, now()) - coalesce(
  (SELECT greatest(q.rate_period_ms, q.budget_period_ms, q.key_rate_period_ms, q.key_budget_period_ms)
   FROM :SCHEMA.queue q WHERE q.name = s.queue), 0
) * interval '1 millisecond';

-- name: EventListenerPrune
-- Registrations of connections that are gone (a process killed, a connection lost).
DELETE FROM :SCHEMA.event_listener l
WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = l.pid);
