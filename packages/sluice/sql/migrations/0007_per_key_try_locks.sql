-- The per-key round-robin cursor moves to a row of its own, updated only by a claim that
-- can lock it without waiting (updating the queue row would serialize the claims).
ALTER TABLE :SCHEMA.queue DROP COLUMN key_cursor;

CREATE TABLE :SCHEMA.key_cursor (
  queue text PRIMARY KEY REFERENCES :SCHEMA.queue (name) ON DELETE CASCADE,
  key   text NOT NULL
);
