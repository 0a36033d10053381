-- A claim that is the only write of its transaction, on a queue without caps, commits
-- without waiting for its WAL flush.
--
-- An idle worker claims each job as it arrives with a statement of its own, and until
-- now that statement waited for its commit record to reach the disk before the handler
-- could start: on the machines measured, a flush is a third of a millisecond at the
-- median and several at the tail, on the path from send to start. Nothing a lone claim
-- writes needs it. If the server crashes before the record is flushed (at most
-- wal_writer_delay later), the claim is undone: its jobs are pending again, their
-- attempt uncounted and their lease tokens gone, so the worker that started them is
-- fenced out and the jobs run again — what a worker that dies mid-job already causes,
-- and what at-least-once delivery allows. A completion, a failure or any other write is
-- still flushed before it is acknowledged, and its flush also carries every claim
-- committed before it.
--
-- Not for a queue with `concurrency` or `perKeyConcurrency`: an undone claim would free
-- its slot, or its key's room, while the worker that holds the job may still be running
-- it, and the cap must hold through a crash. Not when the transaction has written
-- before (the caller's own work must keep the caller's durability). The setting is
-- local to the transaction, and the library sends this statement on its own.
CREATE FUNCTION :SCHEMA.lone_claim(
  p_queue text, p_limit integer, p_worker_id text, p_now timestamptz, p_ahead integer)
RETURNS SETOF :SCHEMA.job LANGUAGE plpgsql
-- No SET clause: it would undo the transaction-local setting below when the function returns.
AS $$
BEGIN
  IF pg_current_xact_id_if_assigned() IS NULL AND EXISTS (
       SELECT 1 FROM :SCHEMA.queue
       WHERE name = p_queue AND concurrency IS NULL AND per_key_concurrency IS NULL) THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
  RETURN QUERY SELECT * FROM :SCHEMA.claim(p_queue, p_limit, p_worker_id, p_now, p_ahead);
END $$;
