-- Per queue and state row estimates for the gauges past their exact bound
-- (sql/functions/counts.sql): the planner then reads the combination from a most-common-
-- values list instead of multiplying each column's frequency.
CREATE STATISTICS :SCHEMA.job_queue_state (mcv) ON queue, state FROM :SCHEMA.job;
