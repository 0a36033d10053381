-- Cap slots: a queue with `concurrency = N` owns slot rows 1..N, and a running job of a
-- capped queue holds one (`job.slot`). How slots are taken, handed over and freed:
-- sql/functions/slots.sql.
CREATE TABLE :SCHEMA.slot (
  queue  text    NOT NULL,
  n      integer NOT NULL,
  job_id bigint,
  PRIMARY KEY (queue, n)
);

ALTER TABLE :SCHEMA.job ADD COLUMN slot integer;

-- Queues capped before this version get their slots now, and each job running on one of
-- them holds a slot (numbered past the cap when more run than it allows, as after a cap
-- is lowered), so the running jobs count against the cap from the first claim on.
INSERT INTO :SCHEMA.slot (queue, n)
SELECT q.name, g FROM :SCHEMA.queue q, generate_series(1, q.concurrency) g
WHERE q.concurrency IS NOT NULL;
WITH running AS (
  SELECT j.id, j.queue, row_number() OVER (PARTITION BY j.queue ORDER BY j.id)::integer AS n
  FROM :SCHEMA.job j JOIN :SCHEMA.queue q ON q.name = j.queue
  WHERE j.state = 'active' AND q.concurrency IS NOT NULL
), held AS (
  INSERT INTO :SCHEMA.slot (queue, n, job_id) SELECT queue, n, id FROM running
  ON CONFLICT (queue, n) DO UPDATE SET job_id = excluded.job_id
)
UPDATE :SCHEMA.job j SET slot = r.n FROM running r WHERE j.id = r.id;
