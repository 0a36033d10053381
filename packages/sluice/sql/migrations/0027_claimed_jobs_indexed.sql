-- Jobs claimed ahead count where active ones do: in a key's running jobs (per-key limits)
-- and as a singleton key's holder.
DROP INDEX :SCHEMA.job_active_idx;
CREATE INDEX job_active_idx ON :SCHEMA.job (queue, key) WHERE state IN ('active', 'claimed');
DROP INDEX :SCHEMA.job_singleton_idx;
CREATE UNIQUE INDEX job_singleton_idx ON :SCHEMA.job (queue, singleton_key)
  WHERE singleton_key IS NOT NULL AND state IN ('pending', 'active', 'claimed');

-- Jobs waiting for a slot when this release is installed: `claimed`, as the claims of this
-- release leave them. The triggers of state changes would free their slot 0 or end their
-- reserved starts: dropped here, and created again by the function files after this step.
DROP TRIGGER IF EXISTS job_release_slot ON :SCHEMA.job;
DROP TRIGGER IF EXISTS job_record_reserved_start ON :SCHEMA.job;
UPDATE :SCHEMA.job SET state = 'claimed' WHERE state = 'active' AND slot = 0;
