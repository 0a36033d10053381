-- Admission by rate and budget: a queue may bound the jobs it starts (`rate_count` in every
-- window of `rate_period_ms`) and the units they cost (`budget_units` in every window of
-- `budget_period_ms`, a job's `cost` counted when it starts); and the same for each key
-- (`key_rate_count` per `key_rate_period_ms`, `key_budget_units` per `key_budget_period_ms`).
--
--   start_room(queue row, now)          → (jobs, units): what may still start now (NULL: no bound)
--   key_start_room(queue row, key, now) → (jobs, units): the same for one key
--   key_start_at(queue row, key, cost, now) → when the key's next job (of that cost) may start
--                                          (NULL: no bound holds it back)
--   next_start_ms(queue, now)           → ms until the next job may start (0: now; NULL: no bound)
--
-- Guarantees:
-- - Exact across processes, on the database clock: claim() (claim.sql) counts a queue's
--   starts under a lock per queue and records its own (job_start) before the lock is
--   released, at the time the lock is held; so the starts of every window of the period,
--   closed at both ends, stay within the bound. A sliding window, not a fixed one: there
--   is no boundary at which twice the rate could pass.
-- - Per key the same: a claim counts a key's starts in a statement after it took the key's
--   lock (pick_per_key, claim.sql) and records them (job_start.key) before the lock is
--   released. A count reads every start from the window's beginning on (none is in the
--   future of a later claim's count), so the bound holds whatever order the claims' clocks
--   were read in. Jobs without a key are not bound per key.
-- - A job held back by a rate or a budget stays pending: no attempt is spent. A key held
--   back is passed over: the other keys take their turns.
-- - A budget is taken in claim order (per key: in the key's order): a job whose cost does
--   not fit waits, and so do the jobs behind it, so a costly job is never starved by cheap
--   ones.
-- - job_start keeps each start for the queue's longest window; the maintenance tick prunes
--   what is older (sql/queries/maintenance.sql).

CREATE OR REPLACE FUNCTION :SCHEMA.start_room(q :SCHEMA.queue, p_now timestamptz, OUT jobs integer, OUT units bigint)
LANGUAGE plpgsql AS $$
BEGIN
  IF q.rate_count IS NOT NULL THEN
    SELECT q.rate_count - count(*) INTO jobs FROM :SCHEMA.job_start s
    WHERE s.queue = q.name AND s.started_at >= p_now - q.rate_period_ms * interval '1 millisecond';
  END IF;
  IF q.budget_units IS NOT NULL THEN
    SELECT q.budget_units - coalesce(sum(s.units), 0) INTO units FROM :SCHEMA.job_start s
    WHERE s.queue = q.name AND s.started_at >= p_now - q.budget_period_ms * interval '1 millisecond';
  END IF;
END $$;

CREATE OR REPLACE FUNCTION :SCHEMA.key_start_room(q :SCHEMA.queue, p_key text, p_now timestamptz, OUT jobs integer, OUT units bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF q.key_rate_count IS NOT NULL THEN
    SELECT q.key_rate_count - count(*) INTO jobs FROM :SCHEMA.job_start s
    WHERE s.queue = q.name AND s.key = p_key AND s.started_at >= p_now - q.key_rate_period_ms * interval '1 millisecond';
  END IF;
  IF q.key_budget_units IS NOT NULL THEN
    SELECT q.key_budget_units - coalesce(sum(s.units), 0) INTO units FROM :SCHEMA.job_start s
    WHERE s.queue = q.name AND s.key = p_key AND s.started_at >= p_now - q.key_budget_period_ms * interval '1 millisecond';
  END IF;
END $$;

-- When a key's rate and budget let its next job start: once the starts that keep its
-- window full have left it (NULL: nothing holds it back now).
CREATE OR REPLACE FUNCTION :SCHEMA.key_start_at(q :SCHEMA.queue, p_key text, p_cost integer, p_now timestamptz)
RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_rate_at timestamptz;
  v_budget_at timestamptz;
BEGIN
  IF q.key_rate_count IS NOT NULL THEN
    SELECT s.started_at + q.key_rate_period_ms * interval '1 millisecond' INTO v_rate_at
    FROM :SCHEMA.job_start s
    WHERE s.queue = q.name AND s.key = p_key AND s.started_at >= p_now - q.key_rate_period_ms * interval '1 millisecond'
    ORDER BY s.started_at DESC OFFSET q.key_rate_count - 1 LIMIT 1;
  END IF;
  IF q.key_budget_units IS NOT NULL THEN
    SELECT x.started_at + q.key_budget_period_ms * interval '1 millisecond' INTO v_budget_at
    FROM (
      SELECT s.started_at, sum(s.units) OVER (ORDER BY s.started_at DESC, s.job_id DESC) AS newer
      FROM :SCHEMA.job_start s
      WHERE s.queue = q.name AND s.key = p_key AND s.started_at >= p_now - q.key_budget_period_ms * interval '1 millisecond'
    ) x
    WHERE x.newer + p_cost > q.key_budget_units
    ORDER BY x.started_at DESC LIMIT 1;
  END IF;
  RETURN greatest(v_rate_at, v_budget_at);
END $$;

-- When the rate and the budget next let a job start: once the starts that keep the window
-- full have left it. For the budget, the job waiting first in claim order (cost 1 if none
-- is ready) must fit.
--
-- Per key: the earliest time any key with a job due may start one, among the keys the
-- next claims visit first (from the cursor on, at most 100: the cost is bounded, and a
-- later key is found by the worker's poll). A job without a key, or a key no bound holds
-- back, may start now; a key at its perKeyConcurrency is left out (a completion wakes
-- the workers).
CREATE OR REPLACE FUNCTION :SCHEMA.next_start_ms(p_queue text, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, clock_timestamp());
  v_rate_at timestamptz;
  v_budget_at timestamptz;
  v_key_at timestamptz;
  v_cost integer;
  v_cursor text;
  v_from text;
  v_key text;
  v_priority integer;
  v_run_at timestamptz;
  v_wrapped boolean := false;
  v_at timestamptz;
BEGIN
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  IF q.name IS NULL OR (q.rate_count IS NULL AND q.budget_units IS NULL
                        AND q.key_rate_count IS NULL AND q.key_budget_units IS NULL) THEN
    RETURN NULL;
  END IF;
  IF q.rate_count IS NOT NULL THEN
    -- The rate_count-th newest start in the window: while it is in, the window is full.
    SELECT s.started_at + q.rate_period_ms * interval '1 millisecond' INTO v_rate_at
    FROM :SCHEMA.job_start s
    WHERE s.queue = p_queue AND s.started_at >= v_now - q.rate_period_ms * interval '1 millisecond'
    ORDER BY s.started_at DESC OFFSET q.rate_count - 1 LIMIT 1;
  END IF;
  IF q.budget_units IS NOT NULL THEN
    SELECT j.cost INTO v_cost FROM :SCHEMA.job j
    WHERE j.queue = p_queue AND j.state = 'pending' AND j.run_at <= v_now
    ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1;
    -- The newest start that, with every start after it and the waiting job, passes the budget.
    SELECT x.started_at + q.budget_period_ms * interval '1 millisecond' INTO v_budget_at
    FROM (
      SELECT s.started_at, sum(s.units) OVER (ORDER BY s.started_at DESC, s.job_id DESC) AS newer
      FROM :SCHEMA.job_start s
      WHERE s.queue = p_queue AND s.started_at >= v_now - q.budget_period_ms * interval '1 millisecond'
    ) x
    WHERE x.newer + coalesce(v_cost, 1) > q.budget_units
    ORDER BY x.started_at DESC LIMIT 1;
  END IF;
  IF (q.key_rate_count IS NOT NULL OR q.key_budget_units IS NOT NULL) AND NOT EXISTS (
       SELECT 1 FROM :SCHEMA.job j
       WHERE j.queue = p_queue AND j.state = 'pending' AND j.key IS NULL AND j.run_at <= v_now) THEN
    SELECT c.key INTO v_cursor FROM :SCHEMA.key_cursor c WHERE c.queue = p_queue;
    v_from := coalesce(v_cursor, '');
    FOR v_step IN 1..100 LOOP
      -- The next key with a pending job: its most urgent one (an index probe).
      SELECT j.key, j.priority, j.run_at, j.cost INTO v_key, v_priority, v_run_at, v_cost FROM :SCHEMA.job j
      WHERE j.queue = p_queue AND j.state = 'pending' AND j.key > v_from
      ORDER BY j.key, j.priority DESC, j.run_at, j.id LIMIT 1;
      IF NOT FOUND OR (v_wrapped AND v_key > v_cursor) THEN
        EXIT WHEN v_wrapped OR v_cursor IS NULL;
        v_wrapped := true;
        v_from := '';
        CONTINUE;
      END IF;
      v_from := v_key;
      CONTINUE WHEN v_run_at > v_now AND NOT :SCHEMA.key_has_ready_job(p_queue, v_key, v_priority, v_now);
      CONTINUE WHEN q.per_key_concurrency IS NOT NULL AND (
        SELECT count(*) FROM :SCHEMA.job a
        WHERE a.queue = p_queue AND a.state = 'active' AND a.key = v_key) >= q.per_key_concurrency;
      -- A key whose first job is not due: its due one's cost is not read (1 is the earliest).
      v_at := coalesce(:SCHEMA.key_start_at(q, v_key, CASE WHEN v_run_at <= v_now THEN v_cost ELSE 1 END, v_now), v_now);
      v_key_at := least(v_key_at, v_at);
      IF v_key_at <= v_now THEN
        v_key_at := NULL; -- a key may start now
        EXIT;
      END IF;
    END LOOP;
  END IF;
  RETURN greatest(0, ceil(extract(epoch FROM greatest(v_rate_at, v_budget_at, v_key_at) - v_now) * 1000) + 1)::integer;
END $$;
