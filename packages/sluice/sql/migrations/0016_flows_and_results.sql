-- Dependencies between jobs (sql/functions/flow.sql). A job sent with parents waits, in
-- the state `waiting`, until each parent has ended; the link rows remember which parents
-- have ended and how, so that a parent replayed after it ended is not counted twice.
ALTER TYPE :SCHEMA.job_state ADD VALUE IF NOT EXISTS 'waiting';

ALTER TABLE :SCHEMA.job
  -- Set on a parent when a child is linked to it: its ending looks for children only then.
  ADD COLUMN has_children boolean,
  -- While waiting: the parents not ended yet. NULL otherwise.
  ADD COLUMN waiting_parents integer CHECK (waiting_parents > 0),
  -- What a parent ending dead or cancelled does to the job; NULL for a job without parents.
  ADD COLUMN on_parent_failure text CHECK (on_parent_failure IN ('cancel', 'run'));

CREATE TABLE :SCHEMA.job_parent (
  child_id bigint NOT NULL REFERENCES :SCHEMA.job (id) ON DELETE CASCADE,
  -- No reference: retention may delete a parent that ended before its child.
  parent_id bigint NOT NULL,
  -- How the parent ended, once it has: the link has then been counted.
  parent_state :SCHEMA.job_state,
  PRIMARY KEY (child_id, parent_id)
);
CREATE INDEX job_parent_parent_idx ON :SCHEMA.job_parent (parent_id);

-- The waiting jobs of a queue (stats), without the state in the predicate: a value added
-- to the enum cannot be used in the transaction that adds it.
CREATE INDEX job_waiting_idx ON :SCHEMA.job (queue) WHERE waiting_parents IS NOT NULL;

-- The connections listening on the events channel (src/db/listener.ts), so that statements
-- ending jobs announce them only while someone listens: a notification serializes the
-- commits of every transaction that sends one. Rows of connections gone are pruned by the
-- maintenance tick (a leftover only costs announcements nobody hears).
CREATE TABLE :SCHEMA.event_listener (
  pid integer PRIMARY KEY,
  registered_at timestamptz NOT NULL DEFAULT now()
);
