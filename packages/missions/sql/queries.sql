-- name: LockUser
-- Serves of one user are serialized, so two parallel requests cannot both pick a mission
-- the user does not have yet (the unique constraint is the backstop).
SELECT pg_advisory_xact_lock(hashtextextended('missions.user:' || $1, 0));

-- name: PickMission
SELECT m.id
  FROM missions.mission m
 WHERE m.domain = ANY ($1::text[])
   AND m.qa_status = 'approved'
   AND m.retired_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM missions.instance i WHERE i.mission_id = m.id AND i.user_id = $2)
 ORDER BY m.serve_count, m.created_at, m.id
 LIMIT 1
   FOR UPDATE SKIP LOCKED;

-- name: PickMissionWaiting
-- When every candidate is locked by a serve in flight, wait for one instead of reporting
-- an empty pool: after the lock holder commits, the row is re-checked (it may have just
-- retired) and, if it no longer qualifies, the next is tried, its lock kept meanwhile.
-- So the rows are tried in id order, the same in every transaction: in the order of what
-- each had seen served, two waiting serves could each keep a row the other waits for.
SELECT m.id
  FROM missions.mission m
 WHERE m.domain = ANY ($1::text[])
   AND m.qa_status = 'approved'
   AND m.retired_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM missions.instance i WHERE i.mission_id = m.id AND i.user_id = $2)
 ORDER BY m.id
 LIMIT 1
   FOR UPDATE;

-- name: AnyServable
SELECT EXISTS (
  SELECT 1
    FROM missions.mission m
   WHERE m.domain = ANY ($1::text[])
     AND m.qa_status = 'approved'
     AND m.retired_at IS NULL
     AND NOT EXISTS (SELECT 1 FROM missions.instance i WHERE i.mission_id = m.id AND i.user_id = $2)
) AS servable;

-- name: RequestPlan
-- What a request needs first, in one statement: whether anything in domains $1 is servable
-- to user $2 (as AnyServable), and which of those domains has the fewest approved and
-- pending missions (ties: the first listed), where a generation helps most.
SELECT EXISTS (
         SELECT 1
           FROM missions.mission m
          WHERE m.domain = ANY ($1::text[])
            AND m.qa_status = 'approved'
            AND m.retired_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM missions.instance i WHERE i.mission_id = m.id AND i.user_id = $2)
       ) AS servable,
       (SELECT u.domain
          FROM unnest($1::text[]) WITH ORDINALITY AS u(domain, ord)
         ORDER BY (SELECT count(*) FROM missions.mission m
                    WHERE m.domain = u.domain
                      AND ((m.qa_status = 'approved' AND m.retired_at IS NULL) OR m.qa_status = 'pending')), u.ord
         LIMIT 1) AS least_stocked;

-- name: PickVariant
-- Which of mission $1's variants to serve user $2 (under the mission's row lock, so serves
-- of one mission pick one after another): of the variants QA has not rejected, the one
-- given least to the user's cohort (none yet while the cohort has not had them all; a
-- user without an invitation has no cohort), then the least served, then the first proven.
SELECT v.id
  FROM missions.variant v
 CROSS JOIN LATERAL (
   SELECT count(*)::int AS given
     FROM missions.instance i
     JOIN missions.invitation w ON i.user_id = 'invitation:' || w.id
    WHERE i.variant_id = v.id
      AND w.cohort_id = (SELECT u.cohort_id FROM missions.invitation u
                          WHERE u.id = substring($2 FROM '^invitation:([0-9]{1,18})$')::bigint)) c
 WHERE v.mission_id = $1 AND v.rejected_at IS NULL
 ORDER BY c.given, v.serve_count, v.ordinal
 LIMIT 1;

-- name: InsertInstance
INSERT INTO missions.instance (mission_id, user_id, variant_id) VALUES ($1, $2, $3) RETURNING id;

-- name: CountVariantServe
UPDATE missions.variant SET serve_count = serve_count + 1 WHERE id = $1;

-- name: CountServe
UPDATE missions.mission
   SET serve_count = serve_count + 1,
       retired_at = CASE WHEN serve_count + 1 >= max_serves THEN now() END
 WHERE id = $1;

-- name: InsertMission
INSERT INTO missions.mission
  (generation_job_id, source, domain, language, title, brief, gold, sabotaged, tests,
   bug_description, hint, saboteur, proof, qa_status, max_serves, reviewed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
        CASE WHEN $14 = 'approved' THEN now() END)
ON CONFLICT (generation_job_id) DO NOTHING
RETURNING id;

-- name: InsertVariants
-- A mission's proven variants ($2: a JSON array, in the order they were proven).
INSERT INTO missions.variant
  (mission_id, ordinal, family, difficulty, last_resort, saboteur, sabotaged, bug_description, hint, proof)
SELECT $1, v.ordinal, v.family, v.difficulty, v.last_resort, v.saboteur, v.sabotaged, v.bug_description, v.hint, v.proof
  FROM jsonb_to_recordset($2::jsonb) AS v(ordinal int, family text, difficulty int, last_resort boolean, saboteur text,
                                          sabotaged jsonb, bug_description text, hint text, proof jsonb)
ON CONFLICT (mission_id, ordinal) DO NOTHING;

-- name: MissionVariants
SELECT * FROM missions.variant WHERE mission_id = ANY ($1::bigint[]) ORDER BY mission_id, ordinal;

-- name: LockMission
SELECT id, qa_status FROM missions.mission WHERE id = $1 FOR UPDATE;

-- name: RejectVariant
-- One variant out of service, never the last one in service (the caller holds the
-- mission's row lock, so two rejections cannot each take the other's last companion).
UPDATE missions.variant v
   SET rejected_at = now(), qa_note = $3
 WHERE v.mission_id = $1 AND v.ordinal = $2 AND v.rejected_at IS NULL
   AND EXISTS (SELECT 1 FROM missions.variant o WHERE o.mission_id = v.mission_id AND o.id <> v.id AND o.rejected_at IS NULL)
RETURNING *;

-- name: MissionByJob
SELECT id FROM missions.mission WHERE generation_job_id = $1;

-- name: GetMission
SELECT * FROM missions.mission WHERE id = $1;

-- name: ListMissions
-- Oldest first, a page at a time: the page after mission $3 (the last of the previous
-- page; NULL for the first) by (created_at, id), so a review between two pages neither
-- skips nor repeats a mission. A cursor that names no mission reads as past the end.
SELECT m.* FROM missions.mission m
 WHERE ($1::text IS NULL OR m.qa_status = $1)
   AND ($3::bigint IS NULL
        OR (m.created_at, m.id) > (SELECT c.created_at, c.id FROM missions.mission c WHERE c.id = $3))
 ORDER BY m.created_at, m.id
 LIMIT $2;

-- name: ReviewMission
UPDATE missions.mission
   SET qa_status = $2, qa_note = $3, reviewed_at = now()
 WHERE id = $1 AND qa_status = 'pending'
RETURNING *;

-- name: PoolByDomain
SELECT domain,
       count(*) FILTER (WHERE qa_status = 'approved' AND retired_at IS NULL)::int AS servable,
       count(*) FILTER (WHERE qa_status = 'pending')::int AS pending,
       count(*) FILTER (WHERE retired_at IS NOT NULL)::int AS retired,
       coalesce(sum(serve_count), 0)::int AS serves
  FROM missions.mission
 GROUP BY domain
 ORDER BY domain;

-- name: PendingSources
SELECT domain, array_agg(DISTINCT source ORDER BY source) AS sources
  FROM missions.mission
 WHERE qa_status = 'pending'
 GROUP BY domain;

-- name: GetInstance
-- The instance with its variant's code (the mission's own for a mission without variants).
SELECT i.id, i.mission_id, i.user_id, i.created_at, v.ordinal AS variant,
       m.title, m.brief, m.language, m.domain, coalesce(v.sabotaged, m.sabotaged) AS sabotaged, m.tests
  FROM missions.instance i JOIN missions.mission m ON m.id = i.mission_id
  LEFT JOIN missions.variant v ON v.id = i.variant_id
 WHERE i.id = $1;

-- name: InsertSubmission
INSERT INTO missions.submission (instance_id, files, status) VALUES ($1, $2, 'queued') RETURNING id, created_at;

-- name: SetSubmissionJob
UPDATE missions.submission SET grading_job_id = $2 WHERE id = $1;

-- name: SubmissionForGrading
SELECT s.id, s.files, s.status, m.language, m.tests, m.gold, v.ordinal AS variant
  FROM missions.submission s
  JOIN missions.instance i ON i.id = s.instance_id
  JOIN missions.mission m ON m.id = i.mission_id
  LEFT JOIN missions.variant v ON v.id = i.variant_id
 WHERE s.id = $1;

-- name: RecordGrade
UPDATE missions.submission
   SET status = $2, result = $3, graded_at = now()
 WHERE id = $1 AND status = 'queued';

-- name: GetSubmission
SELECT * FROM missions.submission WHERE id = $1;

-- name: RecordGradingError
-- Only a submission still waiting for its grade: a grade recorded by an earlier attempt stands.
UPDATE missions.submission
   SET status = 'error', error = $2, graded_at = now()
 WHERE id = $1 AND status = 'queued';

-- name: MissionServes
-- Each mission's serves against its retirement limit, and what its candidates did: a page
-- by id after mission $3 (NULL for the first), optionally of one QA status ($1) and of the
-- missions served to one cohort's candidates ($4).
SELECT m.id, m.title, m.domain, m.language, m.qa_status, m.serve_count, m.max_serves, m.retired_at,
       t.candidates, t.submissions, t.candidates_passed
  FROM missions.mission m
 CROSS JOIN LATERAL (
   SELECT count(DISTINCT i.id)::int AS candidates,
          count(s.id)::int AS submissions,
          count(DISTINCT i.id) FILTER (WHERE s.status = 'passed')::int AS candidates_passed
     FROM missions.instance i
     LEFT JOIN missions.submission s ON s.instance_id = i.id
    WHERE i.mission_id = m.id) t
 WHERE ($1::text IS NULL OR m.qa_status = $1)
   AND ($3::bigint IS NULL OR m.id > $3)
   AND ($4::bigint IS NULL OR m.id IN (
         SELECT i.mission_id
           FROM missions.instance i
           JOIN missions.invitation v ON i.user_id = 'invitation:' || v.id
          WHERE v.cohort_id = $4))
 ORDER BY m.id
 LIMIT $2;

-- name: CandidateResults
-- Each candidate's result on each mission served to them (an instance): submissions, the
-- first passing one and how many it took. A page by instance id after $4 (NULL for the
-- first), optionally of one user ($1) or one mission ($2).
SELECT i.id, i.user_id, i.mission_id, i.created_at, m.title, m.domain, v.ordinal AS variant, v.family AS variant_family,
       t.submissions, t.first_passed_at, a.attempts_to_pass
  FROM missions.instance i
  JOIN missions.mission m ON m.id = i.mission_id
  LEFT JOIN missions.variant v ON v.id = i.variant_id
 CROSS JOIN LATERAL (
   SELECT count(*)::int AS submissions,
          min(s.id) FILTER (WHERE s.status = 'passed') AS first_passed_id,
          min(s.created_at) FILTER (WHERE s.status = 'passed') AS first_passed_at
     FROM missions.submission s
    WHERE s.instance_id = i.id) t
 CROSS JOIN LATERAL (
   SELECT count(*)::int AS attempts_to_pass
     FROM missions.submission s
    WHERE s.instance_id = i.id AND s.id <= t.first_passed_id) a
 WHERE ($1::text IS NULL OR i.user_id = $1)
   AND ($2::bigint IS NULL OR i.mission_id = $2)
   AND ($4::bigint IS NULL OR i.id > $4)
 ORDER BY i.id
 LIMIT $3;

-- name: InsertCohort
INSERT INTO missions.cohort (role, starts_at) VALUES ($1, $2) RETURNING id, created_at;

-- name: InsertInvitations
-- A cohort's candidates in one statement: $2 names, $3 e-mails, in the same order.
INSERT INTO missions.invitation (cohort_id, name, email, expires_at)
SELECT $1, c.name, c.email, $4
  FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS c(name, email, ord)
 ORDER BY c.ord
RETURNING id, name, email, expires_at;

-- name: GetCohort
SELECT * FROM missions.cohort WHERE id = $1;

-- name: ListCohorts
-- Cohorts newest first, a page by id before $2 (NULL for the first), with how many were
-- invited and how many opened their link.
SELECT c.*, t.invited, t.opened
  FROM missions.cohort c
 CROSS JOIN LATERAL (
   SELECT count(*)::int AS invited, count(v.opened_at)::int AS opened
     FROM missions.invitation v
    WHERE v.cohort_id = c.id) t
 WHERE ($2::bigint IS NULL OR c.id < $2)
 ORDER BY c.id DESC
 LIMIT $1;

-- name: CohortCandidateResults
-- Each invited candidate of cohort $1 and what they did on every mission served to them
-- (their user id is `invitation:<id>`): missions served, submissions, the first passing
-- one, how many submissions it took and when its mission was served, and the variant of
-- each mission served (`<mission>#<variant> <family>`, in serve order). A page by
-- invitation id after $3 (NULL for the first).
SELECT v.id, v.name, v.email, v.created_at, v.opened_at, v.revoked_at,
       t.missions, t.submissions, p.first_passed_at, p.served_at, a.attempts_to_pass, vs.variants
  FROM missions.invitation v
 CROSS JOIN LATERAL (
   SELECT count(DISTINCT i.id)::int AS missions,
          count(s.id)::int AS submissions,
          min(s.id) FILTER (WHERE s.status = 'passed') AS first_passed_id
     FROM missions.instance i
     LEFT JOIN missions.submission s ON s.instance_id = i.id
    WHERE i.user_id = 'invitation:' || v.id) t
 CROSS JOIN LATERAL (
   SELECT coalesce(jsonb_agg(jsonb_build_object('missionId', i.mission_id::text, 'variant', x.ordinal, 'family', x.family) ORDER BY i.id), '[]') AS variants
     FROM missions.instance i
     LEFT JOIN missions.variant x ON x.id = i.variant_id
    WHERE i.user_id = 'invitation:' || v.id) vs
  LEFT JOIN LATERAL (
   SELECT s.created_at AS first_passed_at, i.created_at AS served_at
     FROM missions.submission s JOIN missions.instance i ON i.id = s.instance_id
    WHERE s.id = t.first_passed_id) p ON true
 CROSS JOIN LATERAL (
   SELECT count(*)::int AS attempts_to_pass
     FROM missions.submission s JOIN missions.instance i ON i.id = s.instance_id
    WHERE i.user_id = 'invitation:' || v.id AND s.id <= t.first_passed_id) a
 WHERE v.cohort_id = $1
   AND ($3::bigint IS NULL OR v.id > $3)
 ORDER BY v.id
 LIMIT $2;

-- name: CohortInvitations
SELECT * FROM missions.invitation WHERE cohort_id = $1 ORDER BY id;

-- name: GetInvitation
SELECT i.*, c.role, c.starts_at
  FROM missions.invitation i JOIN missions.cohort c ON c.id = i.cohort_id
 WHERE i.id = $1;

-- name: RevokeInvitation
UPDATE missions.invitation SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *;

-- name: OpenInvitation
UPDATE missions.invitation SET opened_at = now() WHERE id = $1 AND opened_at IS NULL;

-- name: InsertSigningKey
INSERT INTO missions.signing_key (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING;

-- name: GetSigningKey
SELECT secret FROM missions.signing_key WHERE name = $1;

-- name: LatestInstanceOfUser
SELECT i.id FROM missions.instance i WHERE i.user_id = $1 ORDER BY i.id DESC LIMIT 1;

-- name: CandidateInstance
-- What the candidate's page shows of their instance (its variant's code and hint), and
-- which files differ from gold (the file to fix). Gold itself never leaves the database here.
SELECT i.id, i.mission_id, i.user_id, i.created_at, x.variant,
       m.title, m.brief, m.language, m.domain, x.sabotaged, m.tests, x.hint,
       ARRAY(SELECT s.key FROM jsonb_each(x.sabotaged) s
              WHERE m.gold -> s.key IS DISTINCT FROM s.value ORDER BY s.key) AS differing
  FROM missions.instance i JOIN missions.mission m ON m.id = i.mission_id
  LEFT JOIN missions.variant v ON v.id = i.variant_id
 CROSS JOIN LATERAL (
   SELECT v.ordinal AS variant, coalesce(v.sabotaged, m.sabotaged) AS sabotaged,
          CASE WHEN v.id IS NULL THEN m.hint ELSE v.hint END AS hint) x
 WHERE i.id = $1;

-- name: InstanceSubmissions
SELECT id, instance_id, status, grading_job_id, result, error, created_at, graded_at
  FROM missions.submission WHERE instance_id = $1 ORDER BY id;

-- name: CohortPoolStock
-- What a cohort's pool holds for it: its candidates still to be served (invitations not
-- revoked, with no instance yet), and the serves left on the approved and on the pending
-- missions of its role's domains ($2).
SELECT (SELECT count(*)::int
          FROM missions.invitation v
         WHERE v.cohort_id = $1 AND v.revoked_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM missions.instance i WHERE i.user_id = 'invitation:' || v.id)) AS to_serve,
       coalesce(sum(m.max_serves - m.serve_count) FILTER (WHERE m.qa_status = 'approved' AND m.retired_at IS NULL), 0)::int AS approved_serves,
       coalesce(sum(m.max_serves - m.serve_count) FILTER (WHERE m.qa_status = 'pending'), 0)::int AS pending_serves
  FROM missions.mission m
 WHERE m.domain = ANY($2::text[]);
