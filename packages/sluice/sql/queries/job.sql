-- Enqueueing, reading and operator actions on jobs (src/queue/jobs.ts).
-- Admission and claim logic lives in sql/functions/send.sql and claim.sql.

-- name: JobSend
-- values: queue, data, key, singletonKey, runAt, delayMs, priority, maxAttempts, now, notify, cost, timeoutMs, traceContext, own
-- @own: true for the library's own transaction (no client of the application's) on a queue
-- this process knows as async, which then commits as the queue's row says (commit_as,
-- sql/functions/durability.sql); NULL otherwise, and the STRICT check is not called. Every
-- send below likewise. A batch and a flow call it in FROM with a boolean: once a statement.
SELECT s.id, s.deduplicated, :SCHEMA.commit_as(ARRAY[@queue::text], @own) AS async FROM :SCHEMA.send(
  p_queue => @queue, p_data => @data, p_key => @key, p_singleton_key => @singletonKey,
  p_run_at => @runAt, p_delay_ms => @delayMs, p_priority => @priority, p_max_attempts => @maxAttempts,
  p_now => @now, p_notify => @notify, p_cost => @cost, p_timeout_ms => @timeoutMs, p_trace_context => @traceContext) s;

-- name: JobSendAfter
-- values: parents, onParentFailure, queue, data, key, singletonKey, runAt, delayMs, priority, maxAttempts, now, notify, cost, timeoutMs, traceContext, own
-- A job with parents (send_after, sql/functions/flow.sql).
SELECT s.id, s.deduplicated, :SCHEMA.commit_as(ARRAY[@queue::text], @own) AS async FROM :SCHEMA.send_after(
  p_parents => @parents, p_on_parent_failure => @onParentFailure,
  p_queue => @queue, p_data => @data, p_key => @key, p_singleton_key => @singletonKey,
  p_run_at => @runAt, p_delay_ms => @delayMs, p_priority => @priority, p_max_attempts => @maxAttempts,
  p_now => @now, p_notify => @notify, p_cost => @cost, p_timeout_ms => @timeoutMs, p_trace_context => @traceContext) s;

-- name: JobSendUnique
-- values: periodMs, queue, data, key, singletonKey, runAt, delayMs, priority, maxAttempts, now, notify, cost, timeoutMs, traceContext, own
-- A job whose singleton key it holds over a period (send_unique, sql/functions/unique.sql).
SELECT s.id, s.deduplicated, :SCHEMA.commit_as(ARRAY[@queue::text], @own) AS async FROM :SCHEMA.send_unique(
  p_period_ms => @periodMs,
  p_queue => @queue, p_data => @data, p_key => @key, p_singleton_key => @singletonKey,
  p_run_at => @runAt, p_delay_ms => @delayMs, p_priority => @priority, p_max_attempts => @maxAttempts,
  p_now => @now, p_notify => @notify, p_cost => @cost, p_timeout_ms => @timeoutMs, p_trace_context => @traceContext) s;

-- name: JobSendDebounced
-- values: debounceKey, delayMs, maxDelayMs, queue, data, key, priority, maxAttempts, now, notify, cost, timeoutMs, traceContext, own
-- A debounced job (send_debounced, sql/functions/unique.sql).
SELECT s.id, s.deduplicated, :SCHEMA.commit_as(ARRAY[@queue::text], @own) AS async FROM :SCHEMA.send_debounced(
  p_debounce_key => @debounceKey, p_delay_ms => @delayMs, p_max_delay_ms => @maxDelayMs,
  p_queue => @queue, p_data => @data, p_key => @key, p_priority => @priority, p_max_attempts => @maxAttempts,
  p_now => @now, p_notify => @notify, p_cost => @cost, p_timeout_ms => @timeoutMs, p_trace_context => @traceContext) s;

-- name: JobSendMany
SELECT s.ord, s.id, s.deduplicated FROM :SCHEMA.send_many($1, $2, $3, $4, $5) s, :SCHEMA.commit_as(ARRAY[$1::text], $6) c;

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

-- name: JobPosition
-- A pending job's place in its queue's claim order (priority, then run time, then id):
-- one plus the pending jobs of its queue that come before it. NULL unless pending.
SELECT CASE WHEN j.state = 'pending' THEN (
         SELECT count(*) + 1
           FROM :SCHEMA.job o
          WHERE o.queue = j.queue AND o.state = 'pending'
            AND (o.priority > j.priority OR (o.priority = j.priority AND (o.run_at, o.id) < (j.run_at, j.id)))
       ) END AS position
FROM :SCHEMA.job j WHERE j.id = $1;

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

-- name: JobProgress
-- A running job's progress, fenced by its lease token (job_progress, sql/functions/notes.sql).
SELECT :SCHEMA.job_progress($1, $2, $3, $4, $5) AS queue;

-- name: JobLogAppend
-- A running job's log lines, fenced by its lease token (job_log_append, sql/functions/notes.sql).
SELECT :SCHEMA.job_log_append($1, $2, $3, $4, $5) AS last;

-- name: JobLogs
-- A job's log lines numbered after $2, oldest first, at most $3; with the number of lines
-- written and the first kept (the ones before it were dropped). No row: no such job.
SELECT j.log_count,
       (SELECT min(l.seq) FROM :SCHEMA.job_log l WHERE l.job_id = j.id) AS first_kept,
       coalesce((SELECT json_agg(json_build_object('seq', l.seq, 'attempt', l.attempt, 'at', l.at, 'line', l.line) ORDER BY l.seq)
                 FROM (SELECT * FROM :SCHEMA.job_log l WHERE l.job_id = j.id AND l.seq > $2 ORDER BY l.seq LIMIT $3) l),
                '[]') AS lines
FROM :SCHEMA.job j WHERE j.id = $1;

-- name: JobSendFlow
-- A flow's jobs in one statement (send_flow, sql/functions/flow.sql).
SELECT s.ord, s.id, s.deduplicated FROM :SCHEMA.send_flow($1, $2::jsonb[], $3, $4, $5) s,
  :SCHEMA.commit_as(ARRAY(SELECT DISTINCT j ->> 'queue' FROM jsonb_array_elements($1::jsonb) j), $6) c;
