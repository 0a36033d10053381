-- Jobs claimed ahead on a capped queue wait for a slot instead of holding one.
--
-- Until now a job a worker held ahead of its free local slots took a cap slot at claim
-- time, although it did not run yet. With as many local slots across the workers as the
-- cap (4 workers × 10 on a cap of 40) no job could ever be held ahead: every slot was
-- taken by a running job, each completion had to commit before its slot could be claimed
-- again, and a capped drain wrote twice as many transactions per job as an uncapped one.
--
-- Now a job claimed ahead on a capped queue is `active` with `slot = 0`: it has a lease
-- (the sweeper takes it back if its worker dies) but no slot, so it does not count
-- against the cap. It runs only once it holds a slot, taken over in one of two ways:
--
--   hand-over  a running job of the same worker completes; the worker starts the waiting
--              job at once in the slot the completed job still holds in the table, and
--              the statement that writes the completion moves the slot to it. Until then
--              the table counts the completed job in that slot: the count of slots held
--              never falls below the handlers running, so the cap stays exact.
--   promotion  the worker has a free local slot and nothing to hand over (a job failed,
--              the cap was raised): its next statement asks for a free slot for the
--              waiting job, and the worker starts it when the answer says it got one.
--
--   claimed ahead (slot 0) ──hand-over / promotion──▶ running (slot n) ──leaves active──▶ slot freed
--
-- A move is fenced by the waiting job's lease token and needs `slot = 0`: a job swept,
-- cancelled or released meanwhile is not moved, and the slot in hand goes on to the claim
-- (or is freed). If a started job cannot be moved (the job whose slot it took had lost
-- its lease, so the slot was not in hand, and no other slot is free) its worker stops it
-- and fails the attempt, as if its lease had run out. On a queue without a cap (since
-- lifted) a move just clears the 0.
--
-- Jobs ahead are granted only when every free local slot got a slot: a worker that finds
-- the cap full holds nothing it cannot start. None are granted while slots above the cap
-- are held (it was just lowered): the jobs already waiting may still take over slots
-- above it — one for one, so the count does not grow, and no running job is stopped
-- because an operator lowered a cap — but nothing new will, and the slots above the cap
-- are freed as their last jobs end. While such slots remain, moves take no free slots
-- (the claims that do must count, under the claim lock; see 0006). The `active` count of a capped queue now
-- includes the jobs claimed ahead; jobs holding slots are those with `slot <> 0`.

-- Slots for jobs waiting with slot 0, in the order given: slots in hand (released by this
-- worker's completions in the same transaction) first, then free slots under the cap.
-- Returns the ids that now hold slots and the slots in hand left over (still held by
-- this transaction, for the caller to hand to its claim or free).
CREATE FUNCTION :SCHEMA.take_over_slots(
  p_queue text, p_in_hand integer[], p_ids bigint[], p_tokens uuid[],
  OUT moved bigint[], OUT left_over integer[])
LANGUAGE plpgsql
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_sort = off SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  q :SCHEMA.queue;
  v_waiting bigint[];
  v_slots integer[];
  v_n integer;
BEGIN
  moved := '{}';
  left_over := coalesce(p_in_hand, '{}');
  IF cardinality(p_ids) = 0 THEN
    RETURN;
  END IF;
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  -- Still waiting, in the order asked (the jobs already started come first). Locked, and
  -- checked once locked: a job that another transaction is completing right now (it ended
  -- before its move was written, and its completion went on its own) is then seen
  -- completed and left alone, instead of being handed a slot after it is gone.
  v_waiting := ARRAY(
    SELECT j.id FROM unnest(p_ids, p_tokens) WITH ORDINALITY AS w(id, token, pos)
    JOIN :SCHEMA.job j ON j.id = w.id
    WHERE j.lease_token = w.token AND j.state::text = 'active' AND j.slot = 0
    ORDER BY w.pos
    FOR UPDATE OF j);
  IF cardinality(v_waiting) = 0 THEN
    RETURN;
  END IF;
  IF q.concurrency IS NULL THEN
    -- No cap (any more): nothing to wait for.
    UPDATE :SCHEMA.job SET slot = NULL WHERE id = ANY (v_waiting);
    moved := v_waiting;
    RETURN;
  END IF;
  -- Slots in hand first, those under the cap before any above it (a lowered cap): a slot
  -- above it is passed on only to a job already waiting, never taken anew.
  v_slots := ARRAY(SELECT u FROM unnest(left_over) u ORDER BY u);
  IF cardinality(v_slots) < cardinality(v_waiting)
     AND NOT EXISTS (SELECT 1 FROM :SCHEMA.slot WHERE queue = p_queue AND n > q.concurrency AND job_id IS NOT NULL) THEN
    v_slots := v_slots || :SCHEMA.take_slots(p_queue, q.concurrency, cardinality(v_waiting) - cardinality(v_slots));
  END IF;
  v_n := least(cardinality(v_slots), cardinality(v_waiting));
  IF v_n = 0 THEN
    RETURN;
  END IF;
  UPDATE :SCHEMA.slot s SET job_id = a.job_id
  FROM unnest(v_slots[1:v_n], v_waiting[1:v_n]) AS a(n, job_id)
  WHERE s.queue = p_queue AND s.n = a.n;
  UPDATE :SCHEMA.job j SET slot = a.n
  FROM unnest(v_slots[1:v_n], v_waiting[1:v_n]) AS a(n, job_id)
  WHERE j.id = a.job_id;
  moved := v_waiting[1:v_n];
  left_over := ARRAY(SELECT u FROM unnest(left_over) u WHERE u <> ALL (v_slots[1:v_n]));
END $$;

-- claim() of 0008 with jobs ahead on a capped queue claimed with slot 0, and granted only
-- when every free local slot got a slot.
CREATE OR REPLACE FUNCTION :SCHEMA.claim(
  p_queue text, p_limit integer, p_worker_id text, p_now timestamptz,
  p_ahead integer DEFAULT 0, p_in_hand integer[] DEFAULT '{}')
RETURNS SETOF :SCHEMA.job LANGUAGE plpgsql
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_sort = off SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, now());
  v_ahead integer := greatest(coalesce(p_ahead, 0), 0);
  v_limit integer := greatest(p_limit, 0) + v_ahead;
  v_want integer := greatest(p_limit, 0);
  v_active integer;
  v_slots integer[] := '{}';
  v_ids bigint[];
  v_reuse integer[] := '{}';
  v_slotted integer;
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
      -- Held slots above the cap: serialize and count, until they are gone. Jobs waiting
      -- with slot 0 hold none.
      PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.claim'), hashtext(p_queue));
      DELETE FROM :SCHEMA.slot WHERE queue = p_queue AND n > q.concurrency AND job_id IS NULL;
      SELECT count(*) INTO v_active FROM :SCHEMA.job
      WHERE queue = p_queue AND state = 'active' AND slot IS DISTINCT FROM 0;
      -- Slots in hand count as room only up to what the cap has left (the rest are freed
      -- below, with those beyond the free local slots).
      v_want := least(v_want, q.concurrency - v_active);
      -- No jobs ahead: they would keep the slots above the cap in use.
      v_limit := least(v_limit, greatest(v_want, 0));
    END IF;
    -- The slots in hand first; more are taken only for what they do not cover. Slots
    -- only for the free local slots: jobs ahead wait with slot 0.
    IF cardinality(v_reuse) > greatest(v_want, 0) THEN
      PERFORM :SCHEMA.free_slots(p_queue, v_reuse[greatest(v_want, 0) + 1:]);
      v_reuse := v_reuse[1:greatest(v_want, 0)];
    END IF;
    v_slots := v_reuse || CASE WHEN v_want > cardinality(v_reuse) THEN :SCHEMA.take_slots(p_queue, q.concurrency, v_want - cardinality(v_reuse)) ELSE '{}' END;
    IF cardinality(v_slots) < p_limit THEN
      -- The cap is full: no jobs ahead of what can start.
      v_limit := cardinality(v_slots);
    END IF;
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

  v_slotted := least(cardinality(v_slots), cardinality(v_ids));
  IF cardinality(v_reuse) > v_slotted THEN
    -- Slots in hand beyond the jobs found (they come first in v_slots): freed.
    PERFORM :SCHEMA.free_slots(p_queue, v_reuse[v_slotted + 1:]);
  END IF;
  IF q.concurrency IS NOT NULL AND v_slotted > 0 THEN
    -- A primary-key lookup per slot (`n = ANY (...)` on the key's second column would
    -- be a filter over every slot of the queue).
    UPDATE :SCHEMA.slot s SET job_id = a.job_id
    FROM unnest(v_slots[1:v_slotted], v_ids[1:v_slotted]) AS a(n, job_id)
    WHERE s.queue = p_queue AND s.n = a.n;
  END IF;

  -- Rows come back in claim order (priority, then age): a worker starts them in that order.
  -- The first jobs in that order get the slots; the rest of a capped queue's wait with 0.
  RETURN QUERY
  WITH claimed AS (
    UPDATE :SCHEMA.job j
    SET state = 'active', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
        lease_expires_at = v_now + q.lease_seconds * interval '1 second',
        started_at = v_now, worker_id = p_worker_id,
        slot = CASE WHEN q.concurrency IS NOT NULL THEN coalesce(v_slots[array_position(v_ids[1:v_slotted], j.id)], 0) END
    -- The rows are locked by the pick: no state to recheck. (A state condition here would
    -- also let the planner read the whole ready index to find them.)
    WHERE j.id = ANY (v_ids)
    RETURNING j.*
  )
  SELECT * FROM claimed ORDER BY priority DESC, run_at, id;
END $$;

-- complete_and_claim() of 0008 with moves: jobs of this worker waiting with slot 0 that
-- take over the slots of the completed jobs (already started by hand-over), or free
-- slots (promotion), before the claim gets what is left. The moved ids ride on the first
-- row with the completed ids. A batch without moves behaves as before.
DROP FUNCTION :SCHEMA.complete_and_claim(bigint[], uuid[], jsonb[], timestamptz, boolean, text, integer, text, integer);
CREATE FUNCTION :SCHEMA.complete_and_claim(
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
