-- The LISTEN connection's own statements (src/db/listener.ts).

-- name: EventListenerRegister
-- This connection listens on the events channel: statements ending jobs announce them
-- (sql/functions/events.sql).
INSERT INTO :SCHEMA.event_listener (pid) VALUES (pg_backend_pid()) ON CONFLICT (pid) DO NOTHING;

-- name: EventListenerAwaitWriters
-- After registering: the transactions running now have ended (or the wait gave up).
SELECT :SCHEMA.await_running_transactions($1) AS ended;

-- name: EventListenerUnregister
DELETE FROM :SCHEMA.event_listener WHERE pid = pg_backend_pid();
