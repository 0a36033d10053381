-- Cron schedules (src/maintenance/schedules.ts).

-- name: SchedulePut
-- (Times are kept to the millisecond so the tick's compare-and-set can match them exactly.)
-- A new schedule starts from now: slots before its creation are never enqueued. An
-- existing one keeps its progress unless its cron or zone changed.
INSERT INTO :SCHEMA.schedule AS s (name, cron, tz, queue, data, catch_up, last_slot_at)
VALUES ($1, $2, $3, $4, $5, $6, date_trunc('milliseconds', coalesce($7::timestamptz, now())))
ON CONFLICT (name) DO UPDATE SET
  cron = excluded.cron,
  tz = excluded.tz,
  queue = excluded.queue,
  data = excluded.data,
  catch_up = excluded.catch_up,
  last_slot_at = CASE WHEN s.cron = excluded.cron AND s.tz = excluded.tz THEN s.last_slot_at
                      ELSE excluded.last_slot_at END,
  updated_at = now()
RETURNING *;

-- name: ScheduleRemove
DELETE FROM :SCHEMA.schedule WHERE name = $1 RETURNING name;

-- name: ScheduleList
SELECT * FROM :SCHEMA.schedule ORDER BY name;
