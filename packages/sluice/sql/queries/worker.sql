-- The worker's hot path (src/worker/). Every state change is fenced by the lease token:
-- a worker whose lease was swept matches no row and changes nothing.
--
-- The batch statements test `state::text = 'active'`, not `state = 'active'`: the plain
-- form matches the predicate of the partial index job_active_idx, and with stale
-- statistics the planner then reads that whole index (every dead entry of every job
-- claimed since the last vacuum) instead of looking the ids up by primary key.

-- name: JobClaim
-- values: queue, limit, workerId, now, ahead, reportIds, reportTokens, reportAgesMs
-- @ahead: jobs wanted ahead of free slots (granted only with room to spare on a capped queue).
-- On a queue without caps it commits without waiting for its WAL flush (lone_claim, sql/functions/claim.sql).
-- @reportIds, @reportTokens, @reportAgesMs: the worker's report of when its handlers began
-- (report_starts, sql/functions/rate.sql), written first; NULL for a pull worker, whose
-- starts are recorded as it claims.
-- Each job as a `json` array (claimed_json, sql/functions/claim.sql).
SELECT :SCHEMA.claimed_json(c, r.now) AS job
FROM :SCHEMA.report_starts(@reportIds::bigint[], @reportTokens::uuid[], @reportAgesMs::integer[], @now::timestamptz, true) r(now),
LATERAL :SCHEMA.lone_claim(p_queue => @queue, p_limit => @limit, p_worker_id => @workerId, p_now => r.now, p_ahead => @ahead) c;

-- name: JobCompleteMany
-- values: ids, tokens, results, now, notify, reportIds, reportTokens, reportAgesMs
-- Completions fenced by their lease tokens (complete_many, sql/functions/claim.sql), after
-- the report of when handlers began that rides on them (as for JobClaim).
SELECT c.id, c.queue
FROM :SCHEMA.report_starts(@reportIds::bigint[], @reportTokens::uuid[], @reportAgesMs::integer[], @now::timestamptz, false,
                           @ids::bigint[]) r(now),
LATERAL :SCHEMA.complete_many(p_ids => @ids, p_tokens => @tokens, p_results => @results, p_now => r.now, p_notify => @notify) c;

-- name: JobFailMany
-- Failures reported by workers, fenced by their lease tokens: retried or dead (retry_or_dead,
-- sql/functions/retry.sql), each with its error appended to the job's history; $6 discards
-- (dead at once), $7 snoozes (ms; pending again without spending the attempt).
SELECT * FROM :SCHEMA.retry_or_dead($1::bigint[], $2::uuid[], $3::jsonb[], NULL, $4::timestamptz, $5::boolean, false,
                                    $6::boolean[], $7::integer[]);

-- name: JobRelease
-- Give jobs back at shutdown, ids ascending (release_jobs, sql/functions/cancel.sql).
SELECT id FROM :SCHEMA.release_jobs($1::bigint[], $2::uuid[], $3::timestamptz) AS r(id);

-- name: JobHeartbeat
-- Extend the lease by $3 seconds, or by the queue's lease when $3 is NULL; says whether a
-- cancel was asked for.
UPDATE :SCHEMA.job j
SET lease_expires_at = coalesce($4::timestamptz, now()) + coalesce($3::integer, q.lease_seconds) * interval '1 second'
FROM :SCHEMA.queue q
WHERE j.id = $1 AND j.lease_token = $2 AND j.state IN ('active', 'claimed') AND q.name = j.queue
RETURNING j.lease_expires_at, j.cancel_requested_at IS NOT NULL AS cancel_requested;

-- name: JobHeartbeatMany
-- The worker's own heartbeats (src/worker/heartbeats.ts): each job's lease extended by its
-- queue's lease. A job missing from the answer lost its lease; `cancel_requested` says a
-- cancel was asked for (a backstop for a missed notification).
UPDATE :SCHEMA.job j
SET lease_expires_at = coalesce($3::timestamptz, now()) + q.lease_seconds * interval '1 second'
FROM unnest($1::bigint[], $2::uuid[]) AS c(id, token), :SCHEMA.queue q
WHERE j.id = c.id AND j.lease_token = c.token AND j.state::text IN ('active', 'claimed') AND q.name = j.queue
RETURNING j.id, j.cancel_requested_at IS NOT NULL AS cancel_requested;

-- name: JobCancelRequested
-- Which of these running jobs (still held by these tokens) a cancel was asked for, for a
-- worker that does not renew leases itself; a job missing from the answer lost its lease.
SELECT j.id, j.cancel_requested_at IS NOT NULL AS cancel_requested
FROM unnest($1::bigint[], $2::uuid[]) AS c(id, token)
JOIN :SCHEMA.job j ON j.id = c.id AND j.lease_token = c.token AND j.state::text IN ('active', 'claimed');

-- name: JobCompleteAndClaim
-- values: ids, tokens, results, now, notify, queue, limit, workerId, ahead, moveIds, moveTokens, reportIds, reportTokens, reportAgesMs
-- One worker's completions and its next claim in one transaction (complete_and_claim, sql/functions/claim.sql),
-- with the moves of its jobs waiting for a slot (sql/functions/slots.sql), after the report of
-- when handlers began that rides on it (as for JobClaim).
SELECT c.completed, c.moved, c.job
FROM :SCHEMA.report_starts(@reportIds::bigint[], @reportTokens::uuid[], @reportAgesMs::integer[], @now::timestamptz, true,
                           @ids::bigint[] || @moveIds::bigint[]) r(now),
LATERAL :SCHEMA.complete_and_claim(
  p_ids => @ids, p_tokens => @tokens, p_results => @results, p_now => r.now, p_notify => @notify,
  p_queue => @queue, p_limit => @limit, p_worker_id => @workerId, p_ahead => @ahead,
  p_move_ids => @moveIds, p_move_tokens => @moveTokens) c;

-- name: JobCompleteAndMove
-- Completions whose slots running jobs took over, written without a claim: the slots move
-- to those jobs in the same transaction, never freed in between (complete_and_move, sql/functions/claim.sql).
SELECT completed, moved FROM :SCHEMA.complete_and_move(
  p_ids => @ids, p_tokens => @tokens, p_results => @results, p_now => @now, p_notify => @notify,
  p_queue => @queue, p_move_ids => @moveIds, p_move_tokens => @moveTokens);

-- name: JobNextStart
-- values: queue, now, reportIds, reportTokens, reportAgesMs
-- Milliseconds until the queue's rate and budget let the next job start (0: now; NULL: the
-- queue has neither), for a worker whose claim came back short (sql/functions/rate.sql), after
-- the report of when handlers began that rides on it (as for JobClaim).
SELECT :SCHEMA.next_start_ms(@queue, r.now) AS ms
FROM :SCHEMA.report_starts(@reportIds::bigint[], @reportTokens::uuid[], @reportAgesMs::integer[], @now::timestamptz, false) r(now);

-- name: JobReportCost
-- A running job's real cost, reported by its handler (fenced by its lease token): it is
-- the job's cost from now on, and what its current start counts against the budget
-- (report_cost, sql/functions/rate.sql). No row: the token no longer holds the job.
SELECT r.id FROM :SCHEMA.report_cost($1, $2, $3) r(id) WHERE r.id IS NOT NULL;
