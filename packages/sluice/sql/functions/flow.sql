-- Dependencies between jobs: a job sent with parents runs only once they have ended.
--
--   send_after(parents, on_parent_failure, <the arguments of send>) → (id, deduplicated)
--   release_children(parents, now, notify) → void
--
-- A job with parents (state machine; the rest of its life is any job's):
--
--   send ──► waiting ──(last parent ended: completed, or dead/cancelled under 'run')──► pending
--     │         │
--     │         ├──(a parent ended dead or cancelled, under 'cancel')──► cancelled
--     │         └──(sluice.cancel)──────────────────────────────────────► cancelled
--     ├──(every parent had completed)──► pending
--     └──(a parent had ended dead or cancelled, under 'cancel')──► cancelled
--
-- A job cancelled for its parent has an entry `ParentFailed` in its error history naming the
-- parent; its own children are then released like any child of a cancelled job.
--
-- Exactly once, without polling: a job becomes pending in the transaction that ends its
-- last parent. Each link (job_parent) is counted once, when its parent ends (parent_state
-- set), and the child's count of parents left (waiting_parents) is decremented under the
-- child's row lock, so two parents ending at once in two transactions are both counted and
-- only the second releases the child.
--
-- Why a parent is flagged (has_children) and locked by the send: a statement that ends a
-- job reads its links only when the flag says it has children, and in a statement after
-- the one that ended it (release_children is called by the functions that end jobs:
-- claim.sql, retry.sql, cancel.sql). A send that links a child to a parent not ended yet
-- locks the parent's row until it commits, so a concurrent ending waits for it, and its
-- next statement sees the new link. A parent already ended is not locked; the link is
-- counted at once.

CREATE OR REPLACE FUNCTION :SCHEMA.send_after(
  p_parents bigint[], p_on_parent_failure text,
  p_queue text, p_data jsonb, p_key text, p_singleton_key text, p_run_at timestamptz,
  p_delay_ms double precision, p_priority integer, p_max_attempts integer,
  p_now timestamptz, p_notify boolean, p_cost integer, p_timeout_ms integer, p_trace_context jsonb,
  OUT id bigint, OUT deduplicated boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_parents bigint[] := ARRAY(SELECT DISTINCT p FROM unnest(p_parents) AS p ORDER BY p);
  v_open bigint[];
  v_missing bigint[];
  v_failed bigint;
  v_failed_state text;
  v_state :SCHEMA.job_state;
  v_run_at timestamptz;
BEGIN
  -- Admission as for any send (send.sql), announced below once the state is known.
  SELECT s.id, s.deduplicated INTO id, deduplicated
  FROM :SCHEMA.send(p_queue => p_queue, p_data => p_data, p_key => p_key, p_singleton_key => p_singleton_key,
                    p_run_at => p_run_at, p_delay_ms => p_delay_ms, p_priority => p_priority,
                    p_max_attempts => p_max_attempts, p_now => p_now, p_notify => false, p_cost => p_cost,
                    p_timeout_ms => p_timeout_ms, p_trace_context => p_trace_context) s;
  IF deduplicated THEN
    RETURN;
  END IF;

  -- Parents not ended yet: locked in id order (two sends sharing parents cannot deadlock)
  -- and flagged.
  v_open := ARRAY(SELECT j.id FROM :SCHEMA.job j
                  WHERE j.id = ANY (v_parents) AND j.state IN ('waiting', 'pending', 'active', 'claimed')
                  ORDER BY j.id FOR UPDATE);
  UPDATE :SCHEMA.job j SET has_children = true WHERE j.id = ANY (v_open) AND j.has_children IS NOT TRUE;

  -- The others have ended (or never existed).
  v_missing := ARRAY(SELECT p FROM unnest(v_parents) AS p
                     WHERE NOT p = ANY (v_open) AND NOT EXISTS (SELECT 1 FROM :SCHEMA.job j WHERE j.id = p));
  IF cardinality(v_missing) > 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'SL422',
      MESSAGE = format('parent jobs %s do not exist', array_to_string(v_missing, ', ')),
      DETAIL = json_build_object('queue', p_queue, 'jobIds', v_missing::text[])::text;
  END IF;
  SELECT j.id, j.state::text INTO v_failed, v_failed_state FROM :SCHEMA.job j
  WHERE j.id = ANY (v_parents) AND NOT j.id = ANY (v_open) AND j.state IN ('dead', 'cancelled')
  ORDER BY j.id LIMIT 1;

  INSERT INTO :SCHEMA.job_parent (child_id, parent_id, parent_state)
  SELECT send_after.id, j.id, CASE WHEN j.id = ANY (v_open) THEN NULL ELSE j.state END
  FROM :SCHEMA.job j WHERE j.id = ANY (v_parents);

  IF v_failed IS NOT NULL AND p_on_parent_failure = 'cancel' THEN
    UPDATE :SCHEMA.job j
    SET state = 'cancelled', finished_at = v_now, on_parent_failure = p_on_parent_failure,
        errors = j.errors || jsonb_build_array(jsonb_build_object(
          'name', 'ParentFailed', 'message', format('parent job %s ended %s', v_failed, v_failed_state),
          'parentId', v_failed::text, 'finishedAt', v_now))
    WHERE j.id = send_after.id;
    RETURN;
  END IF;

  UPDATE :SCHEMA.job j
  SET state = CASE WHEN cardinality(v_open) > 0 THEN 'waiting' ELSE 'pending' END:::SCHEMA.job_state,
      waiting_parents = nullif(cardinality(v_open), 0), on_parent_failure = p_on_parent_failure
  WHERE j.id = send_after.id
  RETURNING j.state, j.run_at INTO v_state, v_run_at;
  IF p_notify AND v_state = 'pending' AND v_run_at <= v_now THEN
    PERFORM pg_notify(':CHANNEL', p_queue);
  END IF;
END $$;

-- The children of jobs that have just ended (p_parents, in a final state): each link
-- counted, each child whose last parent ended made pending, and those whose parent failed
-- under 'cancel' cancelled, then their own children in turn. Wakes the queues that got a
-- job, and announces the cancels (events.sql).
CREATE OR REPLACE FUNCTION :SCHEMA.release_children(p_parents bigint[], p_now timestamptz, p_notify boolean)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_ended bigint[] := p_parents;
  v_cancelled bigint[];
  v_cancelled_queues text[];
  v_ready_queues text[];
BEGIN
  WHILE cardinality(v_ended) > 0 LOOP
    -- The children locked in id order first: two transactions releasing children they
    -- share (a fan-in whose parents end in both) take the locks in the same order, so they
    -- queue up rather than deadlock.
    PERFORM 1 FROM :SCHEMA.job c
    WHERE c.id IN (SELECT l.child_id FROM :SCHEMA.job_parent l WHERE l.parent_id = ANY (v_ended) AND l.parent_state IS NULL)
    ORDER BY c.id FOR UPDATE;
    WITH counted AS (
      UPDATE :SCHEMA.job_parent l SET parent_state = p.state
      FROM :SCHEMA.job p
      WHERE l.parent_id = ANY (v_ended) AND l.parent_state IS NULL
        AND p.id = l.parent_id AND p.state IN ('completed', 'dead', 'cancelled')
      RETURNING l.child_id, l.parent_id, p.state
    ), per_child AS (
      SELECT c.child_id, count(*)::integer AS n,
             min(c.parent_id) FILTER (WHERE c.state <> 'completed') AS failed
      FROM counted c GROUP BY c.child_id
    ), changed AS (
      UPDATE :SCHEMA.job c
      SET state = CASE WHEN a.failed IS NOT NULL AND c.on_parent_failure = 'cancel' THEN 'cancelled'
                       WHEN c.waiting_parents <= a.n THEN 'pending'
                       ELSE 'waiting' END:::SCHEMA.job_state,
          waiting_parents = CASE WHEN (a.failed IS NOT NULL AND c.on_parent_failure = 'cancel') OR c.waiting_parents <= a.n
                                 THEN NULL ELSE c.waiting_parents - a.n END,
          finished_at = CASE WHEN a.failed IS NOT NULL AND c.on_parent_failure = 'cancel' THEN v_now END,
          run_at = CASE WHEN a.failed IS NULL OR c.on_parent_failure <> 'cancel' THEN greatest(c.run_at, v_now) ELSE c.run_at END,
          errors = CASE WHEN a.failed IS NOT NULL AND c.on_parent_failure = 'cancel'
                        THEN c.errors || jsonb_build_array(jsonb_build_object(
                               'name', 'ParentFailed',
                               'message', format('parent job %s ended %s', a.failed, (SELECT p.state FROM :SCHEMA.job p WHERE p.id = a.failed)),
                               'parentId', a.failed::text, 'finishedAt', v_now))
                        ELSE c.errors END
      FROM per_child a
      WHERE c.id = a.child_id AND c.state = 'waiting'
      RETURNING c.id, c.queue, c.state, c.has_children
    )
    SELECT coalesce(array_agg(ch.id) FILTER (WHERE ch.state = 'cancelled' AND ch.has_children), '{}'),
           coalesce(array_agg(ch.id) FILTER (WHERE ch.state = 'cancelled'), '{}'),
           coalesce(array_agg(ch.queue) FILTER (WHERE ch.state = 'cancelled'), '{}'),
           coalesce(array_agg(DISTINCT ch.queue) FILTER (WHERE ch.state = 'pending'), '{}')
    INTO v_ended, v_cancelled, v_cancelled_queues, v_ready_queues
    FROM changed ch;

    IF p_notify THEN
      PERFORM pg_notify(':CHANNEL', q) FROM unnest(v_ready_queues) AS q;
    END IF;
    PERFORM :SCHEMA.job_ends(v_cancelled, v_cancelled_queues, array_fill('cancelled'::text, ARRAY[cardinality(v_cancelled)]),
                             '{}', v_now, p_notify);
  END LOOP;
END $$;

-- A deleted job's links to its parents go with it (retention, archiving, a queue removed).
-- Only jobs sent with parents have links, and only they have on_parent_failure set, so the
-- other deletes pay one test. (Not a foreign key: see migration 0019.)
CREATE OR REPLACE FUNCTION :SCHEMA.job_delete_links() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM :SCHEMA.job_parent WHERE child_id = OLD.id;
  RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS job_delete_links ON :SCHEMA.job;
CREATE TRIGGER job_delete_links AFTER DELETE ON :SCHEMA.job
FOR EACH ROW WHEN (OLD.on_parent_failure IS NOT NULL)
EXECUTE FUNCTION :SCHEMA.job_delete_links();

-- A whole flow in one statement (src/queue/flow.ts): each job sent in order by send or
-- send_after, exactly as separate statements of one transaction would (each statement of
-- this function takes a fresh snapshot), so admission, keys and links are the same. Why:
-- the locks a send takes (a queue's depth, a key) are held to the commit, and a flow sent
-- statement by statement holds them across the client's round trips; one statement holds
-- them only while the database works, so a spike of flows on one queue is not paced by the
-- clients' event loops.
--
--   send_flow(jobs, data, now, notify, trace_context) → (ord, id, deduplicated) per job
--
-- `jobs` is a JSON array, in order, of {queue, key, singletonKey, runAt, delayMs, priority,
-- maxAttempts, cost, timeoutMs, onParentFailure, parents}; `parents` lists {"ord": n} (the
-- n-th job of this flow, from 1) or {"id": "…"} (a job outside it); `data[i]` is job i's
-- payload.
CREATE OR REPLACE FUNCTION :SCHEMA.send_flow(p_jobs jsonb, p_data jsonb[], p_now timestamptz, p_notify boolean, p_trace_context jsonb)
RETURNS TABLE (ord integer, id bigint, deduplicated boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_job jsonb;
  v_ids bigint[] := '{}';
  v_parents bigint[];
  v_sent record;
BEGIN
  FOR i IN 1 .. jsonb_array_length(p_jobs) LOOP
    v_job := p_jobs -> (i - 1);
    v_parents := ARRAY(SELECT CASE WHEN p ? 'ord' THEN v_ids[(p ->> 'ord')::integer] ELSE (p ->> 'id')::bigint END
                       FROM jsonb_array_elements(coalesce(v_job -> 'parents', '[]')) AS p);
    IF cardinality(v_parents) > 0 THEN
      SELECT s.id, s.deduplicated INTO v_sent
      FROM :SCHEMA.send_after(
        p_parents => v_parents, p_on_parent_failure => v_job ->> 'onParentFailure',
        p_queue => v_job ->> 'queue', p_data => p_data[i], p_key => v_job ->> 'key',
        p_singleton_key => v_job ->> 'singletonKey', p_run_at => (v_job ->> 'runAt')::timestamptz,
        p_delay_ms => (v_job ->> 'delayMs')::double precision, p_priority => (v_job ->> 'priority')::integer,
        p_max_attempts => (v_job ->> 'maxAttempts')::integer, p_now => p_now, p_notify => p_notify,
        p_cost => (v_job ->> 'cost')::integer, p_timeout_ms => (v_job ->> 'timeoutMs')::integer,
        p_trace_context => p_trace_context) s;
    ELSE
      SELECT s.id, s.deduplicated INTO v_sent
      FROM :SCHEMA.send(
        p_queue => v_job ->> 'queue', p_data => p_data[i], p_key => v_job ->> 'key',
        p_singleton_key => v_job ->> 'singletonKey', p_run_at => (v_job ->> 'runAt')::timestamptz,
        p_delay_ms => (v_job ->> 'delayMs')::double precision, p_priority => (v_job ->> 'priority')::integer,
        p_max_attempts => (v_job ->> 'maxAttempts')::integer, p_now => p_now, p_notify => p_notify,
        p_cost => (v_job ->> 'cost')::integer, p_timeout_ms => (v_job ->> 'timeoutMs')::integer,
        p_trace_context => p_trace_context) s;
    END IF;
    v_ids := v_ids || v_sent.id;
    ord := i;
    id := v_sent.id;
    deduplicated := v_sent.deduplicated;
    RETURN NEXT;
  END LOOP;
END $$;
