-- Admission and insert: a send is decided and written in one statement, counted from the
-- table in the transaction that inserts.
--
--   send(queue, data, key, singleton key, run_at | delay, priority, max attempts, now, notify,
--        cost, timeout_ms, trace_context) → (id, deduplicated)
--   send_many(queue, items jsonb, now, notify, trace_context) → (ord, id, deduplicated) per item
--
-- `trace_context` is the sender's propagation carrier (src/tracing.ts), stored on the job
-- as given (NULL when the sender traces nothing); a batch's jobs share their send's.
--
-- Guarantees:
-- - Depth (`max_pending`): a send that would take the queue's ready-pending depth past it
--   is refused with SQLSTATE SL503 (the library's QueueFullError), the retry delay in
--   HINT. Counted under a per-queue transaction lock, so concurrent sends cannot all pass.
-- - Wait (`max_wait_ms`, with a rate or a budget): a send whose projected wait to start
--   passes it is refused the same way, the retry delay computed from the projection. The
--   projection counts the jobs ready ahead, what the rate's window already used, the cap
--   (at the queue's recent run time), and for a keyed job its key's rate and concurrency.
-- - Per key (`max_per_key`): a send that would give a key more than its limit of waiting,
--   pending and active jobs is refused with SL429 (KeyLimitError), counted under a per-key lock.
-- - Singleton keys: at most one non-final job per (queue, key); a duplicate returns the
--   existing job's id with `deduplicated`, inserts nothing, and is not counted. A job sent
--   with a period holds its key past its end (singleton_holder, unique.sql).
-- - An unknown queue is SL404. Nothing is written by a refused send.
-- - A job due now is announced on the schema's channel (NOTIFY, delivered at commit).
--
-- Why functions: an exact count needs a lock *and then* a fresh snapshot. Under READ
-- COMMITTED each statement of a PL/pgSQL function takes a new snapshot, so "lock, count,
-- act" costs one round trip and still sees every job committed by the previous lock
-- holder; one SQL statement could not, its snapshot predates the lock.
--
-- Errors use the SQLSTATE class SL, mapped to typed errors by the library: SL404 queue
-- not found, SL503 queue full (shed), SL429 key at its limit; DETAIL holds their fields
-- as JSON (queue, key, counts, limit) and HINT the retry delay in seconds. Lock namespaces
-- (two-integer advisory locks, scoped to the transaction):
--   (hashtext(':SCHEMA_NAME.pending'), hashtext(queue))      depth admission per queue
--   (hashtext(':SCHEMA_NAME.key'), hashtext(queue/key))       per-key admission
--   (hashtext(':SCHEMA_NAME.singleton'), hashtext(queue/bucket))  sends of singleton keys (unique.sql)
--   (hashtext(':SCHEMA_NAME.claim'), hashtext(queue))         claims that must count (claim.sql)
--   (hashtext(':SCHEMA_NAME.rate'), hashtext(queue))          starts by rate and budget (rate.sql)
--
-- The common case (no singleton key, no depth limit, no per-key limit for a keyed job) is
-- one INSERT … SELECT from the queue's row, without a speculative insert: the singleton
-- index holds only rows with a key, so the conflict check would be wasted WAL.

-- SL404: the queue does not exist.
CREATE OR REPLACE FUNCTION :SCHEMA.raise_queue_not_found(p_queue text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'SL404', MESSAGE = format('queue "%s" does not exist', p_queue),
    DETAIL = json_build_object('queue', p_queue)::text;
END $$;

-- SL503 unless `p_incoming` more ready jobs keep the queue within max_pending. The cut-off
-- time is computed once, not per row (clock_timestamp() is volatile).
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
      DETAIL = json_build_object('queue', q.name, 'ready', v_depth, 'limit', q.max_pending)::text,
      HINT = q.retry_after_seconds::text;
  END IF;
END $$;

-- When the k-th job in line (1-based, the jobs ready ahead first) may start by a rate, in ms
-- from now: the queue's (p_key NULL) or a key's. A sliding window of `count` starts per
-- `period` has `count` places; a place taken by a start (recorded, reserved until its
-- handler's report or its move, or granted to a worker: rate.sql; a key's places by its
-- recorded and reserved starts) is free again once that start leaves the window. The k-th job takes place (k - 1) mod count, in the order the places come
-- free, (k - 1) / count periods later. So the window's use counts, not only the line.
CREATE OR REPLACE FUNCTION :SCHEMA.rate_wait_ms(q :SCHEMA.queue, p_key text, p_k bigint, p_now timestamptz)
RETURNS double precision LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_count integer := CASE WHEN p_key IS NULL THEN q.rate_count ELSE q.key_rate_count END;
  v_period bigint := CASE WHEN p_key IS NULL THEN q.rate_period_ms ELSE q.key_rate_period_ms END;
  v_free integer;
  v_place integer;
  v_place_ms double precision;
BEGIN
  IF v_count IS NULL OR p_k <= 0 THEN
    RETURN 0;
  END IF;
  v_place := ((p_k - 1) % v_count)::integer;
  IF p_key IS NULL THEN
    SELECT r.jobs INTO v_free FROM :SCHEMA.start_room(q, p_now) r;
  ELSE
    SELECT r.jobs INTO v_free FROM :SCHEMA.key_start_room(q, p_key, p_now) r;
  END IF;
  -- Places free now come first; the others in the order their starts leave the window:
  -- place v_place is the (count - 1 - v_place)-th taken one from the latest.
  IF v_place >= greatest(v_free, 0) THEN
    SELECT x.ms INTO v_place_ms FROM (
      SELECT o.ms, sum(o.n) OVER (ORDER BY o.ms DESC ROWS UNBOUNDED PRECEDING) AS upto
      FROM (
        SELECT extract(epoch FROM s.started_at - p_now) * 1000 + v_period AS ms, 1::bigint AS n
        FROM :SCHEMA.job_start s
        WHERE s.queue = q.name AND (p_key IS NULL OR s.key = p_key)
          AND s.started_at >= p_now - v_period * interval '1 millisecond'
        UNION ALL
        SELECT v_period::double precision, r.jobs::bigint FROM :SCHEMA.reserved_starts(q) r WHERE p_key IS NULL
        UNION ALL
        SELECT v_period::double precision, r.jobs::bigint FROM :SCHEMA.key_reserved_starts(q, p_key) r WHERE p_key IS NOT NULL
        UNION ALL
        SELECT extract(epoch FROM g.until - p_now) * 1000 + v_period, g.jobs::bigint
        FROM :SCHEMA.rate_grant g
        WHERE p_key IS NULL AND g.queue = q.name AND g.until >= p_now - v_period * interval '1 millisecond'
      ) o
      WHERE o.n > 0
    ) x
    WHERE x.upto > v_count - 1 - v_place
    ORDER BY x.ms DESC LIMIT 1;
  END IF;
  RETURN greatest(coalesce(v_place_ms, 0), 0) + ((p_k - 1) / v_count) * v_period;
END $$;

-- When the k-th job in line may start by a cap of `p_cap` running jobs of which `p_running`
-- run now, in ms from now: once (k - free places) jobs have ended, at the queue's recent
-- run time (its last 20 completions; with none, the cap adds nothing: no wait can be known).
CREATE OR REPLACE FUNCTION :SCHEMA.cap_wait_ms(q :SCHEMA.queue, p_cap integer, p_running bigint, p_k bigint)
RETURNS double precision LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_run_ms double precision;
BEGIN
  IF p_cap IS NULL OR p_k <= p_cap - p_running THEN
    RETURN 0;
  END IF;
  SELECT avg(extract(epoch FROM r.finished_at - r.started_at) * 1000) INTO v_run_ms FROM (
    SELECT j.finished_at, j.started_at FROM :SCHEMA.job j
    WHERE j.queue = q.name AND j.state = 'completed' AND j.started_at IS NOT NULL
    ORDER BY j.finished_at DESC LIMIT 20
  ) r;
  RETURN ceil((p_k - greatest(p_cap - p_running, 0))::double precision / p_cap) * coalesce(v_run_ms, 0);
END $$;

-- SL503 with the projected wait, the retry delay how long until it is back within max_wait_ms.
CREATE OR REPLACE FUNCTION :SCHEMA.raise_wait(q :SCHEMA.queue, p_key text, p_ahead bigint, p_wait_ms double precision)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'SL503',
    MESSAGE = format('queue "%s" is full: a job%s sent now would wait about %s ms to start, over its limit of %s ms',
                     q.name, CASE WHEN p_key IS NULL THEN '' ELSE format(' of key "%s"', p_key) END, round(p_wait_ms), q.max_wait_ms),
    DETAIL = json_build_object('queue', q.name, 'key', p_key, 'ready', p_ahead, 'waitMs', round(p_wait_ms), 'maxWaitMs', q.max_wait_ms)::text,
    HINT = greatest(1, ceil((p_wait_ms - q.max_wait_ms) / 1000))::text;
END $$;

-- SL503 unless the jobs ready ahead and `p_incoming` more (costing `p_units`) would all
-- start within max_wait_ms: by the queue's rate, counting what its window already used
-- (rate_wait_ms); by its budget, the k-th job in line in the window floor(units up to it /
-- units) from now; and by its cap, at its recent run time (cap_wait_ms). The retry delay
-- is how long until the wait is back within max_wait_ms. Counted under the depth lock, so
-- concurrent sends cannot all pass; jobs beyond what could start within max_wait_ms are
-- not counted (they are past it already).
CREATE OR REPLACE FUNCTION :SCHEMA.admit_wait(q :SCHEMA.queue, p_incoming integer, p_units bigint, p_now timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_cutoff timestamptz;
  v_room bigint := 0;
  v_ahead bigint;
  v_units bigint;
  v_running bigint;
  v_wait_ms double precision := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.pending'), hashtext(q.name));
  v_cutoff := coalesce(p_now, clock_timestamp());
  IF q.rate_count IS NOT NULL THEN
    v_room := (floor(q.max_wait_ms::double precision / q.rate_period_ms) + 1) * q.rate_count;
  END IF;
  IF q.budget_units IS NOT NULL THEN
    v_room := greatest(v_room, least((floor(q.max_wait_ms::double precision / q.budget_period_ms) + 1) * q.budget_units, 1000000));
  END IF;
  SELECT count(*), coalesce(sum(r.cost), 0) INTO v_ahead, v_units FROM (
    SELECT j.cost FROM :SCHEMA.job j
    WHERE j.queue = q.name AND j.state = 'pending' AND j.run_at <= v_cutoff
    LIMIT v_room
  ) r;
  IF q.rate_count IS NOT NULL THEN
    v_wait_ms := :SCHEMA.rate_wait_ms(q, NULL, v_ahead + p_incoming, v_cutoff);
  END IF;
  IF q.budget_units IS NOT NULL THEN
    v_wait_ms := greatest(v_wait_ms, floor((v_units + p_units - 1)::double precision / q.budget_units) * q.budget_period_ms);
  END IF;
  IF q.concurrency IS NOT NULL AND v_wait_ms <= q.max_wait_ms THEN
    SELECT count(*) INTO v_running FROM (
      SELECT 1 FROM :SCHEMA.job WHERE queue = q.name AND state IN ('active', 'claimed') LIMIT q.concurrency
    ) a;
    v_wait_ms := greatest(v_wait_ms, :SCHEMA.cap_wait_ms(q, q.concurrency, v_running, v_ahead + p_incoming));
  END IF;
  IF v_wait_ms > q.max_wait_ms THEN
    PERFORM :SCHEMA.raise_wait(q, NULL, v_ahead, v_wait_ms);
  END IF;
END $$;

-- SL503 unless the key's jobs ready ahead and `p_incoming` more would all start within
-- max_wait_ms by the key's own bounds: its rate (rate_wait_ms) and its concurrency (at the
-- queue's recent run time). Counted under the key's admission lock.
CREATE OR REPLACE FUNCTION :SCHEMA.admit_key_wait(q :SCHEMA.queue, p_key text, p_incoming integer, p_now timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_cutoff timestamptz;
  v_room bigint := 1000000;
  v_ahead bigint;
  v_running bigint;
  v_wait_ms double precision := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.key'), hashtext(q.name || '/' || p_key));
  v_cutoff := coalesce(p_now, clock_timestamp());
  IF q.key_rate_count IS NOT NULL THEN
    v_room := (floor(q.max_wait_ms::double precision / q.key_rate_period_ms) + 1) * q.key_rate_count;
  END IF;
  SELECT count(*) INTO v_ahead FROM (
    SELECT 1 FROM :SCHEMA.job
    WHERE queue = q.name AND key = p_key AND state = 'pending' AND run_at <= v_cutoff
    LIMIT v_room
  ) r;
  v_wait_ms := :SCHEMA.rate_wait_ms(q, p_key, v_ahead + p_incoming, v_cutoff);
  IF q.per_key_concurrency IS NOT NULL AND v_wait_ms <= q.max_wait_ms THEN
    SELECT count(*) INTO v_running FROM (
      SELECT 1 FROM :SCHEMA.job WHERE queue = q.name AND key = p_key AND state IN ('active', 'claimed') LIMIT q.per_key_concurrency
    ) a;
    v_wait_ms := greatest(v_wait_ms, :SCHEMA.cap_wait_ms(q, q.per_key_concurrency, v_running, v_ahead + p_incoming));
  END IF;
  IF v_wait_ms > q.max_wait_ms THEN
    PERFORM :SCHEMA.raise_wait(q, p_key, v_ahead, v_wait_ms);
  END IF;
END $$;

-- SL429 unless `p_incoming` more jobs keep the key within max_per_key (waiting for parents,
-- pending and active, each read from the partial index that holds them: a flow's children
-- count from their send on, or their release could take the key past its limit).
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
                                WHERE queue = q.name AND key = p_key AND state IN ('active', 'claimed')
                                LIMIT q.max_per_key) a)
       + (SELECT count(*) FROM (SELECT 1 FROM :SCHEMA.job
                                WHERE queue = q.name AND key = p_key AND waiting_parents IS NOT NULL
                                LIMIT q.max_per_key) w)
  INTO v_load;
  IF v_load + p_incoming > q.max_per_key THEN
    RAISE EXCEPTION USING ERRCODE = 'SL429',
      MESSAGE = format('key "%s" has %s jobs in queue "%s" (limit %s)', p_key, v_load, q.name, q.max_per_key),
      DETAIL = json_build_object('queue', q.name, 'key', p_key, 'jobs', v_load, 'limit', q.max_per_key)::text,
      HINT = q.retry_after_seconds::text;
  END IF;
END $$;

CREATE OR REPLACE FUNCTION :SCHEMA.send(
  p_queue text, p_data jsonb, p_key text, p_singleton_key text, p_run_at timestamptz,
  p_delay_ms double precision, p_priority integer, p_max_attempts integer,
  p_now timestamptz, p_notify boolean, p_cost integer, p_timeout_ms integer, p_trace_context jsonb,
  OUT id bigint, OUT deduplicated boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, now());
  v_run_at timestamptz := coalesce(p_run_at, v_now + coalesce(p_delay_ms, 0) * interval '1 millisecond');
BEGIN
  deduplicated := false;

  -- Nothing to deduplicate and nothing to admit: one statement. Otherwise (or if the
  -- queue does not exist) no row is inserted and the full path below decides.
  IF p_singleton_key IS NULL THEN
    INSERT INTO :SCHEMA.job (queue, data, key, priority, run_at, max_attempts, created_at, cost, timeout_ms, trace_context)
    SELECT qu.name, p_data, p_key, coalesce(p_priority, 0), v_run_at, coalesce(p_max_attempts, qu.max_attempts), v_now, coalesce(p_cost, 1), p_timeout_ms, p_trace_context
    FROM :SCHEMA.queue qu
    WHERE qu.name = p_queue AND qu.max_pending IS NULL AND qu.max_wait_ms IS NULL AND (qu.max_per_key IS NULL OR p_key IS NULL)
    RETURNING job.id INTO id;
    IF FOUND THEN
      IF p_notify AND v_run_at <= v_now THEN
        PERFORM pg_notify(':CHANNEL', p_queue);
      END IF;
      RETURN;
    END IF;
  END IF;

  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  IF NOT FOUND THEN
    PERFORM :SCHEMA.raise_queue_not_found(p_queue);
  END IF;

  IF p_singleton_key IS NOT NULL THEN
    id := :SCHEMA.singleton_holder(p_queue, p_singleton_key, v_now);
    IF id IS NULL THEN
      -- No holder yet: serialize with the other sends of the key, then look again.
      PERFORM :SCHEMA.lock_singletons(p_queue, ARRAY[p_singleton_key]);
      id := :SCHEMA.singleton_holder(p_queue, p_singleton_key, v_now);
    END IF;
    IF id IS NOT NULL THEN
      deduplicated := true;
      RETURN;
    END IF;
  END IF;

  IF q.max_pending IS NOT NULL THEN
    PERFORM :SCHEMA.admit_depth(q, 1, p_now);
  END IF;
  IF q.max_wait_ms IS NOT NULL THEN
    PERFORM :SCHEMA.admit_wait(q, 1, coalesce(p_cost, 1), p_now);
    IF p_key IS NOT NULL AND (q.key_rate_count IS NOT NULL OR q.per_key_concurrency IS NOT NULL) THEN
      PERFORM :SCHEMA.admit_key_wait(q, p_key, 1, p_now);
    END IF;
  END IF;
  IF q.max_per_key IS NOT NULL AND p_key IS NOT NULL THEN
    PERFORM :SCHEMA.admit_key(q, p_key, 1);
  END IF;

  IF p_singleton_key IS NULL THEN
    INSERT INTO :SCHEMA.job (queue, data, key, priority, run_at, max_attempts, created_at, cost, timeout_ms, trace_context)
    VALUES (p_queue, p_data, p_key, coalesce(p_priority, 0), v_run_at, coalesce(p_max_attempts, q.max_attempts), v_now, coalesce(p_cost, 1), p_timeout_ms, p_trace_context)
    RETURNING job.id INTO id;
  ELSE
    LOOP
      INSERT INTO :SCHEMA.job (queue, data, key, singleton_key, priority, run_at, max_attempts, created_at, cost, timeout_ms, trace_context)
      VALUES (p_queue, p_data, p_key, p_singleton_key, coalesce(p_priority, 0), v_run_at,
              coalesce(p_max_attempts, q.max_attempts), v_now, coalesce(p_cost, 1), p_timeout_ms, p_trace_context)
      ON CONFLICT (queue, singleton_key) WHERE singleton_key IS NOT NULL AND state IN ('pending', 'active', 'claimed')
      DO NOTHING
      RETURNING job.id INTO id;
      EXIT WHEN id IS NOT NULL;
      -- A concurrent send with the same singleton key won; return its job (or insert
      -- again if it finished in between).
      id := :SCHEMA.singleton_holder(p_queue, p_singleton_key, v_now);
      IF id IS NOT NULL THEN
        deduplicated := true;
        RETURN;
      END IF;
    END LOOP;
  END IF;

  IF p_notify AND v_run_at <= v_now THEN
    PERFORM pg_notify(':CHANNEL', p_queue);
  END IF;
END $$;

-- A batch, admitted as a whole: depth and each key counted once for all their items. A
-- batch without singleton keys skips the deduplication machinery (per-row window, ON
-- CONFLICT, join back to the input).
CREATE OR REPLACE FUNCTION :SCHEMA.send_many(p_queue text, p_items jsonb, p_now timestamptz, p_notify boolean, p_trace_context jsonb)
RETURNS TABLE (ord bigint, id bigint, deduplicated boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, now());
  v_key record;
  v_singletons boolean;
BEGIN
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  IF NOT FOUND THEN
    PERFORM :SCHEMA.raise_queue_not_found(p_queue);
  END IF;
  v_singletons := jsonb_path_exists(p_items, '$[*] ? (@.singleton_key != null)');
  IF v_singletons THEN
    -- Before admission, as send takes them; the insert's snapshot then sees every holder.
    PERFORM :SCHEMA.lock_singletons(p_queue, ARRAY(
      SELECT x.singleton_key FROM jsonb_to_recordset(p_items) AS x(singleton_key text) WHERE x.singleton_key IS NOT NULL));
  END IF;

  IF q.max_pending IS NOT NULL THEN
    PERFORM :SCHEMA.admit_depth(q, jsonb_array_length(p_items), p_now);
  END IF;
  IF q.max_wait_ms IS NOT NULL THEN
    PERFORM :SCHEMA.admit_wait(q, jsonb_array_length(p_items),
      (SELECT coalesce(sum(coalesce(x.cost, 1)), 0) FROM jsonb_to_recordset(p_items) AS x(cost integer)), p_now);
    IF q.key_rate_count IS NOT NULL OR q.per_key_concurrency IS NOT NULL THEN
      FOR v_key IN
        SELECT x.key, count(*)::integer AS n FROM jsonb_to_recordset(p_items) AS x(key text)
        WHERE x.key IS NOT NULL GROUP BY x.key ORDER BY x.key
      LOOP
        PERFORM :SCHEMA.admit_key_wait(q, v_key.key, v_key.n, p_now);
      END LOOP;
    END IF;
  END IF;
  IF q.max_per_key IS NOT NULL THEN
    FOR v_key IN
      SELECT x.key, count(*)::integer AS n FROM jsonb_to_recordset(p_items) AS x(key text)
      WHERE x.key IS NOT NULL GROUP BY x.key ORDER BY x.key
    LOOP
      PERFORM :SCHEMA.admit_key(q, v_key.key, v_key.n);
    END LOOP;
  END IF;

  IF NOT v_singletons THEN
    -- No singleton keys: a plain insert. Ids come from the sequence in input order, so
    -- the i-th smallest id is the i-th item.
    RETURN QUERY
    WITH inserted AS (
      INSERT INTO :SCHEMA.job (queue, data, key, priority, run_at, max_attempts, created_at, cost, timeout_ms, trace_context)
      SELECT p_queue, coalesce(x.data, 'null'::jsonb), x.key, coalesce(x.priority, 0),
             coalesce(x.run_at, v_now + coalesce(x.delay_ms, 0) * interval '1 millisecond'),
             coalesce(x.max_attempts, q.max_attempts), v_now, coalesce(x.cost, 1), x.timeout_ms, p_trace_context
      FROM ROWS FROM (
        jsonb_to_recordset(p_items) AS (data jsonb, key text, run_at timestamptz, delay_ms double precision,
                                        priority integer, max_attempts integer, cost integer, timeout_ms integer)
      ) WITH ORDINALITY AS x(data, key, run_at, delay_ms, priority, max_attempts, cost, timeout_ms, ord)
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
                                      delay_ms double precision, priority integer, max_attempts integer, cost integer, timeout_ms integer)
    ) WITH ORDINALITY AS x(data, key, singleton_key, run_at, delay_ms, priority, max_attempts, cost, timeout_ms, ord)
  ), input AS (
    SELECT n.*,
           CASE WHEN n.singleton_key IS NULL THEN n.new_id
                ELSE first_value(n.new_id) OVER (PARTITION BY n.singleton_key ORDER BY n.ord) END AS first_id
    FROM numbered n
  ), inserted AS (
    INSERT INTO :SCHEMA.job (id, queue, data, key, singleton_key, priority, run_at, max_attempts, created_at, cost, timeout_ms, trace_context)
    SELECT i.new_id, p_queue, coalesce(i.data, 'null'::jsonb), i.key, i.singleton_key, coalesce(i.priority, 0),
           coalesce(i.run_at, v_now + coalesce(i.delay_ms, 0) * interval '1 millisecond'),
           coalesce(i.max_attempts, q.max_attempts), v_now, coalesce(i.cost, 1), i.timeout_ms, p_trace_context
    FROM input i
    WHERE i.first_id = i.new_id AND (i.singleton_key IS NULL OR :SCHEMA.singleton_holder(p_queue, i.singleton_key, v_now) IS NULL)
    ORDER BY i.ord
    ON CONFLICT (queue, singleton_key) WHERE singleton_key IS NOT NULL AND state IN ('pending', 'active', 'claimed')
    DO NOTHING
    RETURNING job.id
  )
  SELECT i.ord,
         coalesce(ins.id, :SCHEMA.singleton_holder(p_queue, i.singleton_key, v_now)),
         i.first_id <> i.new_id OR ins.id IS NULL
  FROM input i LEFT JOIN inserted ins ON ins.id = i.first_id
  ORDER BY i.ord;
  END IF;

  IF p_notify THEN
    PERFORM pg_notify(':CHANNEL', p_queue);
  END IF;
END $$;
