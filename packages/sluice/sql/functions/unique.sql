-- Singleton keys held over a period, and debounced sends.
--
--   singleton_holder(queue, key, now) → the id of the job holding the key, or NULL
--   lock_singletons(queue, keys) → takes the send locks of the keys' buckets, in order
--   send_unique(period_ms, <the arguments of send>) → (id, deduplicated)
--   send_debounced(debounce key, delay_ms, max_delay_ms, <the arguments of send but
--                  singleton key, run_at and delay>) → (id, deduplicated)
--
-- A singleton key (send.sql) is held by its queue's job that is pending or active; a job
-- sent with a period (send_unique) also holds it once it has completed, until its creation
-- plus the period (`singleton_until`). A job that ended dead or cancelled holds nothing.
-- Every send with the key, with a period or without (send, send_many, send_unique), is
-- answered the holder's id with `deduplicated` and writes nothing. The period is the one
-- of the send that created the job. Retention keeps a completed job while it holds its key.
--
-- Exact across processes: a send that finds no holder takes its key's transaction lock
-- (lock_singletons) and looks again in a fresh snapshot, so it sees the job of every send
-- of the key before it, committed, whatever that job's state is now. The unique index
-- job_singleton_idx alone would not do: an insert waiting on a concurrent one goes ahead
-- if that job has completed by the time the wait ends, and a batch's statement snapshot
-- cannot see the job it waited on. The index still guards inserts that take no lock
-- (replays; send.sql's loop).
--
-- The locks are buckets, 256 per queue, so a batch of 10,000 keys takes at most 256 and
-- never fills the server's lock table. Two keys sharing a bucket wait on each other only
-- while a sending transaction is open.
--
-- A debounced job (send_debounced) runs `delay_ms` after the last of the sends with its
-- debounce key, with that send's data:
--
--   send ──► pending, run_at = now + delay ──(a send with the key)──► same job: data replaced,
--                   │                          run_at = least(now + delay, created_at + max_delay)
--                   └──(claimed)──► active: the key is free; the next send creates a new job
--
-- "Not started" is pending with no attempt spent: a job waiting for a retry keeps the data
-- its attempts ran with, and a send makes a new job. Only the data and the run time are
-- replaced; the other options stay those of the first send. Sends with one debounce key
-- are serialized by a transaction lock, then look in a fresh snapshot; a claim taking the
-- job meanwhile holds its row, so the replacing update waits for it, finds it active and
-- matches nothing, and a new job is sent. Lock namespaces (send.sql lists the others):
--   (hashtext(':SCHEMA_NAME.singleton'), hashtext(queue/bucket of the key))
--   (hashtext(':SCHEMA_NAME.debounce'), hashtext(queue/debounce key))

CREATE OR REPLACE FUNCTION :SCHEMA.singleton_holder(p_queue text, p_key text, p_now timestamptz)
RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT coalesce(
    (SELECT j.id FROM :SCHEMA.job j
     WHERE j.queue = p_queue AND j.singleton_key = p_key AND j.state IN ('pending', 'active', 'claimed')),
    (SELECT j.id FROM :SCHEMA.job j
     WHERE j.queue = p_queue AND j.singleton_key = p_key AND j.singleton_until IS NOT NULL
       AND j.singleton_until > coalesce(p_now, now()) AND j.state = 'completed'
     ORDER BY j.id DESC LIMIT 1))
$$;

CREATE OR REPLACE FUNCTION :SCHEMA.lock_singletons(p_queue text, p_keys text[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_bucket integer;
BEGIN
  -- In one order, so that two batches cannot each hold a bucket the other waits for.
  FOR v_bucket IN SELECT DISTINCT hashtext(p_queue || '/' || (hashtext(k) & 255)) FROM unnest(p_keys) k ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.singleton'), v_bucket);
  END LOOP;
END $$;

CREATE OR REPLACE FUNCTION :SCHEMA.send_unique(
  p_period_ms double precision,
  p_queue text, p_data jsonb, p_key text, p_singleton_key text, p_run_at timestamptz,
  p_delay_ms double precision, p_priority integer, p_max_attempts integer,
  p_now timestamptz, p_notify boolean, p_cost integer, p_timeout_ms integer, p_trace_context jsonb,
  OUT id bigint, OUT deduplicated boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  SELECT s.id, s.deduplicated INTO id, deduplicated
  FROM :SCHEMA.send(p_queue => p_queue, p_data => p_data, p_key => p_key, p_singleton_key => p_singleton_key,
                    p_run_at => p_run_at, p_delay_ms => p_delay_ms, p_priority => p_priority,
                    p_max_attempts => p_max_attempts, p_now => p_now, p_notify => p_notify, p_cost => p_cost,
                    p_timeout_ms => p_timeout_ms, p_trace_context => p_trace_context) s;
  IF NOT deduplicated THEN
    -- In the inserting transaction: no snapshot ever sees the job without its period.
    UPDATE :SCHEMA.job j SET singleton_until = j.created_at + p_period_ms * interval '1 millisecond'
    WHERE j.id = send_unique.id;
  END IF;
END $$;

CREATE OR REPLACE FUNCTION :SCHEMA.send_debounced(
  p_debounce_key text, p_delay_ms double precision, p_max_delay_ms double precision,
  p_queue text, p_data jsonb, p_key text, p_priority integer, p_max_attempts integer,
  p_now timestamptz, p_notify boolean, p_cost integer, p_timeout_ms integer, p_trace_context jsonb,
  OUT id bigint, OUT deduplicated boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  v_run_at timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.debounce'), hashtext(p_queue || '/' || p_debounce_key));
  -- After the lock: a send that waited for it runs after the one before, on the clock too.
  v_now := coalesce(p_now, clock_timestamp());
  UPDATE :SCHEMA.job j
  SET data = p_data,
      run_at = CASE WHEN p_max_delay_ms IS NULL THEN v_now + p_delay_ms * interval '1 millisecond'
                    ELSE least(v_now + p_delay_ms * interval '1 millisecond', j.created_at + p_max_delay_ms * interval '1 millisecond') END
  WHERE j.id = (SELECT d.id FROM :SCHEMA.job d
                WHERE d.queue = p_queue AND d.debounce_key = p_debounce_key AND d.state = 'pending' AND d.attempts = 0
                ORDER BY d.id DESC LIMIT 1)
    -- Checked again on the row a concurrent claim may have changed.
    AND j.state = 'pending' AND j.attempts = 0
  RETURNING j.id, j.run_at INTO id, v_run_at;
  IF id IS NOT NULL THEN
    deduplicated := true;
    IF p_notify AND v_run_at <= v_now THEN
      PERFORM pg_notify(':CHANNEL', p_queue);
    END IF;
    RETURN;
  END IF;

  SELECT s.id, s.deduplicated INTO id, deduplicated
  FROM :SCHEMA.send(p_queue => p_queue, p_data => p_data, p_key => p_key, p_singleton_key => NULL,
                    p_run_at => v_now + p_delay_ms * interval '1 millisecond', p_delay_ms => NULL,
                    p_priority => p_priority, p_max_attempts => p_max_attempts, p_now => p_now,
                    p_notify => p_notify, p_cost => p_cost, p_timeout_ms => p_timeout_ms,
                    p_trace_context => p_trace_context) s;
  UPDATE :SCHEMA.job j SET debounce_key = p_debounce_key WHERE j.id = send_debounced.id;
END $$;
