-- A start report locks, with its jobs, those its statement settles after it (report_starts,
-- functions/rate.sql, gains `p_settling`): the five-argument form goes.
DROP FUNCTION IF EXISTS :SCHEMA.report_starts(bigint[], uuid[], integer[], timestamptz, boolean);
