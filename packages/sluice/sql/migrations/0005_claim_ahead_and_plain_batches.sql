-- Round-robin cursor for per-key claims, the keyless-pending index, and vacuum settings
-- for the job table. Drops the signatures of complete_and_claim and claim this version
-- replaced.
DROP FUNCTION IF EXISTS :SCHEMA.complete_and_claim(bigint[], uuid[], jsonb[], timestamptz, boolean, text, integer, text);
DROP FUNCTION IF EXISTS :SCHEMA.claim(text, integer, text, timestamptz);

-- Where a per-key claim resumes its round-robin: the last key it served.
ALTER TABLE :SCHEMA.queue ADD COLUMN key_cursor text;

-- A per-key claim also offers jobs without a key (one more turn in the round-robin).
-- Found through job_ready_idx, that search read past every pending keyed job when there
-- were none: O(backlog) per claim. This index holds only keyless pending jobs, so the
-- search is a probe whatever the backlog; it costs an index entry per keyless send.
CREATE INDEX job_keyless_pending_idx ON :SCHEMA.job (queue, priority DESC, run_at, id)
  WHERE state = 'pending' AND key IS NULL;

-- Every claim and completion leaves dead entries in the claim's partial indexes, and the
-- claim walks past them until a vacuum removes them. The default trigger (20% of the
-- table dead) lets a table of a million finished jobs collect 200,000 dead rows first;
-- vacuum the job table after 1,000 + 1% instead, and without cost-based pauses.
ALTER TABLE :SCHEMA.job SET (
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_analyze_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_vacuum_cost_delay = 0
);
