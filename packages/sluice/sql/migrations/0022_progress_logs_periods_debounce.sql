-- What a running job's handler reports (progress, log lines: sql/functions/notes.sql), and
-- singleton keys held over a period and debounced sends (sql/functions/unique.sql). Every
-- column is NULL on a job that uses none of them: such jobs pay nothing.
ALTER TABLE :SCHEMA.job
  -- The last progress its handler reported (any JSON value); NULL until one did.
  ADD COLUMN progress jsonb,
  -- Log lines written for it so far (the number of the last one); NULL until one was.
  ADD COLUMN log_count integer,
  -- Sent with a singleton period: its key is held until then, even once it has completed.
  ADD COLUMN singleton_until timestamptz,
  -- Sent debounced: a later send with this key replaces its data and run time until it starts.
  ADD COLUMN debounce_key text;

-- A job's log lines, the newest kept (notes.sql), numbered from 1 in the order written.
-- Deleted with their job by a trigger, not a foreign key (see migration 0019).
CREATE TABLE :SCHEMA.job_log (
  job_id bigint NOT NULL,
  seq integer NOT NULL,
  -- The attempt that wrote it.
  attempt integer NOT NULL,
  at timestamptz NOT NULL,
  line text NOT NULL,
  PRIMARY KEY (job_id, seq)
);

-- The jobs that hold their key past their end: only jobs sent with a period.
CREATE INDEX job_singleton_period_idx ON :SCHEMA.job (queue, singleton_key, singleton_until)
  WHERE singleton_until IS NOT NULL;
-- The debounced jobs not started yet: only jobs sent debounced.
CREATE INDEX job_debounce_idx ON :SCHEMA.job (queue, debounce_key)
  WHERE debounce_key IS NOT NULL AND state = 'pending';
