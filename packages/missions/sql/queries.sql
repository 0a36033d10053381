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

-- name: InsertInstance
INSERT INTO missions.instance (mission_id, user_id) VALUES ($1, $2) RETURNING id;

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

-- name: MissionByJob
SELECT id FROM missions.mission WHERE generation_job_id = $1;

-- name: GetMission
SELECT * FROM missions.mission WHERE id = $1;

-- name: ListMissions
SELECT * FROM missions.mission
 WHERE ($1::text IS NULL OR qa_status = $1)
 ORDER BY created_at, id
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

-- name: GetInstance
SELECT i.id, i.mission_id, i.user_id, i.created_at,
       m.title, m.brief, m.language, m.domain, m.sabotaged, m.tests
  FROM missions.instance i JOIN missions.mission m ON m.id = i.mission_id
 WHERE i.id = $1;

-- name: InsertSubmission
INSERT INTO missions.submission (instance_id, files, status) VALUES ($1, $2, 'queued') RETURNING id, created_at;

-- name: SetSubmissionJob
UPDATE missions.submission SET grading_job_id = $2 WHERE id = $1;

-- name: SubmissionForGrading
SELECT s.id, s.files, s.status, m.language, m.tests, m.gold
  FROM missions.submission s
  JOIN missions.instance i ON i.id = s.instance_id
  JOIN missions.mission m ON m.id = i.mission_id
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
