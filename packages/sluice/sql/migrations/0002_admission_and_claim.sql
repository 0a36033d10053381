-- Admission (send) and claim, as server-side functions.
--
-- Why functions: an exact count needs a lock *and then* a fresh snapshot. Under READ
-- COMMITTED each statement of a plpgsql function takes a new snapshot, so "lock, count,
-- act" costs one round trip and still sees every job committed by the previous lock
-- holder. One SQL statement could not do this: its snapshot predates the lock.
--
-- Errors raised here use the SQLSTATE class SL, mapped to typed errors by the library:
--   SL404 queue not found, SL503 queue full (shed), SL429 key at its limit.
-- Lock namespaces (two-integer advisory locks, scoped to the transaction):
--   (hashtext(':SCHEMA_NAME.pending'), hashtext(queue))      depth admission per queue
--   (hashtext(':SCHEMA_NAME.key'), hashtext(queue/key))       per-key admission
--   (hashtext(':SCHEMA_NAME.claim'), hashtext(queue))         claims on capped queues

CREATE FUNCTION :SCHEMA.raise_queue_not_found(p_queue text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'SL404', MESSAGE = format('queue "%s" does not exist', p_queue);
END $$;

-- Depth admission: refuse when ready depth + incoming would pass max_pending.
-- Counts at most max_pending rows, so its cost is bounded by the threshold, not the backlog.
-- "Ready" is judged at the clock time *after* the lock (or the injected time): jobs sent by
-- the previous lock holders carry their own transaction's now(), which can be later than
-- this transaction's now() if it waited for the lock, and must still count.
CREATE FUNCTION :SCHEMA.admit_depth(q :SCHEMA.queue, p_incoming integer, p_now timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_depth bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.pending'), hashtext(q.name));
  SELECT count(*) INTO v_depth FROM (
    SELECT 1 FROM :SCHEMA.job
    WHERE queue = q.name AND state = 'pending' AND run_at <= coalesce(p_now, clock_timestamp())
    LIMIT q.max_pending
  ) ready;
  IF v_depth + p_incoming > q.max_pending THEN
    RAISE EXCEPTION USING ERRCODE = 'SL503',
      MESSAGE = format('queue "%s" is full (%s ready, limit %s)', q.name, v_depth, q.max_pending),
      HINT = q.retry_after_seconds::text;
  END IF;
END $$;

-- Per-key admission: refuse when the key's pending + active jobs + incoming would pass max_per_key.
CREATE FUNCTION :SCHEMA.admit_key(q :SCHEMA.queue, p_key text, p_incoming integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_load bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.key'), hashtext(q.name || '/' || p_key));
  SELECT count(*) INTO v_load FROM (
    SELECT 1 FROM :SCHEMA.job
    WHERE queue = q.name AND key = p_key AND state IN ('pending', 'active')
    LIMIT q.max_per_key
  ) held;
  IF v_load + p_incoming > q.max_per_key THEN
    RAISE EXCEPTION USING ERRCODE = 'SL429',
      MESSAGE = format('key "%s" has %s jobs in queue "%s" (limit %s)', p_key, v_load, q.name, q.max_per_key),
      DETAIL = p_key,
      HINT = q.retry_after_seconds::text;
  END IF;
END $$;

-- Enqueue one job: idempotency first (a duplicate is not a new admission), then depth and
-- per-key admission under their locks, then the insert and a wake-up.
CREATE FUNCTION :SCHEMA.send(
  p_queue text, p_data jsonb, p_key text, p_singleton_key text, p_run_at timestamptz,
  p_delay_ms double precision, p_priority integer, p_max_attempts integer,
  p_now timestamptz, p_notify boolean)
RETURNS TABLE (id bigint, deduplicated boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, now());
  v_run_at timestamptz;
  v_id bigint;
BEGIN
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  IF NOT FOUND THEN
    PERFORM :SCHEMA.raise_queue_not_found(p_queue);
  END IF;
  v_run_at := coalesce(p_run_at, v_now + coalesce(p_delay_ms, 0) * interval '1 millisecond');

  IF p_singleton_key IS NOT NULL THEN
    SELECT j.id INTO v_id FROM :SCHEMA.job j
    WHERE j.queue = p_queue AND j.singleton_key = p_singleton_key AND j.state IN ('pending', 'active');
    IF FOUND THEN
      RETURN QUERY SELECT v_id, true;
      RETURN;
    END IF;
  END IF;

  IF q.max_pending IS NOT NULL THEN
    PERFORM :SCHEMA.admit_depth(q, 1, p_now);
  END IF;
  IF q.max_per_key IS NOT NULL AND p_key IS NOT NULL THEN
    PERFORM :SCHEMA.admit_key(q, p_key, 1);
  END IF;

  LOOP
    INSERT INTO :SCHEMA.job (queue, data, key, singleton_key, priority, run_at, max_attempts, created_at)
    VALUES (p_queue, p_data, p_key, p_singleton_key, coalesce(p_priority, 0), v_run_at,
            coalesce(p_max_attempts, q.max_attempts), v_now)
    ON CONFLICT (queue, singleton_key) WHERE singleton_key IS NOT NULL AND state IN ('pending', 'active')
    DO NOTHING
    RETURNING job.id INTO v_id;
    IF v_id IS NOT NULL THEN
      IF p_notify AND v_run_at <= v_now THEN
        PERFORM pg_notify(':CHANNEL', p_queue);
      END IF;
      RETURN QUERY SELECT v_id, false;
      RETURN;
    END IF;
    -- A concurrent send with the same singleton key won; return its job (or retry if it
    -- finished in between).
    SELECT j.id INTO v_id FROM :SCHEMA.job j
    WHERE j.queue = p_queue AND j.singleton_key = p_singleton_key AND j.state IN ('pending', 'active');
    IF v_id IS NOT NULL THEN
      RETURN QUERY SELECT v_id, true;
      RETURN;
    END IF;
  END LOOP;
END $$;

-- Enqueue many jobs in one statement. Admission is all-or-nothing: the whole batch is
-- refused if it would pass max_pending, or if any key would pass max_per_key (keys are
-- locked in sorted order, so concurrent batches cannot deadlock). Singleton duplicates,
-- against the table or earlier in the same batch, return the existing job's id.
-- Result rows come back in input order.
CREATE FUNCTION :SCHEMA.send_many(p_queue text, p_items jsonb, p_now timestamptz, p_notify boolean)
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

  IF p_notify THEN
    PERFORM pg_notify(':CHANNEL', p_queue);
  END IF;
END $$;

-- Claim up to p_limit ready jobs for one worker.
--
-- Capped queues (concurrency or per_key_concurrency set) serialize their claims on a
-- transaction-scoped advisory lock and count running jobs after taking it, so the caps
-- are exact across every process. Uncapped queues take no lock and pay nothing.
-- With per_key_concurrency the claim is fair: it walks the distinct ready keys (a loose
-- index scan), takes at most each key's free share, and orders candidates round-robin
-- (first job of every key, then second, ...) within each priority.
CREATE FUNCTION :SCHEMA.claim(p_queue text, p_limit integer, p_worker_id text, p_now timestamptz)
RETURNS SETOF :SCHEMA.job LANGUAGE plpgsql AS $$
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, now());
  v_limit integer := p_limit;
  v_active integer;
BEGIN
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  IF NOT FOUND OR q.paused OR v_limit <= 0 THEN
    RETURN;
  END IF;

  IF q.concurrency IS NOT NULL OR q.per_key_concurrency IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.claim'), hashtext(p_queue));
    IF q.concurrency IS NOT NULL THEN
      SELECT count(*) INTO v_active FROM :SCHEMA.job WHERE queue = p_queue AND state = 'active';
      v_limit := least(v_limit, q.concurrency - v_active);
      IF v_limit <= 0 THEN
        RETURN;
      END IF;
    END IF;
  END IF;

  IF q.per_key_concurrency IS NULL THEN
    RETURN QUERY
    WITH next AS (
      SELECT j.id FROM :SCHEMA.job j
      WHERE j.queue = p_queue AND j.state = 'pending' AND j.run_at <= v_now
      ORDER BY j.priority DESC, j.run_at, j.id
      LIMIT v_limit
      FOR UPDATE SKIP LOCKED
    )
    UPDATE :SCHEMA.job j
    SET state = 'active', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
        lease_expires_at = v_now + q.lease_seconds * interval '1 second',
        started_at = v_now, worker_id = p_worker_id
    FROM next WHERE j.id = next.id
    RETURNING j.*;
  ELSE
    RETURN QUERY
    WITH RECURSIVE keys(key) AS (
      (SELECT j.key FROM :SCHEMA.job j
       WHERE j.queue = p_queue AND j.state = 'pending' AND j.key IS NOT NULL
       ORDER BY j.key LIMIT 1)
      UNION ALL
      SELECT (SELECT j.key FROM :SCHEMA.job j
              WHERE j.queue = p_queue AND j.state = 'pending' AND j.key > k.key
              ORDER BY j.key LIMIT 1)
      FROM keys k WHERE k.key IS NOT NULL
    ), running AS (
      SELECT j.key, count(*) AS n FROM :SCHEMA.job j
      WHERE j.queue = p_queue AND j.state = 'active' AND j.key IS NOT NULL
      GROUP BY j.key
    ), candidates AS (
      SELECT c.id, c.priority, c.run_at, c.rn
      FROM keys k
      LEFT JOIN running r ON r.key = k.key
      CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.run_at,
               row_number() OVER (ORDER BY j.priority DESC, j.run_at, j.id) AS rn
        FROM :SCHEMA.job j
        WHERE j.queue = p_queue AND j.state = 'pending' AND j.key = k.key AND j.run_at <= v_now
        ORDER BY j.priority DESC, j.run_at, j.id
        LIMIT greatest(q.per_key_concurrency - coalesce(r.n, 0), 0)
      ) c
      WHERE k.key IS NOT NULL
      UNION ALL
      -- Jobs without a key are not limited per key; they take their turn as one more key.
      SELECT u.id, u.priority, u.run_at, row_number() OVER (ORDER BY u.priority DESC, u.run_at, u.id)
      FROM (SELECT j.id, j.priority, j.run_at FROM :SCHEMA.job j
            WHERE j.queue = p_queue AND j.state = 'pending' AND j.key IS NULL AND j.run_at <= v_now
            ORDER BY j.priority DESC, j.run_at, j.id LIMIT v_limit) u
    ), next AS (
      SELECT j.id FROM :SCHEMA.job j
      WHERE j.id IN (SELECT c.id FROM candidates c ORDER BY c.priority DESC, c.rn, c.run_at, c.id LIMIT v_limit)
        AND j.state = 'pending'
      FOR UPDATE SKIP LOCKED
    )
    UPDATE :SCHEMA.job j
    SET state = 'active', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
        lease_expires_at = v_now + q.lease_seconds * interval '1 second',
        started_at = v_now, worker_id = p_worker_id
    FROM next WHERE j.id = next.id
    RETURNING j.*;
  END IF;
END $$;
