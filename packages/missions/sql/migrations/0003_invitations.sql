-- Invitations: a recruiter invites a cohort of candidates to a role; each candidate gets a
-- signed, expiring, revocable link whose token is their identity (never a request body).
CREATE TABLE missions.cohort (
  id          bigserial PRIMARY KEY,
  role        text NOT NULL,
  starts_at   timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE missions.invitation (
  id          bigserial PRIMARY KEY,
  cohort_id   bigint NOT NULL REFERENCES missions.cohort (id),
  name        text NOT NULL,
  email       text NOT NULL,
  -- Signed into the token too: a token outlives neither.
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz,
  -- The first time the candidate's page was opened with a valid token.
  opened_at   timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now(),
  -- One invitation per person and cohort.
  UNIQUE (cohort_id, email)
);

-- The key invitation tokens are signed with when the configuration gives none: made once,
-- so every process of the platform signs and checks with the same one.
CREATE TABLE missions.signing_key (
  name        text PRIMARY KEY,
  secret      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
