-- Dead letters (src/queue/dead-letters.ts). One filter everywhere: $1 queue, $2 text in
-- any attempt's error message (case-insensitive), $3 died at or after, $4 died before.
-- NULL means "any".

-- name: DeadList
-- Newest first; page with $5 = the smallest id of the previous page.
SELECT * FROM :SCHEMA.job j
WHERE j.state = 'dead'
  AND ($1::text IS NULL OR j.queue = $1)
  AND ($2::text IS NULL OR EXISTS (
        SELECT 1 FROM jsonb_array_elements(j.errors) e
        WHERE strpos(lower(e->>'message'), lower($2)) > 0))
  AND ($3::timestamptz IS NULL OR j.finished_at >= $3)
  AND ($4::timestamptz IS NULL OR j.finished_at < $4)
  AND ($5::bigint IS NULL OR j.id < $5)
ORDER BY j.id DESC
LIMIT $6;

-- name: DeadCount
SELECT count(*)::integer AS n FROM :SCHEMA.job j
WHERE j.state = 'dead'
  AND ($1::text IS NULL OR j.queue = $1)
  AND ($2::text IS NULL OR EXISTS (
        SELECT 1 FROM jsonb_array_elements(j.errors) e
        WHERE strpos(lower(e->>'message'), lower($2)) > 0))
  AND ($3::timestamptz IS NULL OR j.finished_at >= $3)
  AND ($4::timestamptz IS NULL OR j.finished_at < $4);

-- name: DeadReplayBatch
-- Replay the next batch (ids above $5, in id order) back to pending, attempts reset,
-- history kept. A job whose singleton key is taken by an unfinished job (or by an
-- earlier job of the same batch) stays dead; the caller counts it as skipped.
WITH candidates AS (
  SELECT j.id, j.queue, j.singleton_key FROM :SCHEMA.job j
  WHERE j.state = 'dead'
    AND ($1::text IS NULL OR j.queue = $1)
    AND ($2::text IS NULL OR EXISTS (
          SELECT 1 FROM jsonb_array_elements(j.errors) e
          WHERE strpos(lower(e->>'message'), lower($2)) > 0))
    AND ($3::timestamptz IS NULL OR j.finished_at >= $3)
    AND ($4::timestamptz IS NULL OR j.finished_at < $4)
    AND j.id > $5
  ORDER BY j.id
  LIMIT $6
  FOR UPDATE SKIP LOCKED
), ranked AS (
  SELECT c.*, row_number() OVER (PARTITION BY c.queue, c.singleton_key ORDER BY c.id) AS rn FROM candidates c
), replayed AS (
  UPDATE :SCHEMA.job j
  SET state = 'pending', attempts = 0, run_at = coalesce($7::timestamptz, now()),
      finished_at = NULL, started_at = NULL, result = NULL,
      lease_token = NULL, lease_expires_at = NULL, worker_id = NULL
  FROM ranked r
  WHERE j.id = r.id
    AND (r.singleton_key IS NULL OR (r.rn = 1 AND NOT EXISTS (
          SELECT 1 FROM :SCHEMA.job o
          WHERE o.queue = r.queue AND o.singleton_key = r.singleton_key AND o.state IN ('pending', 'active', 'claimed'))))
  RETURNING j.id, j.queue
), woken AS (
  SELECT pg_notify(':CHANNEL', q.queue) FROM (SELECT DISTINCT queue FROM replayed) q WHERE $8::boolean
)
SELECT (SELECT count(*) FROM candidates)::integer AS scanned,
       (SELECT count(*) FROM replayed)::integer AS replayed,
       (SELECT max(id) FROM candidates) AS last_id,
       (SELECT count(*) FROM woken)::integer AS woken;

-- name: DeadPurgeBatch
-- Delete the next batch of matching dead jobs.
DELETE FROM :SCHEMA.job
WHERE id IN (
  SELECT j.id FROM :SCHEMA.job j
  WHERE j.state = 'dead'
    AND ($1::text IS NULL OR j.queue = $1)
    AND ($2::text IS NULL OR EXISTS (
          SELECT 1 FROM jsonb_array_elements(j.errors) e
          WHERE strpos(lower(e->>'message'), lower($2)) > 0))
    AND ($3::timestamptz IS NULL OR j.finished_at >= $3)
    AND ($4::timestamptz IS NULL OR j.finished_at < $4)
  ORDER BY j.id
  LIMIT $5
  FOR UPDATE SKIP LOCKED
)
RETURNING id;
