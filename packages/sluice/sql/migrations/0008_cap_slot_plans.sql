-- Drops the claim signature this version replaced (claim gained `p_in_hand`).
DROP FUNCTION IF EXISTS :SCHEMA.claim(text, integer, text, timestamptz, integer);
