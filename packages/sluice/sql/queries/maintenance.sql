-- The maintenance tick (src/maintenance/).

-- name: MaintenanceTryLock
-- A session lock held by the tick's connection while the tick runs: one tick at a time
-- across the cluster. Released by MaintenanceUnlock, or by the server if the connection dies.
SELECT pg_try_advisory_lock(hashtext(':SCHEMA_NAME.maintenance')) AS acquired;

-- name: MaintenanceUnlock
SELECT pg_advisory_unlock(hashtext(':SCHEMA_NAME.maintenance'));

-- name: JobSweepExpired
-- Expired leases go back to pending with backoff, or to dead when attempts are spent,
-- freeing their capacity slot. Batched, oldest expiry first.
WITH expired AS (
  SELECT id FROM :SCHEMA.job
  WHERE state = 'active' AND lease_expires_at < coalesce($1::timestamptz, now())
  ORDER BY lease_expires_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), swept AS (
  UPDATE :SCHEMA.job j
  SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'pending' END:::SCHEMA.job_state,
      run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at
                    ELSE coalesce($1::timestamptz, now())
                         + :SCHEMA.backoff_ms(q.backoff_base_ms, q.backoff_max_ms, q.backoff_jitter, j.attempts) * interval '1 millisecond'
               END,
      finished_at = CASE WHEN j.attempts >= j.max_attempts THEN coalesce($1::timestamptz, now()) END,
      errors = j.errors || jsonb_build_array(jsonb_build_object(
                 'message', 'lease expired: the worker stopped heartbeating or died',
                 'name', 'LeaseExpired', 'attempt', j.attempts, 'startedAt', j.started_at,
                 'finishedAt', coalesce($1::timestamptz, now()), 'workerId', j.worker_id)),
      lease_token = NULL, lease_expires_at = NULL
  FROM expired e, :SCHEMA.queue q
  WHERE j.id = e.id AND q.name = j.queue
  RETURNING j.*
), dead_lettered AS (
  -- A dead job is also sent to its queue's dead-letter queue, in the same transaction.
  INSERT INTO :SCHEMA.job (queue, data, max_attempts, run_at, created_at)
  SELECT dq.name,
         jsonb_build_object('jobId', d.id::text, 'queue', d.queue, 'data', d.data, 'key', d.key,
                            'attempts', d.attempts, 'errors', d.errors),
         dq.max_attempts, d.finished_at, d.finished_at
  FROM swept d
  JOIN :SCHEMA.queue q ON q.name = d.queue
  JOIN :SCHEMA.queue dq ON dq.name = q.dead_letter_queue
  WHERE d.state = 'dead'
  RETURNING queue
), woken AS (
  SELECT pg_notify(':CHANNEL', w.queue)
  FROM (SELECT queue FROM swept UNION SELECT queue FROM dead_lettered) w
  WHERE $3::boolean
)
SELECT s.* FROM swept s, (SELECT count(*) FROM woken) w;

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
-- Retention: delete a batch of finished jobs of one queue and state older than the cutoff.
DELETE FROM :SCHEMA.job
WHERE id IN (
  SELECT id FROM :SCHEMA.job
  WHERE queue = $1 AND state = $2::text:::SCHEMA.job_state AND finished_at < $3::timestamptz
  ORDER BY finished_at
  LIMIT $4
  FOR UPDATE SKIP LOCKED
)
RETURNING id;

-- name: JobArchiveFinished
-- Retention with archiving: move the batch into job_archive instead. The columns are
-- named: the job table's own bookkeeping (its cap slot) has no place in the archive.
WITH moved AS (
  DELETE FROM :SCHEMA.job
  WHERE id IN (
    SELECT id FROM :SCHEMA.job
    WHERE queue = $1 AND state = $2::text:::SCHEMA.job_state AND finished_at < $3::timestamptz
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
