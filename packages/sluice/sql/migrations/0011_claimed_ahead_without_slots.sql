-- Drops the complete_and_claim signature this version replaced (it gained the moves of
-- jobs claimed ahead into slots).
DROP FUNCTION IF EXISTS :SCHEMA.complete_and_claim(bigint[], uuid[], jsonb[], timestamptz, boolean, text, integer, text, integer);
