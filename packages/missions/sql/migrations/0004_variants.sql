-- Variants: a mission holds several proven bugs of distinct families (each proven like the
-- mission's: every test fails on it, gold passes), so the candidates who get one mission do
-- not all get the same bug. A serve picks a variant; grading and results follow it.
CREATE TABLE missions.variant (
  id               bigserial PRIMARY KEY,
  mission_id       bigint NOT NULL REFERENCES missions.mission (id),
  -- 1, 2, 3… within the mission, in the order the saboteur proved them.
  ordinal          int NOT NULL CHECK (ordinal > 0),
  family           text NOT NULL,
  difficulty       int NOT NULL CHECK (difficulty BETWEEN 1 AND 3),
  -- A return-value perturbation, accepted only because no realistic family proved.
  last_resort      boolean NOT NULL DEFAULT false,
  saboteur         text NOT NULL,
  sabotaged        jsonb NOT NULL,
  bug_description  text NOT NULL,
  hint             text,
  -- This variant's own verdict: summary, per-test verdicts, the checks that ran.
  proof            jsonb NOT NULL,
  -- QA may take one variant out of service without rejecting its mission.
  rejected_at      timestamptz,
  qa_note          text,
  serve_count      int NOT NULL DEFAULT 0 CHECK (serve_count >= 0),
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (mission_id, ordinal)
);

-- Every mission stored before variants holds one: its own bug.
INSERT INTO missions.variant (mission_id, ordinal, family, difficulty, last_resort, saboteur, sabotaged, bug_description, hint, proof, serve_count, created_at)
SELECT m.id, 1, 'unknown', 2, false, m.saboteur, m.sabotaged, m.bug_description, m.hint,
       jsonb_build_object('summary', m.proof -> 'summary', 'tests', coalesce(m.proof -> 'tests', '[]'::jsonb), 'checks', m.proof -> 'checks'),
       m.serve_count, m.created_at
  FROM missions.mission m;

-- The variant an instance was served: what the candidate fixes and what grades them. NULL
-- only for a mission stored without variant rows: its own columns are then its one bug.
ALTER TABLE missions.instance ADD COLUMN variant_id bigint REFERENCES missions.variant (id);
UPDATE missions.instance i SET variant_id = v.id FROM missions.variant v WHERE v.mission_id = i.mission_id AND v.ordinal = 1;
CREATE INDEX instance_variant ON missions.instance (variant_id);
