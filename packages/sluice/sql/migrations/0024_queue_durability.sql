-- Durability per queue: 'flush' waits for each commit's WAL flush, 'async' lets the
-- library's own transactions for the queue commit without it (sql/functions/durability.sql).
ALTER TABLE :SCHEMA.queue
  ADD COLUMN durability text NOT NULL DEFAULT 'flush' CONSTRAINT queue_durability_check CHECK (durability IN ('flush', 'async'));
