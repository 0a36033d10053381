-- Per-key claims without the queue-wide claim lock.
--
-- Until now a queue with per_key_concurrency serialized every claim on one advisory lock,
-- so that the running count of a key could not change between reading it and claiming:
-- claimers in several processes queued behind each other's commits. Now a claim takes a
-- lock per key instead, with a try-lock: a key another claim is serving is skipped, not
-- waited for, and claimers serve different keys in parallel. A key's running count is read
-- in a statement after its lock is taken, so it includes every job the previous holder of
-- that lock claimed (its commit is visible before its locks are released). Only claims
-- start jobs, and every claim of a key holds its lock: the count cannot grow behind our
-- back, and the cap per key stays exact. (Keys whose hashes collide share a lock: they are
-- served by one claim at a time, which is only slower.)
--
-- The round-robin cursor moves to its own row, updated only by a claim that can lock it
-- without waiting: updating the queue row would serialize the claims again.
--
-- claim() itself, without the claim lock for per-key queues, is created again by 0008
-- with its other changes; both migrations are always applied together (the library
-- refuses a schema that is not the latest).
ALTER TABLE :SCHEMA.queue DROP COLUMN key_cursor;

CREATE TABLE :SCHEMA.key_cursor (
  queue text PRIMARY KEY REFERENCES :SCHEMA.queue (name) ON DELETE CASCADE,
  key   text NOT NULL
);

-- Whether a key has a job due by p_now among those of priority below p_below (its first
-- job, of priority p_below, is not due). A key's pending jobs are indexed by priority, then
-- due time: one probe per lower priority level reads that level's earliest job, so a key
-- whose jobs all wait for later (retries backing off) costs a probe or two, not a read of
-- every job it holds.
CREATE FUNCTION :SCHEMA.key_has_ready_job(p_queue text, p_key text, p_below integer, p_now timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_priority integer := p_below;
  v_run_at timestamptz;
BEGIN
  LOOP
    SELECT j.priority, j.run_at INTO v_priority, v_run_at FROM :SCHEMA.job j
    WHERE j.queue = p_queue AND j.state = 'pending' AND j.key = p_key AND j.priority < v_priority
    ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1;
    IF NOT FOUND THEN
      RETURN false;
    ELSIF v_run_at <= p_now THEN
      RETURN true;
    END IF;
  END LOOP;
END $$;

-- The jobs a claim takes from a queue with per_key_concurrency. Keys take turns: a round
-- gives every key with room its next job (highest priority, then oldest), walking the keys
-- in order from just after the cursor, with the jobs without a key taking one turn where
-- the walk wraps around; rounds repeat until the batch is full or a round finds nothing.
--
-- Set-based, so a claim costs a few statements rather than a few per job: the walk lists
-- the next keys with a ready job (one index probe each, a recursive skip scan), passes over
-- those already full as far as its snapshot shows (a key it wrongly thinks has room is
-- caught below; one it wrongly thinks full waits for the next claim) and takes the lock
-- of each key no other claim holds; a second statement, whose snapshot is taken
-- after those locks, reads each key's running count and locks its next job. Only when the
-- first round leaves the batch short (fewer keys with room than jobs wanted) do further
-- rounds run, one statement each. Every job picked is locked (a job being cancelled is
-- skipped), so it is still pending when the claim updates it.
CREATE OR REPLACE FUNCTION :SCHEMA.pick_per_key(q :SCHEMA.queue, p_limit integer, p_now timestamptz)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  v_cursor text;
  v_from text;
  v_batch text[];
  v_ids bigint[] := '{}';
  -- Keys that gave a job in round 1, in walk order, and the room each had; NULL is the
  -- keyless turn (unlimited room), at v_keyless_pos among them.
  v_keys text[] := '{}';
  v_rooms integer[] := '{}';
  v_keyless_pos integer;
  v_more bigint[];
  v_more_keys text[];
  v_id bigint;
  v_last text;
  v_want integer;
BEGIN
  SELECT c.key INTO v_cursor FROM :SCHEMA.key_cursor c WHERE c.queue = q.name;

  -- Round 1. Pass 1: keys after the cursor; pass 2: the keyless turn; pass 3: keys up to it.
  FOR v_pass IN 1..3 LOOP
    EXIT WHEN cardinality(v_ids) >= p_limit;
    IF v_pass = 2 THEN
      SELECT j.id INTO v_id FROM :SCHEMA.job j
      WHERE j.queue = q.name AND j.state = 'pending' AND j.key IS NULL AND j.run_at <= p_now
      ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1
      FOR UPDATE SKIP LOCKED;
      IF FOUND THEN
        v_ids := v_ids || v_id;
        v_keys := v_keys || NULL::text;
        v_rooms := v_rooms || p_limit;
        v_keyless_pos := cardinality(v_keys);
      END IF;
      CONTINUE;
    END IF;
    CONTINUE WHEN v_pass = 3 AND v_cursor IS NULL;
    v_from := CASE WHEN v_pass = 1 THEN coalesce(v_cursor, '') ELSE '' END;
    LOOP
      v_want := p_limit - cardinality(v_ids);
      -- The next keys with a ready job, each locked unless another claim holds it.
      v_batch := ARRAY(
        -- Each step reads the first index entry of the next key: its most urgent job.
        WITH RECURSIVE walk(key, priority, run_at) AS (
          (SELECT j.key, j.priority, j.run_at FROM :SCHEMA.job j
           WHERE j.queue = q.name AND j.state = 'pending' AND j.key > v_from
           ORDER BY j.key, j.priority DESC, j.run_at, j.id LIMIT 1)
          UNION ALL
          SELECT n.key, n.priority, n.run_at
          FROM walk w, LATERAL (SELECT j.key, j.priority, j.run_at FROM :SCHEMA.job j
                                WHERE j.queue = q.name AND j.state = 'pending' AND j.key > w.key
                                ORDER BY j.key, j.priority DESC, j.run_at, j.id LIMIT 1) n
          WHERE v_pass = 1 OR w.key <= v_cursor
        )
        SELECT w.key FROM walk w
        WHERE CASE WHEN v_pass = 3 AND w.key > v_cursor THEN false
                   -- No job due yet: passed over (its later jobs are not read).
                   WHEN w.run_at > p_now AND NOT :SCHEMA.key_has_ready_job(q.name, w.key, w.priority, p_now) THEN false
                   -- Full as of this statement's snapshot: passed over without its lock.
                   WHEN (SELECT count(*) FROM :SCHEMA.job a
                         WHERE a.queue = q.name AND a.state = 'active' AND a.key = w.key) >= q.per_key_concurrency THEN false
                   ELSE pg_try_advisory_xact_lock(hashtext(':SCHEMA_NAME.claim_key'), hashtext(q.name || '/' || w.key)) END
        LIMIT v_want);
      EXIT WHEN cardinality(v_batch) = 0;
      -- A new statement, so a snapshot taken after the locks: each key's running count,
      -- and the next job of each key with room.
      SELECT v_ids || coalesce(array_agg(c.id ORDER BY k.pos), '{}'),
             v_keys || coalesce(array_agg(k.key ORDER BY k.pos), '{}'),
             v_rooms || coalesce(array_agg(q.per_key_concurrency - r.running ORDER BY k.pos), '{}')
      INTO v_ids, v_keys, v_rooms
      FROM unnest(v_batch) WITH ORDINALITY AS k(key, pos)
      CROSS JOIN LATERAL (SELECT count(*)::integer AS running FROM :SCHEMA.job a
                          WHERE a.queue = q.name AND a.state = 'active' AND a.key = k.key) r
      CROSS JOIN LATERAL (SELECT j.id FROM :SCHEMA.job j
                          WHERE j.queue = q.name AND j.state = 'pending' AND j.key = k.key
                            AND j.run_at <= p_now AND r.running < q.per_key_concurrency
                          ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1
                          FOR UPDATE SKIP LOCKED) c;
      v_from := v_batch[cardinality(v_batch)];
      EXIT WHEN cardinality(v_batch) < v_want OR cardinality(v_ids) >= p_limit;
    END LOOP;
  END LOOP;

  -- The cursor moves to the last key served, in walk order.
  v_last := (SELECT u.k FROM unnest(v_keys) WITH ORDINALITY AS u(k, i) WHERE u.k IS NOT NULL ORDER BY u.i DESC LIMIT 1);

  -- Further rounds, while the batch is short: one more job from every key that has room.
  FOR v_round IN 2..p_limit LOOP
    EXIT WHEN cardinality(v_ids) >= p_limit;
    v_want := p_limit - cardinality(v_ids);
    SELECT coalesce(array_agg(x.id ORDER BY x.pos), '{}'), coalesce(array_agg(x.key ORDER BY x.pos), '{}')
    INTO v_more, v_more_keys
    FROM (
      SELECT k.pos, k.key, c.id
      FROM unnest(v_keys, v_rooms) WITH ORDINALITY AS k(key, room, pos)
      CROSS JOIN LATERAL (SELECT j.id FROM :SCHEMA.job j
                          WHERE j.queue = q.name AND j.state = 'pending' AND j.key = k.key
                            AND j.run_at <= p_now AND j.id <> ALL (v_ids)
                          ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1
                          FOR UPDATE SKIP LOCKED) c
      WHERE k.key IS NOT NULL AND k.room >= v_round
      ORDER BY k.pos LIMIT v_want
    ) x;
    IF v_keyless_pos IS NOT NULL THEN
      SELECT j.id INTO v_id FROM :SCHEMA.job j
      WHERE j.queue = q.name AND j.state = 'pending' AND j.key IS NULL AND j.run_at <= p_now
        AND j.id <> ALL (v_ids)
      ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1
      FOR UPDATE SKIP LOCKED;
      IF FOUND THEN
        -- The keyless job takes its place in the walk order.
        SELECT coalesce(array_agg(m.id ORDER BY m.pos), '{}'), coalesce(array_agg(m.key ORDER BY m.pos), '{}')
        INTO v_more, v_more_keys FROM (
          SELECT a.id, a.key, array_position(v_keys, a.key) AS pos FROM unnest(v_more, v_more_keys) AS a(id, key)
          UNION ALL SELECT v_id, NULL, v_keyless_pos
          ORDER BY 3 LIMIT v_want) m;
      ELSE
        v_keyless_pos := NULL;
      END IF;
    END IF;
    EXIT WHEN cardinality(v_more) = 0;
    v_ids := v_ids || v_more;
    v_last := coalesce((SELECT u.k FROM unnest(v_more_keys) WITH ORDINALITY AS u(k, i) WHERE u.k IS NOT NULL
                        ORDER BY u.i DESC LIMIT 1), v_last);
  END LOOP;

  IF v_last IS NOT NULL THEN
    -- Skipped when another claim holds the cursor row: it is moving the cursor itself.
    UPDATE :SCHEMA.key_cursor c SET key = v_last
    FROM (SELECT queue FROM :SCHEMA.key_cursor WHERE queue = q.name FOR UPDATE SKIP LOCKED) mine
    WHERE c.queue = mine.queue;
    IF NOT FOUND AND v_cursor IS NULL THEN
      INSERT INTO :SCHEMA.key_cursor (queue, key) VALUES (q.name, v_last) ON CONFLICT DO NOTHING;
    END IF;
  END IF;
  RETURN v_ids;
END $$;
