-- A queue's gauges, bounded in cost however many jobs it holds: read by stats
-- (QueueStats), the metrics scrape (MetricsSnapshot) and the maintenance tick's minute
-- sample (QueueMinuteSample), never by a send or a claim.
--
--   estimated_rows(where) → the planner's estimate
--   bounded_count(where, bound) → (n, estimated)
--   pending_counts(queue, now, bound) → (ready, scheduled, oldest ready run_at)
--   ready_count(queue, now) → ready jobs, bounded (for start_use, use.sql)
--   queue_counts(queue, now, finished) → each gauge, and which of them are estimates
--
-- A count is exact up to `count_bound()` jobs (100,000): it reads at most that many
-- entries of the partial index that holds them. Past it, the count is the planner's
-- estimate for the same condition (`EXPLAIN`, from the table's statistics, which the
-- extended statistics job_queue_state keep per queue and state: migration 0025), never
-- less than what was counted, and named in `estimated`. So a stats call on a queue of a
-- million ready jobs costs what one of a hundred thousand does, and says which are
-- approximate. The estimate is as fresh as the last ANALYZE (autovacuum's, by default).
--
-- Ready and scheduled jobs are counted per priority, as ranges of job_ready_idx (queue,
-- priority DESC, run_at), so that neither count reads the other's jobs; and the lag (the
-- age of the oldest ready job) is exact at any size: each priority's oldest job is its
-- first entry, one index probe per priority in use.

CREATE OR REPLACE FUNCTION :SCHEMA.count_bound() RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT 100000';

-- The planner's estimate of the jobs matching `p_where`, a condition on :SCHEMA.job built
-- by the caller with its values quoted (format's %L).
CREATE OR REPLACE FUNCTION :SCHEMA.estimated_rows(p_where text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM :SCHEMA.job WHERE ' || p_where INTO v_plan;
  RETURN round((v_plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision)::bigint;
END $$;

-- Jobs matching `p_where` (as for estimated_rows), for a condition an index leads with:
-- exact up to p_bound, else the planner's estimate, never less than what was counted.
CREATE OR REPLACE FUNCTION :SCHEMA.bounded_count(p_where text, p_bound integer, OUT n bigint, OUT estimated boolean)
LANGUAGE plpgsql AS $$
BEGIN
  IF p_where IS NULL THEN
    RETURN;
  END IF;
  EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM :SCHEMA.job WHERE %s LIMIT %s) x', p_where, p_bound + 1) INTO n;
  estimated := n > p_bound;
  IF estimated THEN
    n := greatest(n, :SCHEMA.estimated_rows(p_where));
  END IF;
END $$;

-- Pending jobs by priority: job_ready_idx orders each priority's jobs by run_at, so its
-- due and its future jobs are two ranges, each counted up to p_bound, and its first entry
-- is its oldest. One index probe per priority in use finds them. Past the bound, a count
-- is estimated from the planner's estimate of the queue's pending jobs (which the
-- statistics job_queue_state keep per queue and state): that less the other count when
-- the other is exact, else split as the planner splits them by run_at.
CREATE OR REPLACE FUNCTION :SCHEMA.pending_counts(
  p_queue text, p_now timestamptz, p_bound integer,
  OUT ready bigint, OUT scheduled bigint, OUT oldest_ready_at timestamptz,
  OUT ready_estimated boolean, OUT scheduled_estimated boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_first record;
  v_pending bigint;
  v_split double precision;
BEGIN
  ready := 0;
  scheduled := 0;
  FOR v_first IN
    WITH RECURSIVE first_of AS (
      (SELECT j.priority, j.run_at FROM :SCHEMA.job j
       WHERE j.queue = p_queue AND j.state = 'pending' ORDER BY j.priority DESC, j.run_at LIMIT 1)
      UNION ALL
      SELECT n.priority, n.run_at FROM first_of f CROSS JOIN LATERAL (
        SELECT j.priority, j.run_at FROM :SCHEMA.job j
        WHERE j.queue = p_queue AND j.state = 'pending' AND j.priority < f.priority
        ORDER BY j.priority DESC, j.run_at LIMIT 1) n
    )
    SELECT f.priority, f.run_at FROM first_of f
  LOOP
    IF v_first.run_at <= p_now THEN
      oldest_ready_at := least(oldest_ready_at, v_first.run_at);
      IF ready <= p_bound THEN
        ready := ready + (SELECT count(*) FROM (
          SELECT 1 FROM :SCHEMA.job j
          WHERE j.queue = p_queue AND j.state = 'pending' AND j.priority = v_first.priority AND j.run_at <= p_now
          LIMIT p_bound + 1 - ready) x);
      END IF;
    END IF;
    IF scheduled <= p_bound THEN
      scheduled := scheduled + (SELECT count(*) FROM (
        SELECT 1 FROM :SCHEMA.job j
        WHERE j.queue = p_queue AND j.state = 'pending' AND j.priority = v_first.priority AND j.run_at > p_now
        LIMIT p_bound + 1 - scheduled) x);
    END IF;
  END LOOP;
  ready_estimated := ready > p_bound;
  scheduled_estimated := scheduled > p_bound;
  IF ready_estimated OR scheduled_estimated THEN
    v_pending := :SCHEMA.estimated_rows(format('queue = %L AND state = ''pending''', p_queue));
    IF NOT scheduled_estimated THEN
      ready := greatest(ready, v_pending - scheduled);
    ELSIF NOT ready_estimated THEN
      scheduled := greatest(scheduled, v_pending - ready);
    ELSE
      v_split := :SCHEMA.estimated_rows(format('queue = %L AND state = ''pending'' AND run_at <= %L', p_queue, p_now))::double precision
        / greatest(v_pending, 1);
      ready := greatest(ready, round(v_pending * least(v_split, 1))::bigint);
      scheduled := greatest(scheduled, v_pending - ready);
    END IF;
  END IF;
END $$;

-- The ready jobs of a queue, bounded as its gauges are.
CREATE OR REPLACE FUNCTION :SCHEMA.ready_count(p_queue text, p_now timestamptz) RETURNS bigint LANGUAGE sql AS $$
  SELECT p.ready FROM :SCHEMA.pending_counts(p_queue, p_now, :SCHEMA.count_bound()) p
$$;

-- Completed and cancelled only with p_finished (NULL otherwise): the metrics count their
-- ends as counters instead.
CREATE OR REPLACE FUNCTION :SCHEMA.queue_counts(
  p_queue text, p_now timestamptz, p_finished boolean,
  OUT ready bigint, OUT scheduled bigint, OUT waiting bigint, OUT active bigint, OUT claimed_ahead bigint,
  OUT completed bigint, OUT cancelled bigint, OUT dead bigint, OUT oldest_ready_age_seconds double precision,
  OUT estimated text[])
LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_bound integer := :SCHEMA.count_bound();
  v_queue text := format('queue = %L', p_queue);
  v_oldest timestamptz;
  v_ready_estimated boolean;
  v_scheduled_estimated boolean;
  v_count record;
BEGIN
  estimated := '{}';
  SELECT p.ready, p.scheduled, p.oldest_ready_at, p.ready_estimated, p.scheduled_estimated
  INTO ready, scheduled, v_oldest, v_ready_estimated, v_scheduled_estimated
  FROM :SCHEMA.pending_counts(p_queue, v_now, v_bound) p;
  oldest_ready_age_seconds := coalesce(extract(epoch FROM v_now - v_oldest), 0);
  IF v_ready_estimated THEN
    estimated := estimated || 'ready'::text;
  END IF;
  IF v_scheduled_estimated THEN
    estimated := estimated || 'scheduled'::text;
  END IF;

  -- The others each lead with the queue in their partial index.
  FOR v_count IN
    SELECT c.name, b.n, b.estimated
    FROM (VALUES
      (1, 'waiting', format('%s AND waiting_parents IS NOT NULL AND state = ''waiting''', v_queue)),
      (2, 'completed', CASE WHEN p_finished THEN format('%s AND state = ''completed''', v_queue) END),
      (3, 'cancelled', CASE WHEN p_finished THEN format('%s AND state = ''cancelled''', v_queue) END),
      (4, 'dead', format('%s AND state = ''dead''', v_queue))
    ) AS c(ord, name, condition)
    CROSS JOIN LATERAL :SCHEMA.bounded_count(c.condition, v_bound) b
    ORDER BY c.ord
  LOOP
    CASE v_count.name
      WHEN 'waiting' THEN waiting := v_count.n;
      WHEN 'completed' THEN completed := v_count.n;
      WHEN 'cancelled' THEN cancelled := v_count.n;
      ELSE dead := v_count.n;
    END CASE;
    IF v_count.estimated THEN
      estimated := estimated || v_count.name;
    END IF;
  END LOOP;

  -- Running and claimed ahead are held by workers: as many as they have slots. Jobs
  -- claimed ahead on a capped queue wait for a slot (`claimed`, slots.sql): not active yet.
  SELECT count(*) FILTER (WHERE j.state = 'active'), count(*) FILTER (WHERE j.state = 'claimed')
  INTO active, claimed_ahead
  FROM :SCHEMA.job j WHERE j.queue = p_queue AND j.state IN ('active', 'claimed');
END $$;
