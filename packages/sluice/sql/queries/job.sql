-- Enqueueing, reading and operator actions on jobs (src/queue/jobs.ts).
-- Admission and claim logic lives in sql/functions/send.sql and claim.sql.

-- name: JobSend
SELECT id, deduplicated FROM :SCHEMA.send($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13);

-- name: JobSendAfter
-- A job with parents (send_after, sql/functions/flow.sql).
SELECT id, deduplicated FROM :SCHEMA.send_after($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15);

-- name: JobSendMany
SELECT ord, id, deduplicated FROM :SCHEMA.send_many($1, $2, $3, $4, $5);

-- name: JobGet
SELECT * FROM :SCHEMA.job WHERE id = $1;

-- name: JobParents
-- A job's parents with their results, as its handler sees them.
SELECT l.parent_id AS id, p.queue, p.state, p.result
FROM :SCHEMA.job_parent l LEFT JOIN :SCHEMA.job p ON p.id = l.parent_id
WHERE l.child_id = $1
ORDER BY l.parent_id;

-- name: JobParentsMany
-- The parents of several jobs (a worker's claimed batch), with their results.
SELECT l.child_id, l.parent_id AS id, p.queue, p.state, p.result
FROM :SCHEMA.job_parent l LEFT JOIN :SCHEMA.job p ON p.id = l.parent_id
WHERE l.child_id = ANY ($1::bigint[])
ORDER BY l.child_id, l.parent_id;

-- name: JobChildren
SELECT c.id, c.queue, c.state
FROM :SCHEMA.job_parent l JOIN :SCHEMA.job c ON c.id = l.child_id
WHERE l.parent_id = $1
ORDER BY c.id;

-- name: JobCancel
-- Cancelled at once when waiting or pending; asked to stop when active (sql/functions/cancel.sql).
SELECT * FROM :SCHEMA.cancel_job($1, $2::timestamptz);

-- name: JobReplay
-- Dead or cancelled jobs go back to pending with their attempts reset; their error
-- history is kept.
UPDATE :SCHEMA.job
SET state = 'pending', attempts = 0, run_at = coalesce($2::timestamptz, now()),
    finished_at = NULL, started_at = NULL, result = NULL, cancel_requested_at = NULL,
    lease_token = NULL, lease_expires_at = NULL, worker_id = NULL
WHERE id = $1 AND state IN ('dead', 'cancelled')
RETURNING *;

-- name: JobList
-- Jobs matching the filters (each NULL = any), newest first, below the cursor id $6: a
-- backward walk of the primary key, stopping after $7 matches.
SELECT * FROM :SCHEMA.job
WHERE id < coalesce($6::bigint, 9223372036854775807)
  AND ($1::text IS NULL OR queue = $1)
  AND ($2::text IS NULL OR state = $2:::SCHEMA.job_state)
  AND ($3::text IS NULL OR key = $3)
  AND ($4::timestamptz IS NULL OR created_at >= $4)
  AND ($5::timestamptz IS NULL OR created_at < $5)
ORDER BY id DESC
LIMIT $7;
