-- Cancels from outside, and a job given back at shutdown (src/queue/jobs.ts, src/worker/).
--
--   cancel_job(id, now) → the job, if it was waiting, pending or active
--   release_jobs(ids, tokens, now) → the ids of the jobs the tokens still held
--
-- A waiting or pending job is cancelled at once. An active one is asked to stop: it keeps
-- its lease, cap slot and key's room until its handler returns, and its worker hears of it
-- at once on the cancel channel (src/worker/executor.ts); retry_or_dead and release_jobs
-- then end it cancelled (retry.sql), a completion still completes it. Jobs that end here
-- are announced and their children released (events.sql, flow.sql).
CREATE OR REPLACE FUNCTION :SCHEMA.cancel_job(p_id bigint, p_now timestamptz)
RETURNS SETOF :SCHEMA.job LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_job :SCHEMA.job;
BEGIN
  UPDATE :SCHEMA.job
  SET state = CASE WHEN state IN ('active', 'claimed') THEN state ELSE 'cancelled' END,
      finished_at = CASE WHEN state IN ('active', 'claimed') THEN finished_at ELSE v_now END,
      waiting_parents = NULL,
      cancel_requested_at = coalesce(cancel_requested_at, v_now)
  WHERE id = p_id AND state IN ('waiting', 'pending', 'active', 'claimed')
  RETURNING * INTO v_job;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF v_job.state IN ('active', 'claimed') THEN
    PERFORM pg_notify(':CANCEL_CHANNEL', v_job.id::text);
  ELSE
    PERFORM :SCHEMA.job_ends(ARRAY[v_job.id], ARRAY[v_job.queue], ARRAY['cancelled'],
                             CASE WHEN v_job.has_children THEN ARRAY[v_job.id] ELSE '{}' END, v_now, true);
  END IF;
  RETURN NEXT v_job;
END $$;

-- Give jobs back at shutdown without counting the interrupted attempts, in one statement
-- (a worker stopping may hold a thousand jobs ahead); a job whose cancel was asked for
-- ends cancelled instead. The caller sends the ids in ascending order, the order every
-- statement that settles a worker's jobs locks them in (src/worker/completer.ts).
CREATE OR REPLACE FUNCTION :SCHEMA.release_jobs(p_ids bigint[], p_tokens uuid[], p_now timestamptz)
RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_released bigint[];
  v_cancelled bigint[];
  v_queues text[];
  v_parents bigint[];
BEGIN
  WITH given AS (
    UPDATE :SCHEMA.job j
    SET state = CASE WHEN j.cancel_requested_at IS NULL THEN 'pending' ELSE 'cancelled' END:::SCHEMA.job_state,
        attempts = CASE WHEN j.cancel_requested_at IS NULL THEN greatest(j.attempts - 1, 0) ELSE j.attempts END,
        run_at = CASE WHEN j.cancel_requested_at IS NULL THEN v_now ELSE j.run_at END,
        finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN v_now END,
        lease_token = NULL, lease_expires_at = NULL
    FROM unnest(p_ids, p_tokens) AS r(id, token)
    WHERE j.id = r.id AND j.lease_token = r.token AND j.state::text IN ('active', 'claimed')
    RETURNING j.id, j.queue, j.state, j.has_children
  )
  SELECT coalesce(array_agg(g.id), '{}'),
         coalesce(array_agg(g.id) FILTER (WHERE g.state = 'cancelled'), '{}'),
         coalesce(array_agg(g.queue) FILTER (WHERE g.state = 'cancelled'), '{}'),
         coalesce(array_agg(g.id) FILTER (WHERE g.state = 'cancelled' AND g.has_children), '{}')
  INTO v_released, v_cancelled, v_queues, v_parents FROM given g;
  IF cardinality(v_cancelled) > 0 THEN
    PERFORM :SCHEMA.job_ends(v_cancelled, v_queues, array_fill('cancelled'::text, ARRAY[cardinality(v_cancelled)]),
                             v_parents, v_now, true);
  END IF;
  RETURN QUERY SELECT unnest(v_released);
END $$;
