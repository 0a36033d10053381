-- Global caps held by slot rows instead of a per-queue claim lock.
--
-- A queue with `concurrency = N` owns slot rows 1..N. A job becomes active only together
-- with a free slot row, taken FOR UPDATE SKIP LOCKED and marked with the job's id in the
-- same transaction; it gives the slot back in the same transaction as it leaves `active`
-- (a trigger, so every path does: complete, fail, sweep, cancel, release). Active jobs
-- of a capped queue therefore never outnumber its slots, exactly, while claimers take
-- different slots in parallel: no claim waits for another's commit.
--
-- Slot states:   free (job_id NULL) ──claim──▶ held (job_id = the job) ──job leaves active──▶ free
-- Only slots 1..N are handed out. While a slot above N is still held (the cap was just
-- lowered, or set on a queue whose running jobs got slots above it), the count of held
-- slots can exceed N although every free slot is below it: claims then fall back to the
-- claim lock and count running jobs, as before slots, until those jobs are gone. Setting a
-- cap on a queue with running jobs gives each of them a slot first, so they count.
-- Queues with per_key_concurrency still serialize their claims on the claim lock (the
-- per-key counts need it) and take slots as well when they also have a cap.
CREATE TABLE :SCHEMA.slot (
  queue  text    NOT NULL,
  n      integer NOT NULL,
  job_id bigint,
  PRIMARY KEY (queue, n)
);

ALTER TABLE :SCHEMA.job ADD COLUMN slot integer;

-- A job leaving `active` frees its slot.
CREATE FUNCTION :SCHEMA.job_release_slot() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE :SCHEMA.slot SET job_id = NULL WHERE queue = OLD.queue AND n = OLD.slot AND job_id = OLD.id;
  NEW.slot := NULL;
  RETURN NEW;
END $$;

CREATE TRIGGER job_release_slot BEFORE UPDATE OF state ON :SCHEMA.job
FOR EACH ROW WHEN (OLD.slot IS NOT NULL AND NEW.state <> 'active')
EXECUTE FUNCTION :SCHEMA.job_release_slot();

-- A cap set or raised: slot rows up to it, and a slot for every running job without one.
CREATE FUNCTION :SCHEMA.queue_slots() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER queue_slots AFTER INSERT OR UPDATE OF concurrency ON :SCHEMA.queue
FOR EACH ROW EXECUTE FUNCTION :SCHEMA.queue_slots();

-- Queues capped before this migration get their slots now.
UPDATE :SCHEMA.queue SET concurrency = concurrency WHERE concurrency IS NOT NULL;

-- Free slots of a capped queue, locked for this transaction: at most p_want, and none
-- beyond p_limit when fewer than p_want are free.
CREATE FUNCTION :SCHEMA.take_slots(p_queue text, p_cap integer, p_want integer)
RETURNS integer[] LANGUAGE sql AS $$
  SELECT coalesce(array_agg(s.n ORDER BY s.n), '{}') FROM (
    SELECT n FROM :SCHEMA.slot
    WHERE queue = p_queue AND job_id IS NULL AND n <= p_cap
    ORDER BY n LIMIT greatest(p_want, 0)
    FOR UPDATE SKIP LOCKED
  ) s
$$;

-- Claim up to p_limit ready jobs for one worker, plus up to p_ahead to hold ahead (0005).
-- Capped queues take a slot per job (above); per-key queues serialize on the claim lock
-- and pick through pick_per_key (0005). Rows come back in claim order.
CREATE FUNCTION :SCHEMA.claim(p_queue text, p_limit integer, p_worker_id text, p_now timestamptz, p_ahead integer DEFAULT 0)
RETURNS SETOF :SCHEMA.job LANGUAGE plpgsql AS $$
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, now());
  v_ahead integer := greatest(coalesce(p_ahead, 0), 0);
  v_limit integer := p_limit + v_ahead;
  v_want integer := p_limit + 2 * v_ahead;
  v_active integer;
  v_slots integer[];
  v_ids bigint[];
BEGIN
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  IF NOT FOUND OR q.paused OR v_limit <= 0 THEN
    RETURN;
  END IF;

  IF q.per_key_concurrency IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.claim'), hashtext(p_queue));
  END IF;
  IF q.concurrency IS NOT NULL THEN
    IF EXISTS (SELECT 1 FROM :SCHEMA.slot WHERE queue = p_queue AND n > q.concurrency AND job_id IS NOT NULL) THEN
      -- Held slots above the cap: serialize and count, until they are gone.
      PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.claim'), hashtext(p_queue));
      DELETE FROM :SCHEMA.slot WHERE queue = p_queue AND n > q.concurrency AND job_id IS NULL;
      SELECT count(*) INTO v_active FROM :SCHEMA.job WHERE queue = p_queue AND state = 'active';
      v_want := least(v_want, q.concurrency - v_active);
    END IF;
    -- Jobs ahead only while the cap has room for twice as many (see 0005).
    v_slots := :SCHEMA.take_slots(p_queue, q.concurrency, v_want);
    IF cardinality(v_slots) < p_limit + 2 * v_ahead THEN
      v_limit := least(v_limit, p_limit);
    END IF;
    v_limit := least(v_limit, cardinality(v_slots));
    IF v_limit <= 0 THEN
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

  IF q.concurrency IS NOT NULL AND cardinality(v_ids) > 0 THEN
    UPDATE :SCHEMA.slot s SET job_id = v_ids[array_position(v_slots, s.n)]
    WHERE s.queue = p_queue AND s.n = ANY (v_slots[1:cardinality(v_ids)]);
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

-- Admission counts (0002), made cheap to compute: the cut-off time is computed once, not
-- per row (clock_timestamp() is volatile), and the per-key count reads the two partial
-- indexes that hold a key's pending and running jobs instead of scanning the table.
CREATE OR REPLACE FUNCTION :SCHEMA.admit_depth(q :SCHEMA.queue, p_incoming integer, p_now timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_depth bigint;
  v_cutoff timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.pending'), hashtext(q.name));
  -- After the lock: the previous holders' jobs count even if their now() is later than ours.
  v_cutoff := coalesce(p_now, clock_timestamp());
  SELECT count(*) INTO v_depth FROM (
    SELECT 1 FROM :SCHEMA.job
    WHERE queue = q.name AND state = 'pending' AND run_at <= v_cutoff
    LIMIT q.max_pending
  ) ready;
  IF v_depth + p_incoming > q.max_pending THEN
    RAISE EXCEPTION USING ERRCODE = 'SL503',
      MESSAGE = format('queue "%s" is full (%s ready, limit %s)', q.name, v_depth, q.max_pending),
      HINT = q.retry_after_seconds::text;
  END IF;
END $$;

CREATE OR REPLACE FUNCTION :SCHEMA.admit_key(q :SCHEMA.queue, p_key text, p_incoming integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_load bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.key'), hashtext(q.name || '/' || p_key));
  SELECT (SELECT count(*) FROM (SELECT 1 FROM :SCHEMA.job
                                WHERE queue = q.name AND key = p_key AND state = 'pending'
                                LIMIT q.max_per_key) p)
       + (SELECT count(*) FROM (SELECT 1 FROM :SCHEMA.job
                                WHERE queue = q.name AND key = p_key AND state = 'active'
                                LIMIT q.max_per_key) a)
  INTO v_load;
  IF v_load + p_incoming > q.max_per_key THEN
    RAISE EXCEPTION USING ERRCODE = 'SL429',
      MESSAGE = format('key "%s" has %s jobs in queue "%s" (limit %s)', p_key, v_load, q.name, q.max_per_key),
      DETAIL = p_key,
      HINT = q.retry_after_seconds::text;
  END IF;
END $$;
