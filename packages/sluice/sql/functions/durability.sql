-- Durability per queue (`queue.durability`, migration 0024):
--
--   commit_as(queues, own) → whether this transaction now commits without waiting for its
--                            WAL flush
--
-- 'flush' (the default): every transaction that writes a queue's jobs waits, at commit,
-- until its WAL record is on disk; an acknowledged send, claim or completion survives a
-- crash of the database server.
--
-- 'async': the transactions the library sends on its own for the queue (a send without
-- the application's client, a worker's claims, completions and failures, a pull worker's
-- claim, complete and fail, the sweeper's failures) commit with `synchronous_commit =
-- off`, local to that transaction: the answer comes once the commit is in the WAL buffers,
-- and the WAL writer flushes it within `wal_writer_delay` (200 ms by default; at most
-- three times that). A crash of the server can undo what was acknowledged in that last
-- moment, never corrupt it: each transaction is undone whole, as if it had not run.
--   - An undone send: the job does not exist, though its id was answered.
--   - An undone claim: its jobs are pending again, their attempt uncounted, their lease
--     tokens gone; a handler that began on one is fenced out (its completion matches no
--     row) and the job runs again. Until that handler returns, the cap counts the job as
--     not running: the table's count holds, the handlers' may pass it by those jobs.
--   - An undone completion or failure: the job is active again under its old lease,
--     which expires, and the job runs again (at least once).
-- A crash of a worker or of its host, not of the database, loses nothing either way.
--
-- A transaction the application opened (a send given its client) keeps the
-- application's setting: the caller says `own` only for the library's own transactions.
-- A transaction over several queues is async only if every one of them is.
-- STRICT: a send whose process knows its queue as flush passes NULL, and PostgreSQL does
-- not call it (a call and a lookup on every send cost one-by-one sends 7 %).
CREATE OR REPLACE FUNCTION :SCHEMA.commit_as(p_queues text[], p_own boolean)
RETURNS boolean LANGUAGE plpgsql STRICT AS $$
BEGIN
  IF p_own AND cardinality(p_queues) > 0 AND NOT EXISTS (
       SELECT 1 FROM unnest(p_queues) u(name)
       WHERE NOT EXISTS (SELECT 1 FROM :SCHEMA.queue q WHERE q.name = u.name AND q.durability = 'async')) THEN
    PERFORM set_config('synchronous_commit', 'off', true);
    RETURN true;
  END IF;
  RETURN false;
END $$;
