-- Jobs' ends announced to any process (src/queue/results.ts): one notification per queue and
-- kind of end in a statement, on the schema's events channel, delivered at commit, while a
-- connection listens (event_listener).
--
--   announce_ends(ids, queues, events, now) → void
--   job_ends(ids, queues, events, parents, now, notify) → void
--   await_running_transactions(timeout_ms) → whether they all ended in time
--
-- Only while someone listens, because PostgreSQL serializes the commits of notifying
-- transactions (each holds a database-wide lock through its commit): announcing every
-- completion batch would serialize the workers' commits for nobody. A listener registers
-- its connection, then waits for the transactions running then to end: one of them may
-- have looked for listeners before the registration (and announce nothing), and the
-- listener's first read of the table must come after its commit.
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
-- cancel.sql): announced (with p_notify), written to the outbox of subscriptions when
-- there are any (outbox.sql), and the children of those that have any released
-- (flow.sql). Called in a statement after the one that ended them, so that the release
-- sees links committed while that statement waited for their rows.
CREATE OR REPLACE FUNCTION :SCHEMA.job_ends(
  p_ids bigint[], p_queues text[], p_events text[], p_parents bigint[], p_now timestamptz, p_notify boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_notify AND cardinality(p_ids) > 0 AND EXISTS (SELECT 1 FROM :SCHEMA.event_listener) THEN
    PERFORM :SCHEMA.announce_ends(p_ids, p_queues, p_events, p_now);
  END IF;
  -- One probe of an (almost always) tiny table per statement that ends jobs.
  IF cardinality(p_ids) > 0 AND EXISTS (SELECT 1 FROM :SCHEMA.subscription) THEN
    PERFORM :SCHEMA.outbox_ends(p_ids, p_queues, p_events, p_now, p_notify);
  END IF;
  IF cardinality(p_parents) > 0 THEN
    PERFORM :SCHEMA.release_children(p_parents, p_now, p_notify);
  END IF;
END $$;

CREATE OR REPLACE FUNCTION :SCHEMA.await_running_transactions(p_timeout_ms integer)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v_running xid8[] := ARRAY(SELECT pg_snapshot_xip(pg_current_snapshot()));
  v_until timestamptz := clock_timestamp() + p_timeout_ms * interval '1 millisecond';
BEGIN
  LOOP
    v_running := ARRAY(SELECT x FROM unnest(v_running) AS x WHERE pg_xact_status(x) = 'in progress');
    IF cardinality(v_running) = 0 THEN
      RETURN true;
    END IF;
    IF clock_timestamp() >= v_until THEN
      RETURN false;
    END IF;
    PERFORM pg_sleep(0.002);
  END LOOP;
END $$;
