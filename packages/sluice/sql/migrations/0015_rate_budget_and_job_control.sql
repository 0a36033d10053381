-- Admission by rate and by budget, and what a handler controls of its own job.
-- A queue may bound the jobs it starts, and the units they cost, in every window of a given
-- length (sql/functions/rate.sql). Each start of such a queue is a row of job_start, kept
-- for the longest window and pruned by the tick.
ALTER TABLE :SCHEMA.queue
  ADD COLUMN rate_count integer CHECK (rate_count > 0),
  ADD COLUMN rate_period_ms integer CHECK (rate_period_ms > 0),
  ADD COLUMN budget_units bigint CHECK (budget_units > 0),
  ADD COLUMN budget_period_ms integer CHECK (budget_period_ms > 0),
  -- Shedding on time: a send whose projected wait (the jobs ready ahead, at the rate and
  -- budget) passes this is refused.
  ADD COLUMN max_wait_ms integer CHECK (max_wait_ms > 0),
  ADD CONSTRAINT queue_rate_whole CHECK ((rate_count IS NULL) = (rate_period_ms IS NULL)),
  ADD CONSTRAINT queue_budget_whole CHECK ((budget_units IS NULL) = (budget_period_ms IS NULL));

-- What a job counts against its queue's budget when it starts.
ALTER TABLE :SCHEMA.job ADD COLUMN cost integer NOT NULL DEFAULT 1 CHECK (cost > 0);

CREATE TABLE :SCHEMA.job_start (
  queue text NOT NULL,
  started_at timestamptz NOT NULL,
  units integer NOT NULL,
  job_id bigint NOT NULL
);
CREATE INDEX job_start_window ON :SCHEMA.job_start (queue, started_at);

-- send takes the job's cost.
DROP FUNCTION IF EXISTS :SCHEMA.send(text, jsonb, text, text, timestamptz, double precision, integer, integer, timestamptz, boolean);

-- retry_or_dead takes discards and snoozes.
DROP FUNCTION IF EXISTS :SCHEMA.retry_or_dead(bigint[], uuid[], jsonb[], jsonb, timestamptz, boolean, boolean);

-- A job's own time limit: its handler's signal aborts after this long, and the attempt fails.
ALTER TABLE :SCHEMA.job ADD COLUMN timeout_ms integer CHECK (timeout_ms > 0);

-- A cancel of a running job is a request: the job stays active, holding its lease, its cap
-- slot and its key's room, until its handler returns (its worker is told at once by a
-- notification); it then ends cancelled, unless the handler completed it anyway.
ALTER TABLE :SCHEMA.job ADD COLUMN cancel_requested_at timestamptz;
