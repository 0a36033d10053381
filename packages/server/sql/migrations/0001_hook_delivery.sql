-- The server's own schema (`sluice_server`): what it keeps beside the queue.
-- Inbound webhook deliveries already accepted, by (source, delivery id): a redelivery of
-- one of them is answered as a duplicate, even after its job finished and was removed.
-- The row is written in the transaction that enqueues its job, so both exist or neither.
CREATE TABLE sluice_server.hook_delivery (
  source      text NOT NULL,
  delivery_id text NOT NULL,
  job_id      text,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, delivery_id)
);
CREATE INDEX hook_delivery_received_at ON sluice_server.hook_delivery (received_at);
