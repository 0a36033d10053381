-- A job's links to its parents go with the job through a delete trigger (flow.sql) rather
-- than a foreign key: the key's row trigger on `job` fired on every update of a job, and
-- an after-update row trigger makes each updated row be read again, one more page per job
-- on the paths that claim and complete (docs/PERFORMANCE.md).
ALTER TABLE :SCHEMA.job_parent DROP CONSTRAINT IF EXISTS job_parent_child_id_fkey;
