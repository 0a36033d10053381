-- Enqueueing, reading and operator actions on jobs (src/queue/jobs.ts).
-- Admission and claim logic lives in sql/functions/send.sql and claim.sql.

-- name: JobSend
SELECT id, deduplicated FROM :SCHEMA.send($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12);

-- name: JobSendMany
SELECT ord, id, deduplicated FROM :SCHEMA.send_many($1, $2, $3, $4);

-- name: JobGet
SELECT * FROM :SCHEMA.job WHERE id = $1;

-- name: JobCancel
-- Pending or active jobs only. Clearing the lease token fences out the running worker.
UPDATE :SCHEMA.job
SET state = 'cancelled', finished_at = coalesce($2::timestamptz, now()),
    lease_token = NULL, lease_expires_at = NULL
WHERE id = $1 AND state IN ('pending', 'active')
RETURNING *;

-- name: JobReplay
-- Dead or cancelled jobs go back to pending with their attempts reset; their error
-- history is kept.
UPDATE :SCHEMA.job
SET state = 'pending', attempts = 0, run_at = coalesce($2::timestamptz, now()),
    finished_at = NULL, started_at = NULL, result = NULL,
    lease_token = NULL, lease_expires_at = NULL, worker_id = NULL
WHERE id = $1 AND state IN ('dead', 'cancelled')
RETURNING *;
