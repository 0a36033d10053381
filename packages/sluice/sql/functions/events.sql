-- Jobs' ends announced to any process (src/events/): one notification per queue and kind
-- of end in a statement, on the schema's events channel, delivered at commit.
--
--   announce_ends(ids, queues, events, now) → void
--
-- The payload is JSON: {"e": event, "q": queue, "at": epoch ms, "ids": ["id", …]}, ids as
-- strings (a bigint may not fit a JSON number). `event` is `completed`, `failed` (an attempt
-- failed and the job will be retried), `dead` or `cancelled`. At most 200 ids per payload,
-- so a payload stays far below PostgreSQL's 8000-byte limit (a queue name is at most 128
-- characters). Notifications are at most once: a listener that was disconnected missed
-- some, and says so to its subscribers (src/db/listener.ts).
CREATE OR REPLACE FUNCTION :SCHEMA.announce_ends(p_ids bigint[], p_queues text[], p_events text[], p_now timestamptz)
RETURNS void LANGUAGE sql AS $$
  SELECT count(pg_notify(':EVENTS_CHANNEL', g.payload))
  FROM (
    SELECT json_build_object('e', x.event, 'q', x.queue,
                             'at', floor(extract(epoch FROM coalesce(p_now, now())) * 1000)::bigint,
                             'ids', array_agg(x.id::text ORDER BY x.id))::text AS payload
    FROM (SELECT e.*, (row_number() OVER (PARTITION BY e.event, e.queue ORDER BY e.id) - 1) / 200 AS chunk
          FROM unnest(p_ids, p_queues, p_events) AS e(id, queue, event)) x
    GROUP BY x.event, x.queue, x.chunk
  ) g
$$;

-- What follows jobs' ends, for the functions that end them (claim.sql, retry.sql,
-- cancel.sql): announced (with p_notify), and the children of those that have any
-- released (flow.sql). Called in a statement after the one that ended them, so that the
-- release sees links committed while that statement waited for their rows.
CREATE OR REPLACE FUNCTION :SCHEMA.job_ends(
  p_ids bigint[], p_queues text[], p_events text[], p_parents bigint[], p_now timestamptz, p_notify boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_notify AND cardinality(p_ids) > 0 THEN
    PERFORM :SCHEMA.announce_ends(p_ids, p_queues, p_events, p_now);
  END IF;
  IF cardinality(p_parents) > 0 THEN
    PERFORM :SCHEMA.release_children(p_parents, p_now, p_notify);
  END IF;
END $$;
