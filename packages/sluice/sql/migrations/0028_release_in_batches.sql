-- A stopping worker gives its jobs back in one statement (release_jobs, functions/cancel.sql).
DROP FUNCTION IF EXISTS :SCHEMA.release_job(bigint, uuid, timestamptz);
