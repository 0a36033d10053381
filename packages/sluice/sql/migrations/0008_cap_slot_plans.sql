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
--
-- Slot hand-over: a fused completion passes its capped jobs' slots straight to its claim.
--
-- complete_and_claim used to free every slot of the jobs it completed and then let its
-- claim take free slots again: per job, a slot row freed, locked and assigned — three
-- row writes, and a scan of the queue's slots to find the free ones. The slots of this
-- queue's completed jobs are now handed to the claim (`p_in_hand`): it assigns them to
-- the jobs it claims, one row write each, and takes more slots only for what they do
-- not cover. Exactness is unchanged: a slot in hand is already held by this transaction
-- (its row was the completed job's), so handing it over never lets more jobs hold slots
-- than there are slots. Every slot in hand that finds no job is freed in the same
-- transaction: the queue is gone, paused or uncapped now, the slot is above a cap since
-- lowered, the cap has less room left than the hand holds (held slots above the cap),
-- or fewer jobs were found. Jobs of other queues in the batch free theirs as before.
--
-- claim() gains the parameter, so it is dropped and created again (a new parameter with
-- a default would otherwise make a second, ambiguous function), with the settings above.
ALTER FUNCTION :SCHEMA.take_slots(text, integer, integer)
  SET enable_bitmapscan = off SET enable_seqscan = off SET enable_sort = off SET jit = off;
-- The claim's settings also hold for the per-key walk and picks it calls (pick_per_key,
-- key_has_ready_job), which read a key's jobs in the order of job_key_pending_idx: with
-- sorts allowed and no statistics, the planner would rather read the queue's whole ready
-- index and sort it, for one row, on every step of the walk.
DROP FUNCTION :SCHEMA.claim(text, integer, text, timestamptz, integer);

-- Frees the given slots of a queue (one primary-key lookup each, under the caller's
-- planner settings).
CREATE FUNCTION :SCHEMA.free_slots(p_queue text, p_slots integer[]) RETURNS void LANGUAGE sql AS $$
  UPDATE :SCHEMA.slot s SET job_id = NULL FROM unnest(p_slots) AS f(n) WHERE s.queue = p_queue AND s.n = f.n;
$$;

-- claim() of 0006 without the claim lock for per-key queues (0007: per-key try-locks; the
-- claim lock remains only for a capped queue with held slots above its cap), the slots it
-- assigns looked up one by one, and the slots in hand.
CREATE FUNCTION :SCHEMA.claim(
  p_queue text, p_limit integer, p_worker_id text, p_now timestamptz,
  p_ahead integer DEFAULT 0, p_in_hand integer[] DEFAULT '{}')
RETURNS SETOF :SCHEMA.job LANGUAGE plpgsql
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_sort = off SET jit = off
AS $$
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, now());
  v_ahead integer := greatest(coalesce(p_ahead, 0), 0);
  v_limit integer := p_limit + v_ahead;
  v_want integer := p_limit + 2 * v_ahead;
  v_active integer;
  v_slots integer[];
  v_ids bigint[];
  v_reuse integer[] := '{}';
BEGIN
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  IF q.name IS NULL OR q.paused OR v_limit <= 0 OR q.concurrency IS NULL THEN
    -- Nothing to hand the slots over to (or no cap any more): freed.
    IF cardinality(p_in_hand) > 0 THEN
      PERFORM :SCHEMA.free_slots(p_queue, p_in_hand);
    END IF;
    IF q.name IS NULL OR q.paused OR v_limit <= 0 THEN
      RETURN;
    END IF;
  ELSE
    -- Slots above a cap since lowered are freed, never handed over.
    v_reuse := ARRAY(SELECT u FROM unnest(p_in_hand) u WHERE u <= q.concurrency ORDER BY u);
    IF cardinality(v_reuse) < cardinality(p_in_hand) THEN
      PERFORM :SCHEMA.free_slots(p_queue, ARRAY(SELECT u FROM unnest(p_in_hand) u WHERE u > q.concurrency));
    END IF;
  END IF;

  IF q.concurrency IS NOT NULL THEN
    IF EXISTS (SELECT 1 FROM :SCHEMA.slot WHERE queue = p_queue AND n > q.concurrency AND job_id IS NOT NULL) THEN
      -- Held slots above the cap: serialize and count, until they are gone.
      PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.claim'), hashtext(p_queue));
      DELETE FROM :SCHEMA.slot WHERE queue = p_queue AND n > q.concurrency AND job_id IS NULL;
      SELECT count(*) INTO v_active FROM :SCHEMA.job WHERE queue = p_queue AND state = 'active';
      v_want := least(v_want, q.concurrency - v_active);
      -- Slots in hand count as room only up to what the cap has left.
      PERFORM :SCHEMA.free_slots(p_queue, v_reuse[greatest(v_want, 0) + 1:]);
      v_reuse := v_reuse[1:greatest(v_want, 0)];
    END IF;
    -- Jobs ahead only while the cap has room for twice as many (see 0005).
    -- The slots in hand first; more are taken only for what they do not cover.
    v_slots := v_reuse || CASE WHEN v_want > cardinality(v_reuse) THEN :SCHEMA.take_slots(p_queue, q.concurrency, v_want - cardinality(v_reuse)) ELSE '{}' END;
    IF cardinality(v_slots) < p_limit + 2 * v_ahead THEN
      v_limit := least(v_limit, p_limit);
    END IF;
    v_limit := least(v_limit, cardinality(v_slots));
    IF v_limit <= 0 THEN
      PERFORM :SCHEMA.free_slots(p_queue, v_reuse);
      RETURN;
    END IF;
  END IF;

  IF q.per_key_concurrency IS NULL THEN
    v_ids := ARRAY(
      SELECT n.id FROM :SCHEMA.job n
      WHERE n.queue = p_queue AND n.state = 'pending' AND n.run_at <= v_now
      ORDER BY n.priority DESC, n.run_at, n.id
      LIMIT v_limit
      FOR UPDATE SKIP LOCKED);
  ELSE
    v_ids := :SCHEMA.pick_per_key(q, v_limit, v_now);
  END IF;

  IF cardinality(v_reuse) > cardinality(v_ids) THEN
    -- Slots in hand beyond the jobs found (they come first in v_slots): freed.
    PERFORM :SCHEMA.free_slots(p_queue, v_reuse[cardinality(v_ids) + 1:]);
  END IF;
  IF q.concurrency IS NOT NULL AND cardinality(v_ids) > 0 THEN
    -- A primary-key lookup per slot (`n = ANY (...)` on the key's second column would
    -- be a filter over every slot of the queue).
    UPDATE :SCHEMA.slot s SET job_id = a.job_id
    FROM unnest(v_slots[1:cardinality(v_ids)], v_ids) AS a(n, job_id)
    WHERE s.queue = p_queue AND s.n = a.n;
  END IF;

  -- Rows come back in claim order (priority, then age): a worker starts them in that order.
  RETURN QUERY
  WITH claimed AS (
    UPDATE :SCHEMA.job j
    SET state = 'active', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
        lease_expires_at = v_now + q.lease_seconds * interval '1 second',
        started_at = v_now, worker_id = p_worker_id,
        slot = CASE WHEN q.concurrency IS NOT NULL THEN v_slots[array_position(v_ids, j.id)] END
    -- The rows are locked by the pick: no state to recheck. (A state condition here would
    -- also let the planner read the whole ready index to find them.)
    WHERE j.id = ANY (v_ids)
    RETURNING j.*
  )
  SELECT * FROM claimed ORDER BY priority DESC, run_at, id;
END $$;

-- A completion batch frees its slots in one statement instead of one trigger call per job
-- (the trigger cost more than the completion itself). A statement that clears `slot`
-- itself takes over freeing it; every other way out of `active` still goes through the
-- trigger.
DROP TRIGGER job_release_slot ON :SCHEMA.job;
CREATE TRIGGER job_release_slot BEFORE UPDATE OF state ON :SCHEMA.job
FOR EACH ROW WHEN (OLD.slot IS NOT NULL AND NEW.slot IS NOT NULL AND NEW.state <> 'active')
EXECUTE FUNCTION :SCHEMA.job_release_slot();

-- As in 0005, with this queue's slots handed to the claim and the other queues' freed together.
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
  v_in_hand integer[];
BEGIN
  -- state::text: see the note at the top of queries/worker.sql.
  IF EXISTS (SELECT 1 FROM :SCHEMA.queue WHERE name = p_queue AND concurrency IS NOT NULL) THEN
    -- The slot comes from the row as it was (`o`): a job whose state changed since fails
    -- the fence and keeps out of it. This queue's slots are handed to the claim below;
    -- jobs of other queues in the batch free theirs here.
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
      WHERE s.queue = d.queue AND s.n = d.slot AND s.job_id = d.id AND d.queue <> p_queue
    )
    SELECT coalesce(array_agg(done.id), '{}'),
           coalesce(array_agg(done.slot) FILTER (WHERE done.queue = p_queue AND done.slot IS NOT NULL), '{}')
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

  -- The completed ids ride on the first row only: the client parses them once.
  RETURN QUERY
  SELECT CASE WHEN row_number() OVER () = 1 THEN v_done END, to_jsonb(c) || jsonb_build_object('id', c.id::text)
  FROM :SCHEMA.claim(p_queue, p_limit, p_worker_id, p_now, p_ahead, coalesce(v_in_hand, '{}')) c;
  GET DIAGNOSTICS v_claimed = ROW_COUNT;
  IF v_claimed = 0 THEN
    RETURN QUERY SELECT v_done, NULL::jsonb;
  END IF;

  IF p_notify AND cardinality(v_done) > v_claimed THEN
    PERFORM pg_notify(':CHANNEL', q.name) FROM :SCHEMA.queue q
    WHERE q.name = p_queue AND (q.concurrency IS NOT NULL OR q.per_key_concurrency IS NOT NULL);
  END IF;
END $$;
