-- Cap slots: a queue with `concurrency = N` owns slot rows 1..N, and a job is `active` on it
-- only while it holds one. Active jobs of a capped queue therefore never outnumber N,
-- exactly (`count(*) … WHERE state = 'active'` reads it so), while claimers take different
-- slots in parallel.
--
--   free (job_id NULL) ──claim / promotion──▶ held (job_id = the job) ──job leaves active──▶ free
--                         ▲
--   claimed (slot 0) ──hand-over: the slot of a job of the same worker that completed,
--                      moved in the statement writing the completion
--
-- - A job leaves `active` and frees its slot in the same transaction (the trigger below,
--   so every path does: complete, fail, sweep, cancel, release).
-- - A job claimed ahead of its worker's free local slots is `claimed`, with `slot = 0`:
--   leased (the sweeper takes it back if its worker dies) but outside the cap. It runs only
--   once it holds a slot: by hand-over (the worker starts it in the slot a completed job
--   of its own still holds in the table, and the statement writing that completion moves
--   the slot to it) or by promotion (the worker asks for a free slot for it); either makes
--   it `active`. Until a move is written the table counts the completed job in that slot,
--   so slots held never fall below handlers running. A job started by hand-over may end
--   before its move is written: it leaves `claimed` for its end, and the slot in hand goes
--   on to the next.
-- - A move is fenced by the waiting job's lease token and needs `claimed`; moves lock
--   their jobs in id order, as every batch of results does, so two statements never take
--   their common rows in opposite orders.
-- - On a queue with a rate or a budget, a move records the start its job reserved when it
--   was claimed ahead (rate.sql), unless the worker's grant covers it.
-- - Only slots 1..N are handed out. While a slot above N is still held (the cap was just
--   lowered), claims that take free slots fall back to counting under the claim lock.
--
-- Planning: the slot table is small and its rows change on every claim and completion,
-- so its statistics are often missing or stale; these functions are planned the way they
-- are written (no bitmap or sequential scans, sorts, hash or merge joins, no JIT: every
-- statement reads a handful of rows by key) and keep one generic plan per connection.

-- A job leaving `active` frees its slot.
CREATE OR REPLACE FUNCTION :SCHEMA.job_release_slot() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE :SCHEMA.slot SET job_id = NULL WHERE queue = OLD.queue AND n = OLD.slot AND job_id = OLD.id;
  NEW.slot := NULL;
  RETURN NEW;
END $$;

DROP TRIGGER IF EXISTS job_release_slot ON :SCHEMA.job;
CREATE TRIGGER job_release_slot BEFORE UPDATE OF state ON :SCHEMA.job
FOR EACH ROW WHEN (OLD.slot IS NOT NULL AND NEW.slot IS NOT NULL AND NEW.state <> 'active')
EXECUTE FUNCTION :SCHEMA.job_release_slot();

-- A cap set or raised: slot rows up to it, and a slot for every running job without one.
CREATE OR REPLACE FUNCTION :SCHEMA.queue_slots() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
  v_n integer;
BEGIN
  IF NEW.concurrency IS NULL THEN
    RETURN NULL;
  END IF;
  DELETE FROM :SCHEMA.slot WHERE queue = NEW.name AND n > NEW.concurrency AND job_id IS NULL;
  INSERT INTO :SCHEMA.slot (queue, n)
  SELECT NEW.name, g FROM generate_series(1, NEW.concurrency) g
  ON CONFLICT DO NOTHING;
  FOR r IN SELECT j.id FROM :SCHEMA.job j
           WHERE j.queue = NEW.name AND j.state = 'active' AND j.slot IS NULL
           ORDER BY j.id FOR UPDATE
  LOOP
    SELECT s.n INTO v_n FROM :SCHEMA.slot s
    WHERE s.queue = NEW.name AND s.job_id IS NULL AND s.n <= NEW.concurrency
    ORDER BY s.n LIMIT 1 FOR UPDATE;
    IF FOUND THEN
      UPDATE :SCHEMA.slot SET job_id = r.id WHERE queue = NEW.name AND n = v_n;
    ELSE
      SELECT greatest(coalesce(max(s.n), 0), NEW.concurrency) + 1 INTO v_n FROM :SCHEMA.slot s WHERE s.queue = NEW.name;
      INSERT INTO :SCHEMA.slot (queue, n, job_id) VALUES (NEW.name, v_n, r.id);
    END IF;
    UPDATE :SCHEMA.job SET slot = v_n WHERE id = r.id;
  END LOOP;
  RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS queue_slots ON :SCHEMA.queue;
CREATE TRIGGER queue_slots AFTER INSERT OR UPDATE OF concurrency ON :SCHEMA.queue
FOR EACH ROW EXECUTE FUNCTION :SCHEMA.queue_slots();

-- Free slots of a capped queue, locked for this transaction: at most p_want, none above
-- p_cap.
CREATE OR REPLACE FUNCTION :SCHEMA.take_slots(p_queue text, p_cap integer, p_want integer)
RETURNS integer[] LANGUAGE plpgsql
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_sort = off SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  RETURN (SELECT coalesce(array_agg(s.n ORDER BY s.n), '{}') FROM (
    SELECT n FROM :SCHEMA.slot
    WHERE queue = p_queue AND job_id IS NULL AND n <= p_cap
    ORDER BY n LIMIT greatest(p_want, 0)
    FOR UPDATE SKIP LOCKED
  ) s);
END $$;

-- Gives slots back (a claim that found fewer jobs than the slots it held).
CREATE OR REPLACE FUNCTION :SCHEMA.free_slots(p_queue text, p_slots integer[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE :SCHEMA.slot s SET job_id = NULL FROM unnest(p_slots) AS f(n) WHERE s.queue = p_queue AND s.n = f.n;
END $$;

-- Slots for jobs waiting with slot 0, in the order given: slots in hand (released by this
-- worker's completions in the same transaction) first, then free slots under the cap.
-- Returns the ids that now hold slots and the slots in hand left over (still held by
-- this transaction, for the caller to hand to its claim or free).
CREATE OR REPLACE FUNCTION :SCHEMA.take_over_slots(
  p_queue text, p_in_hand integer[], p_ids bigint[], p_tokens uuid[], p_now timestamptz,
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
      WHERE j.id = ANY (p_ids) AND j.lease_token = w.token AND j.state::text = 'claimed'
      ORDER BY j.id
      FOR UPDATE OF j) l
    ORDER BY l.pos);
  IF cardinality(v_waiting) = 0 THEN
    RETURN;
  END IF;
  IF q.concurrency IS NULL THEN
    -- No cap (any more): nothing to wait for.
    IF q.rate_count IS NOT NULL OR q.budget_units IS NOT NULL THEN
      PERFORM :SCHEMA.record_reserved_starts(p_queue, v_waiting, coalesce(p_now, now()));
    END IF;
    UPDATE :SCHEMA.job SET state = 'active', slot = NULL, start_reserved = NULL WHERE id = ANY (v_waiting);
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
  -- Reserved starts (a rate or a budget, rate.sql), recorded with the moves: a job handed
  -- over began before this statement was sent, one promoted begins after it.
  -- A worker that reports when its handlers begin keeps them reserved until it does.
  IF (q.rate_count IS NOT NULL OR q.budget_units IS NOT NULL) AND NOT :SCHEMA.starts_reported() THEN
    PERFORM :SCHEMA.record_reserved_starts(p_queue, v_waiting[1:v_n], coalesce(p_now, now()));
  END IF;
  UPDATE :SCHEMA.job j SET state = 'active', slot = a.n, start_reserved = CASE WHEN :SCHEMA.starts_reported() THEN j.start_reserved END
  FROM unnest(v_slots[1:v_n], v_waiting[1:v_n]) AS a(n, job_id)
  WHERE j.id = a.job_id;
  moved := v_waiting[1:v_n];
  left_over := ARRAY(SELECT u FROM unnest(left_over) u WHERE u <> ALL (v_slots[1:v_n]));
END $$;
