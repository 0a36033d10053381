-- Moves lock the jobs they move in id order, like every batch of results.
--
-- A job started by hand-over may end before its move is written; its completion (or
-- failure) is then written by the worker's next flush, which can run while the statement
-- carrying the move is still in flight. Both lock the same job rows: the move in the
-- order the jobs were handed over (0011), the flush in the order the jobs ended. With two
-- such jobs locked in opposite orders the two statements deadlocked, and PostgreSQL broke
-- the tie by aborting one (retried, nothing lost, but a second's wait and a wasted
-- claim). Moves now lock their jobs in id order, and the worker sends every batch of
-- completions and failures in id order, so any two of these statements take their
-- common rows in the same order. Slots are still given in the order asked.

CREATE OR REPLACE FUNCTION :SCHEMA.take_over_slots(
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
  -- Still waiting, in the order asked (the jobs already started come first). Locked in
  -- id order, and checked once locked: a job that another transaction is completing right
  -- now (it ended before its move was written, and its completion went on its own) is
  -- then seen completed and left alone, instead of being handed a slot after it is gone.
  -- The rows come from the primary key in id order (`id = ANY`), so they are locked in
  -- that order without a sort: ordered by the join alone, with sorts priced out, the
  -- planner would read the whole primary key in order instead.
  v_waiting := ARRAY(
    SELECT l.id FROM (
      SELECT j.id, w.pos FROM :SCHEMA.job j
      JOIN unnest(p_ids, p_tokens) WITH ORDINALITY AS w(id, token, pos) ON w.id = j.id
      WHERE j.id = ANY (p_ids) AND j.lease_token = w.token AND j.state::text = 'active' AND j.slot = 0
      ORDER BY j.id
      FOR UPDATE OF j) l
    ORDER BY l.pos);
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
