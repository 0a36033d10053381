-- Cancels from outside, and a job given back at shutdown (src/queue/jobs.ts, src/worker/).
--
--   cancel_job(id, now) → the job, if it was waiting, pending or active
--   release_job(id, token, now) → the job's id, if the token still held it
--
-- A waiting or pending job is cancelled at once. An active one is asked to stop: it keeps
-- its lease, cap slot and key's room until its handler returns, and its worker hears of it
-- at once on the cancel channel (src/worker/executor.ts); retry_or_dead and release_job
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

-- Give a job back at shutdown without counting the interrupted attempt; a job whose cancel
-- was asked for ends cancelled instead.
CREATE OR REPLACE FUNCTION :SCHEMA.release_job(p_id bigint, p_token uuid, p_now timestamptz)
RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_job :SCHEMA.job;
BEGIN
  UPDATE :SCHEMA.job
  SET state = CASE WHEN cancel_requested_at IS NULL THEN 'pending' ELSE 'cancelled' END:::SCHEMA.job_state,
      attempts = CASE WHEN cancel_requested_at IS NULL THEN greatest(attempts - 1, 0) ELSE attempts END,
      run_at = CASE WHEN cancel_requested_at IS NULL THEN v_now ELSE run_at END,
      finished_at = CASE WHEN cancel_requested_at IS NOT NULL THEN v_now END,
      lease_token = NULL, lease_expires_at = NULL
  WHERE id = p_id AND lease_token = p_token AND state IN ('active', 'claimed')
  RETURNING * INTO v_job;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF v_job.state = 'cancelled' THEN
    PERFORM :SCHEMA.job_ends(ARRAY[v_job.id], ARRAY[v_job.queue], ARRAY['cancelled'],
                             CASE WHEN v_job.has_children THEN ARRAY[v_job.id] ELSE '{}' END, v_now, true);
  END IF;
  RETURN NEXT v_job.id;
END $$;
