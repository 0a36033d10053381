-- Per-queue, per-minute figures for the dashboard's series, shared by every process and
-- kept across restarts. Counters are added by each process's flush of what it counted
-- (src/queue/counts.ts), one statement per flush; gauges are sampled by the maintenance
-- tick. Rows older than the series retention are pruned by the tick.
CREATE TABLE :SCHEMA.queue_minute (
  queue text NOT NULL,
  minute timestamptz NOT NULL,
  starts bigint NOT NULL DEFAULT 0,
  completions bigint NOT NULL DEFAULT 0,
  failures bigint NOT NULL DEFAULT 0,
  dead bigint NOT NULL DEFAULT 0,
  shed bigint NOT NULL DEFAULT 0,
  key_limited bigint NOT NULL DEFAULT 0,
  -- Gauges: NULL until a tick sampled the queue in that minute.
  running integer,
  cap integer,
  ready integer,
  lag_ms bigint,
  PRIMARY KEY (queue, minute)
);

-- The prune deletes by minute across queues.
CREATE INDEX queue_minute_minute_idx ON :SCHEMA.queue_minute (minute);
