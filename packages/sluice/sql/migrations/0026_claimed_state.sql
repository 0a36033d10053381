-- commits: alone
-- A job claimed ahead of a slot of its queue's cap waits as `claimed` (slot 0), apart from
-- the `active` jobs that hold slots (sql/functions/slots.sql). Committed before the step
-- that uses it: no statement may use an enum value in the transaction that added it.
ALTER TYPE :SCHEMA.job_state ADD VALUE IF NOT EXISTS 'claimed' AFTER 'active';
