-- Enqueueing, reading and operator actions on jobs (src/queue/jobs.ts).
-- Admission and claim logic lives in sql/functions/send.sql and claim.sql.

-- name: JobSend
SELECT id, deduplicated FROM :SCHEMA.send($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12);

-- name: JobSendMany
SELECT ord, id, deduplicated FROM :SCHEMA.send_many($1, $2, $3, $4);

-- name: JobGet
SELECT * FROM :SCHEMA.job WHERE id = $1;

-- name: JobCancel
-- A pending job is cancelled at once. An active one is asked to stop: it keeps its lease,
-- cap slot and key's room until its handler returns, and its worker hears of it at once on
-- the cancel channel (src/worker/executor.ts); retry_or_dead and JobRelease then end it
-- cancelled (sql/functions/retry.sql), a completion still completes it.
WITH changed AS (
  UPDATE :SCHEMA.job
  SET state = CASE WHEN state = 'pending' THEN 'cancelled' ELSE state END,
      finished_at = CASE WHEN state = 'pending' THEN coalesce($2::timestamptz, now()) END,
      cancel_requested_at = coalesce(cancel_requested_at, $2::timestamptz, now())
  WHERE id = $1 AND state IN ('pending', 'active')
  RETURNING *
), told AS (
  SELECT pg_notify(':CANCEL_CHANNEL', c.id::text) FROM changed c WHERE c.state = 'active'
)
SELECT c.* FROM changed c, (SELECT count(*) FROM told) t;

-- name: JobReplay
-- Dead or cancelled jobs go back to pending with their attempts reset; their error
-- history is kept.
UPDATE :SCHEMA.job
SET state = 'pending', attempts = 0, run_at = coalesce($2::timestamptz, now()),
    finished_at = NULL, started_at = NULL, result = NULL, cancel_requested_at = NULL,
    lease_token = NULL, lease_expires_at = NULL, worker_id = NULL
WHERE id = $1 AND state IN ('dead', 'cancelled')
RETURNING *;
