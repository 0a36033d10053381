-- What a queue's rate and budget have used of their current windows, and the ready jobs
-- they hold back: read by stats (sql/queries/queue.sql: QueueStats) and the metrics
-- scrape (MetricsSnapshot), never by a claim.
--
--   start_use(queue row, now) → (window_starts, window_units, held)
--
-- - window_starts: starts in the last rate_period_ms (NULL without a rate); above
--   rate_count only after the rate was lowered.
-- - window_units: units of cost started in the last budget_period_ms (NULL without a budget).
-- - held: ready jobs beyond what the rate and the budget let start now, counted the way a
--   claim takes them (rate.sql, claim.sql): the room left in the rate's window, and the
--   jobs, in claim order, whose running total of cost fits the budget's room (a job that
--   does not fit holds back the jobs behind it). All the ready jobs while a window is full;
--   NULL without a rate and a budget. Caps, per-key limits and pauses are not counted here.
--   Past count_bound() ready jobs, an estimate (counts.sql), as the ready count is.
-- - A read of the table at `now`, without the queue's rate lock: a claim running at the
--   same time may have started jobs it does not see yet.

CREATE OR REPLACE FUNCTION :SCHEMA.start_use(q :SCHEMA.queue, p_now timestamptz,
                                             OUT window_starts integer, OUT window_units bigint, OUT held bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_room integer;
  v_units bigint;
  v_ready bigint;
  v_fit bigint;
BEGIN
  IF q.rate_count IS NULL AND q.budget_units IS NULL THEN
    RETURN;
  END IF;
  SELECT r.jobs, r.units INTO v_room, v_units FROM :SCHEMA.start_room(q, p_now) r;
  window_starts := q.rate_count - v_room;
  window_units := q.budget_units - v_units;
  -- Bounded as stats' own counts are (counts.sql): past the bound, an estimate.
  v_ready := :SCHEMA.ready_count(q.name, p_now);
  v_fit := least(v_ready, greatest(coalesce(v_room, v_ready), 0));
  IF v_units IS NOT NULL AND v_fit > 0 THEN
    -- Every job costs at least 1: no more than v_units of them can fit.
    SELECT count(*) INTO v_fit FROM (
      SELECT sum(j.cost) OVER (ORDER BY j.priority DESC, j.run_at, j.id) AS spent
      FROM :SCHEMA.job j
      WHERE j.queue = q.name AND j.state = 'pending' AND j.run_at <= p_now
      ORDER BY j.priority DESC, j.run_at, j.id
      LIMIT least(v_fit, greatest(v_units, 0))
    ) x
    WHERE x.spent <= v_units;
  END IF;
  held := v_ready - v_fit;
END $$;
