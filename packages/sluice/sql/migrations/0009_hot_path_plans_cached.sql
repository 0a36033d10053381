-- The worker's hot path plans each statement once per connection, not once per call.
--
-- PL/pgSQL caches a plan per statement, but by default it builds a fresh "custom" plan
-- for every call for as long as that looks cheaper than the cached generic one; with the
-- planner settings of 0008 (scans and joins it must not choose are costed as if they were
-- huge) the comparison rarely favours the generic plan, so claim() and
-- complete_and_claim() re-planned most of their statements on every call. Planning is a
-- large share of a claim: it reads the size of every relation a statement touches (a
-- system call each), and a fused completion and claim runs about ten statements. Under
-- 0008's settings every one of them has a single sensible plan — primary-key lookups, the
-- ready index read in order — whatever the parameter values, so the generic plan is
-- always taken. Measured on 2 cores with 4 connections looping completion and claim
-- (10 jobs each way): about 15% more jobs per second, uncapped and capped alike.
-- The per-key walk (pick_per_key) runs under the claim's setting; its statements settled
-- on generic plans after their first calls in the default mode already (0.63 ms a call
-- either way, one connection claiming 20 jobs a call over 100 keys).
--
-- take_slots() and free_slots() were SQL functions, which PostgreSQL parses and plans
-- again on every call; as PL/pgSQL they keep their plans too. Same statements, same
-- planner settings.
ALTER FUNCTION :SCHEMA.claim(text, integer, text, timestamptz, integer, integer[])
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION :SCHEMA.complete_and_claim(bigint[], uuid[], jsonb[], timestamptz, boolean, text, integer, text, integer)
  SET plan_cache_mode = force_generic_plan;

CREATE OR REPLACE FUNCTION :SCHEMA.take_slots(p_queue text, p_cap integer, p_want integer)
RETURNS integer[] LANGUAGE plpgsql
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_sort = off SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  RETURN (SELECT coalesce(array_agg(s.n ORDER BY s.n), '{}') FROM (
    SELECT n FROM :SCHEMA.slot
    WHERE queue = p_queue AND job_id IS NULL AND n <= p_cap
    ORDER BY n LIMIT greatest(p_want, 0)
    FOR UPDATE SKIP LOCKED
  ) s);
END $$;

CREATE OR REPLACE FUNCTION :SCHEMA.free_slots(p_queue text, p_slots integer[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE :SCHEMA.slot s SET job_id = NULL FROM unnest(p_slots) AS f(n) WHERE s.queue = p_queue AND s.n = f.n;
END $$;
