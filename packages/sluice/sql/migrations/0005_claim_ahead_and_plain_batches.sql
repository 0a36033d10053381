-- Claim ahead: a worker may ask for a few jobs beyond its free slots (p_ahead), to hold
-- locally while the next claim's round trip is in flight.
--
-- On a capped queue, jobs held ahead count against the cap like running ones, so they
-- are granted only while the cap has room for twice as many: when the cap binds, every
-- claimer gets jobs for its free slots only, and no worker sits on slots another could
-- run. Uncapped queues grant the whole request.
--
-- The claim's UPDATE now finds its rows through `id = ANY(...)`: a primary-key lookup of
-- a small array whatever plan is cached, where the former join could turn into a hash
-- join over the whole table under a generic plan.
--
-- The new claim() itself is created by 0006, with the cap slots; both migrations are
-- always applied together (the library refuses a schema that is not the latest).
DROP FUNCTION :SCHEMA.complete_and_claim(bigint[], uuid[], jsonb[], timestamptz, boolean, text, integer, text);
DROP FUNCTION :SCHEMA.claim(text, integer, text, timestamptz);

-- Where a per-key claim resumes its round-robin: the last key it served.
ALTER TABLE :SCHEMA.queue ADD COLUMN key_cursor text;

-- The jobs a claim takes from a queue with per_key_concurrency (called under the claim
-- lock). Keys take turns: a round gives every key with free capacity its next job
-- (highest priority, then oldest), walking the keys in order from just after the key the
-- previous claim served last, with the jobs without a key taking one turn where the walk
-- wraps around. Rounds repeat until the batch is full or a round finds nothing. A claim
-- therefore reads about as many keys as it takes jobs, not every key with a backlog;
-- priority orders jobs within a key, and the rotation orders the keys. Each job picked is
-- locked (a job being cancelled is skipped), so it is still pending when the claim
-- updates it. (A job of a key that turns out to be full is locked too, until commit.)
CREATE FUNCTION :SCHEMA.pick_per_key(q :SCHEMA.queue, p_limit integer, p_now timestamptz)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  v_ids bigint[] := '{}';
  v_keys text[] := '{}';
  v_key text;
  v_next text;
  v_id bigint;
  v_running integer;
  v_gave integer;
  v_last text;
BEGIN
  <<rounds>>
  FOR v_round IN 1..p_limit LOOP
    v_gave := 0;
    -- Pass 1: keys after the cursor; pass 2: the keyless turn; pass 3: keys up to the cursor.
    FOR v_pass IN 1..3 LOOP
      IF v_pass = 2 THEN
        SELECT j.id INTO v_id FROM :SCHEMA.job j
        WHERE j.queue = q.name AND j.state = 'pending' AND j.key IS NULL AND j.run_at <= p_now
          AND j.id <> ALL (v_ids)
        ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1
        FOR UPDATE SKIP LOCKED;
        IF FOUND THEN
          v_ids := v_ids || v_id;
          v_keys := v_keys || NULL::text;
          v_gave := v_gave + 1;
          EXIT rounds WHEN cardinality(v_ids) >= p_limit;
        END IF;
        CONTINUE;
      END IF;
      CONTINUE WHEN v_pass = 3 AND q.key_cursor IS NULL;
      v_key := CASE WHEN v_pass = 1 THEN q.key_cursor END;
      LOOP
        -- One probe per key: its next ready job not yet taken, and its running count.
        SELECT c.key, c.id, (SELECT count(*) FROM :SCHEMA.job a
                             WHERE a.queue = q.name AND a.state = 'active' AND a.key = c.key)
        INTO v_next, v_id, v_running
        FROM (SELECT j.key, j.id FROM :SCHEMA.job j
              WHERE j.queue = q.name AND j.state = 'pending' AND j.key IS NOT NULL
                AND j.key > coalesce(v_key, '') AND j.run_at <= p_now AND j.id <> ALL (v_ids)
              ORDER BY j.key, j.priority DESC, j.run_at, j.id LIMIT 1
              FOR UPDATE SKIP LOCKED) c;
        EXIT WHEN v_next IS NULL OR (v_pass = 3 AND v_next > q.key_cursor);
        v_key := v_next;
        CONTINUE WHEN v_running + coalesce(cardinality(array_positions(v_keys, v_key)), 0) >= q.per_key_concurrency;
        v_ids := v_ids || v_id;
        v_keys := v_keys || v_key;
        v_gave := v_gave + 1;
        v_last := v_key;
        EXIT rounds WHEN cardinality(v_ids) >= p_limit;
      END LOOP;
    END LOOP;
    EXIT WHEN v_gave = 0;
  END LOOP;
  IF v_last IS NOT NULL THEN
    UPDATE :SCHEMA.queue SET key_cursor = v_last WHERE name = q.name;
  END IF;
  RETURN v_ids;
END $$;

-- As in 0004, with the claim's p_ahead.
CREATE FUNCTION :SCHEMA.complete_and_claim(
  p_ids bigint[], p_tokens uuid[], p_results jsonb[], p_now timestamptz, p_notify boolean,
  p_queue text, p_limit integer, p_worker_id text, p_ahead integer DEFAULT 0)
RETURNS TABLE (completed bigint[], job jsonb) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_done bigint[];
  v_claimed integer;
BEGIN
  -- state::text: see the note at the top of queries/worker.sql.
  WITH done AS (
    UPDATE :SCHEMA.job j
    SET state = 'completed', finished_at = v_now, result = c.result,
        lease_token = NULL, lease_expires_at = NULL
    FROM unnest(p_ids, p_tokens, p_results) AS c(id, token, result)
    WHERE j.id = c.id AND j.lease_token = c.token AND j.state::text = 'active'
    RETURNING j.id
  )
  SELECT coalesce(array_agg(done.id), '{}') INTO v_done FROM done;

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

-- send_many (0002) with a fast path: a batch without singleton keys skips the
-- deduplication machinery (per-row window, ON CONFLICT, join back to the input), which
-- cost about a third of the statement. The rest is unchanged.
CREATE OR REPLACE FUNCTION :SCHEMA.send_many(p_queue text, p_items jsonb, p_now timestamptz, p_notify boolean)
RETURNS TABLE (ord bigint, id bigint, deduplicated boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, now());
  v_key record;
BEGIN
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  IF NOT FOUND THEN
    PERFORM :SCHEMA.raise_queue_not_found(p_queue);
  END IF;

  IF q.max_pending IS NOT NULL THEN
    PERFORM :SCHEMA.admit_depth(q, jsonb_array_length(p_items), p_now);
  END IF;
  IF q.max_per_key IS NOT NULL THEN
    FOR v_key IN
      SELECT x.key, count(*)::integer AS n FROM jsonb_to_recordset(p_items) AS x(key text)
      WHERE x.key IS NOT NULL GROUP BY x.key ORDER BY x.key
    LOOP
      PERFORM :SCHEMA.admit_key(q, v_key.key, v_key.n);
    END LOOP;
  END IF;

  IF NOT jsonb_path_exists(p_items, '$[*] ? (@.singleton_key != null)') THEN
    -- No singleton keys: a plain insert. Ids come from the sequence in input order, so
    -- the i-th smallest id is the i-th item.
    RETURN QUERY
    WITH inserted AS (
      INSERT INTO :SCHEMA.job (queue, data, key, priority, run_at, max_attempts, created_at)
      SELECT p_queue, coalesce(x.data, 'null'::jsonb), x.key, coalesce(x.priority, 0),
             coalesce(x.run_at, v_now + coalesce(x.delay_ms, 0) * interval '1 millisecond'),
             coalesce(x.max_attempts, q.max_attempts), v_now
      FROM ROWS FROM (
        jsonb_to_recordset(p_items) AS (data jsonb, key text, run_at timestamptz, delay_ms double precision,
                                        priority integer, max_attempts integer)
      ) WITH ORDINALITY AS x(data, key, run_at, delay_ms, priority, max_attempts, ord)
      ORDER BY x.ord
      RETURNING job.id
    )
    SELECT row_number() OVER (ORDER BY i.id), i.id, false FROM inserted i ORDER BY i.id;
  ELSE
  RETURN QUERY
  WITH numbered AS (
    SELECT x.*, nextval(pg_get_serial_sequence(':SCHEMA_NAME.job', 'id')) AS new_id
    FROM ROWS FROM (
      jsonb_to_recordset(p_items) AS (data jsonb, key text, singleton_key text, run_at timestamptz,
                                      delay_ms double precision, priority integer, max_attempts integer)
    ) WITH ORDINALITY AS x(data, key, singleton_key, run_at, delay_ms, priority, max_attempts, ord)
  ), input AS (
    SELECT n.*,
           CASE WHEN n.singleton_key IS NULL THEN n.new_id
                ELSE first_value(n.new_id) OVER (PARTITION BY n.singleton_key ORDER BY n.ord) END AS first_id
    FROM numbered n
  ), inserted AS (
    INSERT INTO :SCHEMA.job (id, queue, data, key, singleton_key, priority, run_at, max_attempts, created_at)
    SELECT i.new_id, p_queue, coalesce(i.data, 'null'::jsonb), i.key, i.singleton_key, coalesce(i.priority, 0),
           coalesce(i.run_at, v_now + coalesce(i.delay_ms, 0) * interval '1 millisecond'),
           coalesce(i.max_attempts, q.max_attempts), v_now
    FROM input i WHERE i.first_id = i.new_id ORDER BY i.ord
    ON CONFLICT (queue, singleton_key) WHERE singleton_key IS NOT NULL AND state IN ('pending', 'active')
    DO NOTHING
    RETURNING job.id
  )
  SELECT i.ord,
         coalesce(ins.id, (SELECT j.id FROM :SCHEMA.job j
                           WHERE j.queue = p_queue AND j.singleton_key = i.singleton_key
                             AND j.state IN ('pending', 'active'))),
         i.first_id <> i.new_id OR ins.id IS NULL
  FROM input i LEFT JOIN inserted ins ON ins.id = i.first_id
  ORDER BY i.ord;
  END IF;

  IF p_notify THEN
    PERFORM pg_notify(':CHANNEL', p_queue);
  END IF;
END $$;

-- A per-key claim also offers jobs without a key (one more turn in the round-robin).
-- Found through job_ready_idx, that search read past every pending keyed job when there
-- were none: O(backlog) per claim. This index holds only keyless pending jobs, so the
-- search is a probe whatever the backlog; it costs an index entry per keyless send.
CREATE INDEX job_keyless_pending_idx ON :SCHEMA.job (queue, priority DESC, run_at, id)
  WHERE state = 'pending' AND key IS NULL;

-- Every claim and completion leaves dead entries in the claim's partial indexes, and the
-- claim walks past them until a vacuum removes them. The default trigger (20% of the
-- table dead) lets a table of a million finished jobs collect 200,000 dead rows first;
-- vacuum the job table after 1,000 + 1% instead, and without cost-based pauses.
ALTER TABLE :SCHEMA.job SET (
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_analyze_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_vacuum_cost_delay = 0
);
