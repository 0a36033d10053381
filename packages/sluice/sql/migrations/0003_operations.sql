-- Operations: retention and archiving per queue, dead-letter queues, cron schedules.

ALTER TABLE :SCHEMA.queue
  ADD COLUMN retain_completed_seconds integer NOT NULL DEFAULT 86400 CHECK (retain_completed_seconds >= 0),
  ADD COLUMN retain_cancelled_seconds integer NOT NULL DEFAULT 86400 CHECK (retain_cancelled_seconds >= 0),
  ADD COLUMN retain_dead_seconds      integer NOT NULL DEFAULT 1209600 CHECK (retain_dead_seconds >= 0),
  ADD COLUMN archive                  boolean NOT NULL DEFAULT false,
  ADD COLUMN dead_letter_queue        text CHECK (dead_letter_queue <> name);

-- Finished jobs moved out of the hot table when their queue archives instead of deleting.
CREATE TABLE :SCHEMA.job_archive (
  LIKE :SCHEMA.job,
  archived_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (id)
);
CREATE INDEX job_archive_queue_idx ON :SCHEMA.job_archive (queue, finished_at);

-- Cron schedules. `last_slot_at` is the latest slot already handled: the tick moves it
-- forward with a compare-and-set in the same transaction as the enqueue, so each slot is
-- enqueued at most once whatever runs concurrently.
CREATE TABLE :SCHEMA.schedule (
  name          text PRIMARY KEY,
  cron          text NOT NULL,
  tz            text NOT NULL DEFAULT 'UTC',
  queue         text NOT NULL,
  data          jsonb NOT NULL DEFAULT 'null',
  catch_up      text NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest', 'all', 'none')),
  last_slot_at  timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Dead-letter listings across all queues, newest first.
CREATE INDEX job_dead_idx ON :SCHEMA.job (finished_at)
  WHERE state = 'dead';
