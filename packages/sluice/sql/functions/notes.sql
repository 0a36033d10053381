-- What a running job's handler reports while it runs: its progress and log lines
-- (src/queue/notes.ts), each write fenced by the lease token like a completion.
--
--   job_progress(id, token, progress, now, notify) → the job's queue, NULL if the token does not hold it
--   job_log_append(id, token, lines, now, notify) → the number of its last line, NULL if the token does not hold it
--
-- Progress is one JSON value per job, the last one reported (by any attempt), kept as long
-- as the job. Log lines are numbered from 1 in the order written (job.log_count is the last
-- number) and stamped with the attempt that wrote them; the newest 1000 of a job are kept,
-- older ones are deleted as new ones come (so a reader sees how many were dropped: the
-- lines before the first kept), and the rest go with the job (retention, archiving).
--
-- Both announce on the events channel (events.sql), only while someone listens:
--   {"e": "progress", "q": queue, "at": epoch ms, "ids": ["id"], "p": progress}
--   {"e": "log", "q": queue, "at": epoch ms, "ids": ["id"], "n": last line number}
-- A progress too large for a notification (8000 bytes) is announced without "p": a
-- listener reads the job.

CREATE OR REPLACE FUNCTION :SCHEMA.job_progress(p_id bigint, p_token uuid, p_progress jsonb, p_now timestamptz, p_notify boolean)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_queue text;
  v_payload text;
BEGIN
  UPDATE :SCHEMA.job SET progress = p_progress
  WHERE id = p_id AND lease_token = p_token AND state IN ('active', 'claimed')
  RETURNING queue INTO v_queue;
  IF v_queue IS NOT NULL AND p_notify AND EXISTS (SELECT 1 FROM :SCHEMA.event_listener) THEN
    v_payload := json_build_object('e', 'progress', 'q', v_queue, 'at', floor(extract(epoch FROM coalesce(p_now, now())) * 1000)::bigint,
                                   'ids', json_build_array(p_id::text), 'p', p_progress)::text;
    IF octet_length(v_payload) >= 8000 THEN
      v_payload := json_build_object('e', 'progress', 'q', v_queue, 'at', floor(extract(epoch FROM coalesce(p_now, now())) * 1000)::bigint,
                                     'ids', json_build_array(p_id::text))::text;
    END IF;
    PERFORM pg_notify(':EVENTS_CHANNEL', v_payload);
  END IF;
  RETURN v_queue;
END $$;

CREATE OR REPLACE FUNCTION :SCHEMA.job_log_append(p_id bigint, p_token uuid, p_lines text[], p_now timestamptz, p_notify boolean)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  c_kept CONSTANT integer := 1000;
  v_queue text;
  v_attempt integer;
  v_last integer;
  v_first integer;
BEGIN
  -- The job's row lock orders concurrent writers: their lines get consecutive numbers.
  UPDATE :SCHEMA.job SET log_count = coalesce(log_count, 0) + cardinality(p_lines)
  WHERE id = p_id AND lease_token = p_token AND state IN ('active', 'claimed')
  RETURNING queue, attempts, log_count INTO v_queue, v_attempt, v_last;
  IF v_queue IS NULL THEN
    RETURN NULL;
  END IF;
  v_first := v_last - cardinality(p_lines) + 1;
  -- Lines of this call already beyond the bound are not written at all.
  INSERT INTO :SCHEMA.job_log (job_id, seq, attempt, at, line)
  SELECT p_id, v_first + l.i - 1, v_attempt, coalesce(p_now, clock_timestamp()), l.line
  FROM unnest(p_lines) WITH ORDINALITY AS l(line, i)
  WHERE v_first + l.i - 1 > v_last - c_kept;
  IF v_last > c_kept THEN
    DELETE FROM :SCHEMA.job_log WHERE job_id = p_id AND seq <= v_last - c_kept;
  END IF;
  IF p_notify AND EXISTS (SELECT 1 FROM :SCHEMA.event_listener) THEN
    PERFORM pg_notify(':EVENTS_CHANNEL',
      json_build_object('e', 'log', 'q', v_queue, 'at', floor(extract(epoch FROM coalesce(p_now, now())) * 1000)::bigint,
                        'ids', json_build_array(p_id::text), 'n', v_last)::text);
  END IF;
  RETURN v_last;
END $$;

-- A deleted job's log lines go with it. Only jobs that logged have log_count set, so the
-- other deletes pay one test.
CREATE OR REPLACE FUNCTION :SCHEMA.job_delete_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM :SCHEMA.job_log WHERE job_id = OLD.id;
  RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS job_delete_log ON :SCHEMA.job;
CREATE TRIGGER job_delete_log AFTER DELETE ON :SCHEMA.job
FOR EACH ROW WHEN (OLD.log_count IS NOT NULL)
EXECUTE FUNCTION :SCHEMA.job_delete_log();
