-- Waiting jobs (a flow's children) count against their key's maxPerKey like pending and
-- active ones (send.sql, admit_key): the index of waiting jobs gains the key, so a send
-- reads a key's waiting jobs, not every waiting job of its queue.
DROP INDEX IF EXISTS :SCHEMA.job_waiting_idx;
CREATE INDEX job_waiting_idx ON :SCHEMA.job (queue, key) WHERE waiting_parents IS NOT NULL;
