-- Subscriptions to jobs' ends: a transactional outbox (sql/functions/outbox.sql). Each end
-- of a chosen kind, on a chosen queue (NULL: every queue), becomes a job on the
-- subscription's queue, written in the transaction that ends the job, so it is delivered
-- at least once whether or not anyone listened when the job ended.
CREATE TABLE :SCHEMA.subscription (
  queue   text NOT NULL REFERENCES :SCHEMA.queue (name) ON DELETE CASCADE,
  name    text NOT NULL,
  events  text[] NOT NULL CHECK (cardinality(events) > 0 AND events <@ ARRAY['completed', 'failed', 'dead', 'cancelled']),
  queues  text[] CHECK (cardinality(queues) > 0),
  PRIMARY KEY (queue, name)
);
