-- Slot and per-key statements planned the way they are written, whatever the statistics say.
--
-- The slot table is small and its rows change on every claim and completion, so it often
-- has no statistics (or stale ones), and the planner then reads every slot of a queue
-- through a bitmap scan and sorts them, where an ordered primary-key scan stops after the
-- few free slots it needs: with a cap of 1,000, taking slots cost more than the rest of
-- the claim; assigning the slots turned into a hash join over all of them. The claim and
-- take_slots are planned without bitmap or sequential scans, sorts, hash or merge joins
-- (every statement in them reads a handful of rows by key), which leaves the primary-key
-- lookups the statements are written for. A plan that still has a disabled step (a sort
-- of a few array elements) is costed as if it were huge, which would make the server JIT-
-- compile it, at tens of milliseconds a statement: these functions run with JIT off.
ALTER FUNCTION :SCHEMA.take_slots(text, integer, integer)
  SET enable_bitmapscan = off SET enable_seqscan = off SET enable_sort = off SET jit = off;
-- The claim's settings also hold for the per-key walk and picks it calls (pick_per_key,
-- key_has_ready_job), which read a key's jobs in the order of job_key_pending_idx: with
-- sorts allowed and no statistics, the planner would rather read the queue's whole ready
-- index and sort it, for one row, on every step of the walk.
ALTER FUNCTION :SCHEMA.claim(text, integer, text, timestamptz, integer)
  SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
  SET enable_sort = off SET jit = off;

-- A completion batch frees its slots in one statement instead of one trigger call per job
-- (the trigger cost more than the completion itself). A statement that clears `slot`
-- itself takes over freeing it; every other way out of `active` still goes through the
-- trigger.
DROP TRIGGER job_release_slot ON :SCHEMA.job;
CREATE TRIGGER job_release_slot BEFORE UPDATE OF state ON :SCHEMA.job
FOR EACH ROW WHEN (OLD.slot IS NOT NULL AND NEW.slot IS NOT NULL AND NEW.state <> 'active')
EXECUTE FUNCTION :SCHEMA.job_release_slot();

-- As in 0005, with the slots of the completed jobs freed together.
CREATE OR REPLACE FUNCTION :SCHEMA.complete_and_claim(
  p_ids bigint[], p_tokens uuid[], p_results jsonb[], p_now timestamptz, p_notify boolean,
  p_queue text, p_limit integer, p_worker_id text, p_ahead integer DEFAULT 0)
RETURNS TABLE (completed bigint[], job jsonb) LANGUAGE plpgsql
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_done bigint[];
  v_claimed integer;
BEGIN
  -- state::text: see the note at the top of queries/worker.sql.
  IF EXISTS (SELECT 1 FROM :SCHEMA.queue WHERE name = p_queue AND concurrency IS NOT NULL) THEN
    -- The slot comes from the row as it was (`o`): a job whose state changed since fails
    -- the fence and is not freed. (Jobs of other queues in the batch free theirs the same way.)
    WITH done AS (
      UPDATE :SCHEMA.job j
      SET state = 'completed', finished_at = v_now, result = c.result,
          lease_token = NULL, lease_expires_at = NULL, slot = NULL
      FROM unnest(p_ids, p_tokens, p_results) AS c(id, token, result)
      JOIN :SCHEMA.job o ON o.id = c.id
      WHERE j.id = c.id AND j.lease_token = c.token AND j.state::text = 'active'
      RETURNING j.id, j.queue, o.slot
    ), freed AS (
      UPDATE :SCHEMA.slot s SET job_id = NULL
      FROM done d
      WHERE s.queue = d.queue AND s.n = d.slot AND s.job_id = d.id
    )
    SELECT coalesce(array_agg(done.id), '{}') INTO v_done FROM done;
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

  -- The completed ids ride on the first row only: the client parses them once.
  RETURN QUERY
  SELECT CASE WHEN row_number() OVER () = 1 THEN v_done END, to_jsonb(c) || jsonb_build_object('id', c.id::text)
  FROM :SCHEMA.claim(p_queue, p_limit, p_worker_id, p_now, p_ahead) c;
  GET DIAGNOSTICS v_claimed = ROW_COUNT;
  IF v_claimed = 0 THEN
    RETURN QUERY SELECT v_done, NULL::jsonb;
  END IF;

  IF p_notify AND cardinality(v_done) > v_claimed THEN
    PERFORM pg_notify(':CHANNEL', q.name) FROM :SCHEMA.queue q
    WHERE q.name = p_queue AND (q.concurrency IS NOT NULL OR q.per_key_concurrency IS NOT NULL);
  END IF;
END $$;
