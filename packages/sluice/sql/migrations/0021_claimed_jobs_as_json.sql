-- complete_and_claim answers each claimed job as `json` built from the columns a worker
-- reads (sql/functions/claim.sql): a new result type, so the old function goes first.
DROP FUNCTION IF EXISTS :SCHEMA.complete_and_claim(bigint[], uuid[], jsonb[], timestamptz, boolean, text, integer, text, integer, bigint[], uuid[]);
