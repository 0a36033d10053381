-- How an attempt that did not complete ends: failed by its handler, or swept when its lease
-- expired. Retried after a backoff while attempts remain, else dead (and dead-lettered); a
-- handler may also discard its job (dead at once) or snooze it (pending again, later, its
-- attempt not spent); a job whose cancel was asked for ends cancelled. Completions are in
-- claim.sql, written with the worker's next claim.
--
--   retry_or_dead(ids, tokens, errors, error, now, notify, wake_all, discard, snooze_ms)
--     → the jobs it changed

-- Retry or dead, the one place an attempt that did not complete is decided, for a failure
-- reported by a worker (fenced here by its lease token) and for a lease that expired
-- (p_tokens NULL: the sweeper has locked the rows). Each job still active leaves it:
-- - snoozed (p_snooze_ms[i] given): pending again after that many ms, the attempt given
--   back, nothing added to its error history;
-- - attempts left: pending again, due after the queue's backoff (backoff.sql);
-- - attempts spent, or discarded (p_discard[i]): dead, finished, and sent to the queue's
--   dead-letter queue as a new job in the same transaction (its id, queue, data, key,
--   attempts and errors);
-- in every case its slot is freed (the trigger of slots.sql); unless snoozed, an entry is
-- appended to its error history: the error given (p_errors[i], else p_error) with the
-- attempt, start and end times and the worker. Wakes the dead-letter queues that got a job, and the queues
-- jobs left: all of them with p_wake_all (a swept job may be due at once), else only those
-- whose claimers wait for a slot or a key's room (a retried job is due later). Announces
-- the ends (failed, dead, cancelled; events.sql) and releases the children of jobs ended
-- dead or cancelled (flow.sql).
CREATE OR REPLACE FUNCTION :SCHEMA.retry_or_dead(
  p_ids bigint[], p_tokens uuid[], p_errors jsonb[], p_error jsonb, p_now timestamptz,
  p_notify boolean, p_wake_all boolean, p_discard boolean[] DEFAULT NULL, p_snooze_ms integer[] DEFAULT NULL)
RETURNS SETOF :SCHEMA.job LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_rows :SCHEMA.job[];
  v_ids bigint[];
  v_queues text[];
  v_events text[];
  v_parents bigint[];
BEGIN
  WITH input AS (
    SELECT * FROM unnest(p_ids, p_tokens, p_errors, p_discard, p_snooze_ms) AS c(id, token, error, discard, snooze_ms)
  ), failed AS (
    UPDATE :SCHEMA.job j
    SET state = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                     WHEN c.snooze_ms IS NOT NULL THEN 'pending'
                     WHEN c.discard OR j.attempts >= j.max_attempts THEN 'dead'
                     ELSE 'pending' END:::SCHEMA.job_state,
        attempts = CASE WHEN c.snooze_ms IS NOT NULL AND j.cancel_requested_at IS NULL THEN greatest(j.attempts - 1, 0) ELSE j.attempts END,
        run_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.run_at
                      WHEN c.snooze_ms IS NOT NULL THEN v_now + c.snooze_ms * interval '1 millisecond'
                      WHEN c.discard OR j.attempts >= j.max_attempts THEN j.run_at
                      ELSE v_now + :SCHEMA.backoff_ms(q.backoff_base_ms, q.backoff_max_ms, q.backoff_jitter, j.attempts) * interval '1 millisecond'
                 END,
        finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL
                             OR (c.snooze_ms IS NULL AND (c.discard OR j.attempts >= j.max_attempts)) THEN v_now END,
        errors = CASE WHEN c.snooze_ms IS NOT NULL AND j.cancel_requested_at IS NULL THEN j.errors
                      ELSE j.errors || jsonb_build_array(coalesce(c.error, p_error) || jsonb_build_object(
                             'attempt', j.attempts, 'startedAt', j.started_at, 'finishedAt', v_now, 'workerId', j.worker_id))
                 END,
        lease_token = NULL, lease_expires_at = NULL
    FROM input c, :SCHEMA.queue q
    WHERE j.id = c.id AND (c.token IS NULL OR j.lease_token = c.token) AND j.state::text IN ('active', 'claimed') AND q.name = j.queue
    RETURNING j.*
  ), dead_lettered AS (
    INSERT INTO :SCHEMA.job (queue, data, max_attempts, run_at, created_at, trace_context)
    SELECT dq.name,
           jsonb_build_object('jobId', d.id::text, 'queue', d.queue, 'data', d.data, 'key', d.key,
                              'attempts', d.attempts, 'errors', d.errors),
           -- The letter's handler continues the failed job's trace.
           dq.max_attempts, d.finished_at, d.finished_at, d.trace_context
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
  SELECT coalesce(array_agg(ROW(f.*):::SCHEMA.job), '{}') INTO v_rows
  FROM failed f, (SELECT count(*) FROM woken) w;

  -- Announced (a snooze is not an end), and the children of jobs ended dead or cancelled
  -- released (events.sql, flow.sql).
  SELECT coalesce(array_agg(r.id) FILTER (WHERE e.event IS NOT NULL), '{}'),
         coalesce(array_agg(r.queue) FILTER (WHERE e.event IS NOT NULL), '{}'),
         coalesce(array_agg(e.event) FILTER (WHERE e.event IS NOT NULL), '{}'),
         coalesce(array_agg(r.id) FILTER (WHERE r.has_children AND r.state IN ('dead', 'cancelled')), '{}')
  INTO v_ids, v_queues, v_events, v_parents
  FROM unnest(v_rows) r
  LEFT JOIN unnest(p_ids, p_snooze_ms) AS c(id, snooze_ms) ON c.id = r.id
  CROSS JOIN LATERAL (SELECT CASE WHEN r.state = 'cancelled' THEN 'cancelled' WHEN r.state = 'dead' THEN 'dead'
                                  WHEN c.snooze_ms IS NULL THEN 'failed' END AS event) e;
  IF cardinality(v_ids) > 0 OR cardinality(v_parents) > 0 THEN
    PERFORM :SCHEMA.job_ends(v_ids, v_queues, v_events, v_parents, v_now, p_notify);
  END IF;
  -- The library sends this statement on its own; a dead letter's queue counts too (durability.sql).
  PERFORM :SCHEMA.commit_as(ARRAY(
    SELECT r.queue FROM unnest(v_rows) r
    UNION SELECT q.dead_letter_queue FROM unnest(v_rows) r JOIN :SCHEMA.queue q ON q.name = r.queue
          WHERE r.state = 'dead' AND q.dead_letter_queue IS NOT NULL), true);
  RETURN QUERY SELECT * FROM unnest(v_rows);
END $$;
