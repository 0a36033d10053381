-- Admission by rate and by budget, and what a handler controls of its own job.
-- A queue may bound the jobs it starts, and the units they cost, in every window of a given
-- length, for the whole queue and for each key (sql/functions/rate.sql). Each start of such
-- a queue is a row of job_start, kept for the longest window and pruned by the tick.
ALTER TABLE :SCHEMA.queue
  ADD COLUMN rate_count integer CHECK (rate_count > 0),
  ADD COLUMN rate_period_ms integer CHECK (rate_period_ms > 0),
  ADD COLUMN budget_units bigint CHECK (budget_units > 0),
  ADD COLUMN budget_period_ms integer CHECK (budget_period_ms > 0),
  -- Shedding on time: a send whose projected wait (the jobs ready ahead, at the rate and
  -- budget) passes this is refused.
  ADD COLUMN max_wait_ms integer CHECK (max_wait_ms > 0),
  ADD COLUMN key_rate_count integer CHECK (key_rate_count > 0),
  ADD COLUMN key_rate_period_ms integer CHECK (key_rate_period_ms > 0),
  ADD COLUMN key_budget_units bigint CHECK (key_budget_units > 0),
  ADD COLUMN key_budget_period_ms integer CHECK (key_budget_period_ms > 0),
  ADD CONSTRAINT queue_rate_whole CHECK ((rate_count IS NULL) = (rate_period_ms IS NULL)),
  ADD CONSTRAINT queue_budget_whole CHECK ((budget_units IS NULL) = (budget_period_ms IS NULL)),
  ADD CONSTRAINT queue_key_rate_whole CHECK ((key_rate_count IS NULL) = (key_rate_period_ms IS NULL)),
  ADD CONSTRAINT queue_key_budget_whole CHECK ((key_budget_units IS NULL) = (key_budget_period_ms IS NULL));

-- What a job counts against its queue's budget when it starts.
ALTER TABLE :SCHEMA.job ADD COLUMN cost integer NOT NULL DEFAULT 1 CHECK (cost > 0);

-- True while a job claimed ahead on a queue with a rate or a budget holds a reservation
-- for its start, not yet recorded (sql/functions/rate.sql).
ALTER TABLE :SCHEMA.job ADD COLUMN start_reserved boolean;

CREATE TABLE :SCHEMA.job_start (
  queue text NOT NULL,
  started_at timestamptz NOT NULL,
  units integer NOT NULL,
  job_id bigint NOT NULL,
  -- The job's key, only on a queue with a per-key rate or budget (what its windows count by).
  key text
);
CREATE INDEX job_start_window ON :SCHEMA.job_start (queue, started_at);
CREATE INDEX job_start_key_window ON :SCHEMA.job_start (queue, key, started_at) WHERE key IS NOT NULL;

-- Starts granted to a worker for a short time while its queue's window has room to spare
-- (sql/functions/rate.sql): counted in full in every window their time touches.
CREATE TABLE :SCHEMA.rate_grant (
  queue text NOT NULL,
  worker_id text NOT NULL,
  granted_at timestamptz NOT NULL,
  until timestamptz NOT NULL,
  jobs integer NOT NULL,
  used integer NOT NULL DEFAULT 0,
  -- The rate it was granted under: a changed rate takes no more from it.
  rate_count integer NOT NULL,
  rate_period_ms integer NOT NULL,
  PRIMARY KEY (queue, worker_id, granted_at)
);
CREATE INDEX rate_grant_window ON :SCHEMA.rate_grant (queue, until);

-- take_over_slots records the starts its moves give to jobs claimed ahead on a rated queue.
DROP FUNCTION IF EXISTS :SCHEMA.take_over_slots(text, integer[], bigint[], uuid[]);

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
