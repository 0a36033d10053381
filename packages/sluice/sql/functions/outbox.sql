-- The outbox of jobs' ends (subscriptions: src/queue/subscriptions.ts). Called by job_ends
-- (events.sql), so in the statement after the one that ended the jobs and in the same
-- transaction: a delivery exists if and only if its end committed.
--
--   outbox_ends(ids, queues, events, now, notify) → void
--
-- For each end and each subscription that chose its kind and its queue, one job on the
-- subscription's queue, keyed by the subscription's name, with data
-- {"subscription": name, "event": {"type", "jobId", "queue", "at"}} ("at": the end's time,
-- ISO 8601, UTC). The delivery job's id is the delivery's identity: it stays the same
-- over its retries and a replay. Written as a plain insert, like a dead letter (retry.sql):
-- the outbox never refuses (a full queue must not undo the end of a job), and its queue's
-- limits apply to running deliveries. Ends of jobs on a subscription's queue are not
-- written, so deliveries never make deliveries.
CREATE OR REPLACE FUNCTION :SCHEMA.outbox_ends(p_ids bigint[], p_queues text[], p_events text[], p_now timestamptz, p_notify boolean)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_at text := to_char(coalesce(p_now, now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
  v_woken text[];
BEGIN
  WITH written AS (
    INSERT INTO :SCHEMA.job (queue, data, key, max_attempts, run_at, created_at)
    SELECT s.queue,
           jsonb_build_object('subscription', s.name,
                              'event', jsonb_build_object('type', e.event, 'jobId', e.id::text, 'queue', e.queue, 'at', v_at)),
           s.name, q.max_attempts, v_now, v_now
    FROM unnest(p_ids, p_queues, p_events) WITH ORDINALITY AS e(id, queue, event, ord)
    JOIN :SCHEMA.subscription s ON e.event = ANY (s.events) AND (s.queues IS NULL OR e.queue = ANY (s.queues))
    JOIN :SCHEMA.queue q ON q.name = s.queue
    WHERE NOT EXISTS (SELECT 1 FROM :SCHEMA.subscription d WHERE d.queue = e.queue)
    ORDER BY e.ord, s.queue, s.name
    RETURNING queue
  )
  SELECT array_agg(DISTINCT w.queue) INTO v_woken FROM written w;
  IF p_notify AND v_woken IS NOT NULL THEN
    PERFORM pg_notify(':CHANNEL', w) FROM unnest(v_woken) AS w;
  END IF;
END $$;
