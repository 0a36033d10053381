-- Missions: generated challenges with their proof, per-user instances, submissions.
CREATE TABLE missions.mission (
  id                bigserial PRIMARY KEY,
  -- The generation job that stored it: a retried job never stores a second copy.
  generation_job_id text UNIQUE,
  source            text NOT NULL,
  domain            text NOT NULL,
  language          text NOT NULL,
  title             text NOT NULL,
  brief             text NOT NULL,
  gold              jsonb NOT NULL,
  sabotaged         jsonb NOT NULL,
  tests             jsonb NOT NULL,
  bug_description   text NOT NULL,
  hint              text,
  saboteur          text NOT NULL,
  proof             jsonb NOT NULL,
  qa_status         text NOT NULL CHECK (qa_status IN ('pending', 'approved', 'rejected')),
  qa_note           text,
  reviewed_at       timestamptz,
  serve_count       int NOT NULL DEFAULT 0 CHECK (serve_count >= 0),
  max_serves        int NOT NULL CHECK (max_serves > 0),
  retired_at        timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  CHECK (serve_count <= max_serves)
);

-- The warm pool's pick: servable missions of a domain, least served first, oldest first.
CREATE INDEX mission_servable ON missions.mission (domain, serve_count, created_at, id)
  WHERE qa_status = 'approved' AND retired_at IS NULL;
CREATE INDEX mission_pending ON missions.mission (created_at) WHERE qa_status = 'pending';

CREATE TABLE missions.instance (
  id          bigserial PRIMARY KEY,
  mission_id  bigint NOT NULL REFERENCES missions.mission (id),
  user_id     text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  -- A user never gets two instances of the same mission.
  UNIQUE (mission_id, user_id)
);
CREATE INDEX instance_user ON missions.instance (user_id);

CREATE TABLE missions.submission (
  id            bigserial PRIMARY KEY,
  instance_id   bigint NOT NULL REFERENCES missions.instance (id),
  files         jsonb NOT NULL,
  status        text NOT NULL CHECK (status IN ('queued', 'passed', 'failed')),
  grading_job_id text,
  result        jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  graded_at     timestamptz
);
CREATE INDEX submission_instance ON missions.submission (instance_id);
