-- Drops the send signature this version replaced (a row of OUT parameters instead of a set).
DROP FUNCTION IF EXISTS :SCHEMA.send(text, jsonb, text, text, timestamptz, double precision, integer, integer, timestamptz, boolean);
