-- The maintenance tick (src/maintenance/).

-- name: MaintenanceTryLock
-- Held until the tick's transaction ends: one tick at a time across the cluster.
SELECT pg_try_advisory_xact_lock(hashtext(':SCHEMA_NAME.maintenance')) AS acquired;

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
), woken AS (
  SELECT pg_notify(':CHANNEL', s.queue) FROM (SELECT DISTINCT queue FROM swept) s WHERE $3::boolean
)
SELECT s.* FROM swept s, (SELECT count(*) FROM woken) w;
