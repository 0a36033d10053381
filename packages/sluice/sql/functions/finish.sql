-- How a job ends an attempt: completed (fused with the worker's next claim: one statement
-- per round trip), or failed (by its handler, or swept when its lease expired): retried
-- after a backoff while attempts remain, else dead.
--
--   complete_and_claim(ids, tokens, results, now, notify, queue, limit, worker, ahead,
--                      move_ids, move_tokens) → (completed ids, moved ids, claimed jobs)
--
-- Guarantees:
-- - Fenced: a job is completed only if it is still active under the lease token given;
--   a late result of a swept job changes nothing (its id is missing from `completed`).
-- - Slots: this queue's completed jobs hand their slots to the jobs waiting with slot 0
--   (`move_ids`, fenced by their tokens), then to the claim; the rest are freed. A
--   completion that waited for the statement moving its job into a slot keeps that slot on
--   the row, so the trigger frees it.
-- - The claim is claim()'s (claim.sql), in the same transaction.

CREATE OR REPLACE FUNCTION :SCHEMA.complete_and_claim(
  p_ids bigint[], p_tokens uuid[], p_results jsonb[], p_now timestamptz, p_notify boolean,
  p_queue text, p_limit integer, p_worker_id text, p_ahead integer,
  p_move_ids bigint[], p_move_tokens uuid[])
RETURNS TABLE (completed bigint[], moved bigint[], job jsonb) LANGUAGE plpgsql
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_done bigint[];
  v_moved bigint[] := '{}';
  v_claimed integer;
  v_in_hand integer[] := '{}';
BEGIN
  -- state::text: see the note at the top of queries/worker.sql.
  IF EXISTS (SELECT 1 FROM :SCHEMA.queue WHERE name = p_queue AND concurrency IS NOT NULL) THEN
    -- The slot comes from the row as it was (`o`): a job whose state changed since fails
    -- the fence and keeps out of it. This queue's slots are handed on below; jobs of
    -- other queues in the batch free theirs here. A job that completes while still
    -- waiting for its move (slot 0: started by hand-over, ended before the move was
    -- written) has no slot to give: the slot it ran in is its predecessor's, in hand.
    -- A slot given to the job after this statement began (its move committed while this
    -- waited for the row: `j`, the row as locked, differs from `o`) is kept on the row,
    -- so the trigger frees it (slots.sql).
    WITH done AS (
      UPDATE :SCHEMA.job j
      SET state = 'completed', finished_at = v_now, result = c.result,
          lease_token = NULL, lease_expires_at = NULL,
          slot = CASE WHEN j.slot IS DISTINCT FROM o.slot THEN j.slot END
      FROM unnest(p_ids, p_tokens, p_results) AS c(id, token, result)
      JOIN :SCHEMA.job o ON o.id = c.id
      WHERE j.id = c.id AND j.lease_token = c.token AND j.state::text = 'active'
      RETURNING j.id, j.queue, o.slot
    ), freed AS (
      UPDATE :SCHEMA.slot s SET job_id = NULL
      FROM done d
      WHERE s.queue = d.queue AND s.n = d.slot AND s.job_id = d.id AND d.queue <> p_queue
    )
    SELECT coalesce(array_agg(done.id), '{}'),
           coalesce(array_agg(done.slot) FILTER (WHERE done.queue = p_queue AND done.slot > 0), '{}')
    INTO v_done, v_in_hand FROM done;
  ELSE
    -- Uncapped: no lookup of the old row (a job that holds a slot anyway, from a cap since
    -- lifted, frees it through the trigger).
    WITH done AS (
      UPDATE :SCHEMA.job j
      SET state = 'completed', finished_at = v_now, result = c.result,
          lease_token = NULL, lease_expires_at = NULL
      FROM unnest(p_ids, p_tokens, p_results) AS c(id, token, result)
      WHERE j.id = c.id AND j.lease_token = c.token AND j.state::text = 'active'
      RETURNING j.id
    )
    SELECT coalesce(array_agg(done.id), '{}') INTO v_done FROM done;
  END IF;

  IF cardinality(p_move_ids) > 0 THEN
    SELECT t.moved, t.left_over INTO v_moved, v_in_hand
    FROM :SCHEMA.take_over_slots(p_queue, v_in_hand, p_move_ids, p_move_tokens) t;
  END IF;

  -- The completed and moved ids ride on the first row only: the client parses them once.
  RETURN QUERY
  SELECT CASE WHEN row_number() OVER () = 1 THEN v_done END,
         CASE WHEN row_number() OVER () = 1 THEN v_moved END,
         to_jsonb(c) || jsonb_build_object('id', c.id::text)
  FROM :SCHEMA.claim(p_queue, p_limit, p_worker_id, p_now, p_ahead, v_in_hand) c;
  GET DIAGNOSTICS v_claimed = ROW_COUNT;
  IF v_claimed = 0 THEN
    RETURN QUERY SELECT v_done, v_moved, NULL::jsonb;
  END IF;

  -- Slots (or key room) freed rather than passed on wake the claimers waiting on the cap:
  -- slots in hand the claim had no job for, or completions nothing took the place of.
  IF p_notify AND (cardinality(v_in_hand) > least(greatest(p_limit, 0), v_claimed)
                   OR cardinality(v_done) > v_claimed + cardinality(v_moved)) THEN
    PERFORM pg_notify(':CHANNEL', q.name) FROM :SCHEMA.queue q
    WHERE q.name = p_queue AND (q.concurrency IS NOT NULL OR q.per_key_concurrency IS NOT NULL);
  END IF;
END $$;

-- Retry or dead, the one place an attempt that did not complete is decided, for a failure
-- reported by a worker (fenced here by its lease token) and for a lease that expired
-- (p_tokens NULL: the sweeper has locked the rows). Each job still active leaves it:
-- - attempts left: pending again, due after the queue's backoff (backoff.sql);
-- - attempts spent: dead, finished, and sent to the queue's dead-letter queue as a new
--   job in the same transaction (its id, queue, data, key, attempts and errors);
-- either way its slot is freed (the trigger of slots.sql) and an entry is appended to its
-- error history: the error given (p_errors[i], else p_error) with the attempt, start and
-- end times and the worker. Wakes the dead-letter queues that got a job, and the queues
-- jobs left: all of them with p_wake_all (a swept job may be due at once), else only those
-- whose claimers wait for a slot or a key's room (a retried job is due later).
CREATE OR REPLACE FUNCTION :SCHEMA.retry_or_dead(
  p_ids bigint[], p_tokens uuid[], p_errors jsonb[], p_error jsonb, p_now timestamptz,
  p_notify boolean, p_wake_all boolean)
RETURNS SETOF :SCHEMA.job LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := coalesce(p_now, now());
BEGIN
  RETURN QUERY
  WITH input AS (
    SELECT * FROM unnest(p_ids, p_tokens, p_errors) AS c(id, token, error)
  ), failed AS (
    UPDATE :SCHEMA.job j
    SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'pending' END:::SCHEMA.job_state,
        run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at
                      ELSE v_now + :SCHEMA.backoff_ms(q.backoff_base_ms, q.backoff_max_ms, q.backoff_jitter, j.attempts) * interval '1 millisecond'
                 END,
        finished_at = CASE WHEN j.attempts >= j.max_attempts THEN v_now END,
        errors = j.errors || jsonb_build_array(coalesce(c.error, p_error) || jsonb_build_object(
                   'attempt', j.attempts, 'startedAt', j.started_at, 'finishedAt', v_now, 'workerId', j.worker_id)),
        lease_token = NULL, lease_expires_at = NULL
    FROM input c, :SCHEMA.queue q
    WHERE j.id = c.id AND (c.token IS NULL OR j.lease_token = c.token) AND j.state::text = 'active' AND q.name = j.queue
    RETURNING j.*
  ), dead_lettered AS (
    INSERT INTO :SCHEMA.job (queue, data, max_attempts, run_at, created_at)
    SELECT dq.name,
           jsonb_build_object('jobId', d.id::text, 'queue', d.queue, 'data', d.data, 'key', d.key,
                              'attempts', d.attempts, 'errors', d.errors),
           dq.max_attempts, d.finished_at, d.finished_at
    FROM failed d
    JOIN :SCHEMA.queue q ON q.name = d.queue
    JOIN :SCHEMA.queue dq ON dq.name = q.dead_letter_queue
    WHERE d.state = 'dead'
    RETURNING queue
  ), woken AS (
    SELECT pg_notify(':CHANNEL', q.name) FROM :SCHEMA.queue q
    WHERE p_notify
      AND ((q.name IN (SELECT f.queue FROM failed f)
            AND (p_wake_all OR q.concurrency IS NOT NULL OR q.per_key_concurrency IS NOT NULL))
           OR q.name IN (SELECT queue FROM dead_lettered))
  )
  SELECT f.* FROM failed f, (SELECT count(*) FROM woken) w;
END $$;
