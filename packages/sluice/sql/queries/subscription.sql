-- Subscriptions to jobs' ends (src/queue/subscriptions.ts; written by outbox_ends,
-- sql/functions/outbox.sql).

-- name: SubscriptionSet
-- The subscriptions delivering to queue $1 become exactly those of $2 (a JSON array of
-- {name, events, queues}): the others of that queue are removed, in one statement.
WITH wanted AS (
  SELECT s.name,
         ARRAY(SELECT jsonb_array_elements_text(s.events)) AS events,
         CASE WHEN jsonb_typeof(s.queues) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(s.queues)) END AS queues
  FROM jsonb_to_recordset($2::jsonb) AS s(name text, events jsonb, queues jsonb)
), removed AS (
  DELETE FROM :SCHEMA.subscription o
  WHERE o.queue = $1 AND NOT EXISTS (SELECT 1 FROM wanted w WHERE w.name = o.name)
)
INSERT INTO :SCHEMA.subscription (queue, name, events, queues)
SELECT $1, w.name, w.events, w.queues FROM wanted w
ON CONFLICT (queue, name) DO UPDATE SET events = excluded.events, queues = excluded.queues
RETURNING queue, name, events, queues;

-- name: SubscriptionList
SELECT queue, name, events, queues FROM :SCHEMA.subscription
WHERE ($1::text IS NULL OR queue = $1)
ORDER BY queue, name;
