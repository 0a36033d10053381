-- Admission by rate and budget: a queue may bound the jobs it starts (`rate_count` in every
-- window of `rate_period_ms`) and the units they cost (`budget_units` in every window of
-- `budget_period_ms`, a job's `cost` counted when it starts).
--
--   start_room(queue row, now) → (jobs, units): what may still start now (NULL: no bound)
--   next_start_ms(queue, now)  → ms until the next job may start (0: now; NULL: no bound)
--
-- Guarantees:
-- - Exact across processes, on the database clock: claim() (claim.sql) counts a queue's
--   starts under a lock per queue and records its own (job_start) before the lock is
--   released, at the time the lock is held; so the starts of every window of the period,
--   closed at both ends, stay within the bound. A sliding window, not a fixed one: there
--   is no boundary at which twice the rate could pass.
-- - A job held back by a rate or a budget stays pending: no attempt is spent.
-- - A budget is taken in claim order: a job whose cost does not fit waits, and so do the
--   jobs behind it, so a costly job is never starved by cheap ones.
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

-- When the rate and the budget next let a job start: once the starts that keep the window
-- full have left it. For the budget, the job waiting first in claim order (cost 1 if none
-- is ready) must fit.
CREATE OR REPLACE FUNCTION :SCHEMA.next_start_ms(p_queue text, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, clock_timestamp());
  v_rate_at timestamptz;
  v_budget_at timestamptz;
  v_cost integer;
BEGIN
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  IF q.name IS NULL OR (q.rate_count IS NULL AND q.budget_units IS NULL) THEN
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
  RETURN greatest(0, ceil(extract(epoch FROM greatest(v_rate_at, v_budget_at) - v_now) * 1000) + 1)::integer;
END $$;
