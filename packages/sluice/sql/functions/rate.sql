-- Admission by rate and budget: a queue may bound the jobs it starts (`rate_count` in every
-- window of `rate_period_ms`) and the units they cost (`budget_units` in every window of
-- `budget_period_ms`, a job's `cost` counted when it starts); and the same for each key
-- (`key_rate_count` per `key_rate_period_ms`, `key_budget_units` per `key_budget_period_ms`).
--
--   start_room(queue row, now)          → (jobs, units): what may still start now (NULL: no bound)
--   key_start_room(queue row, key, now) → (jobs, units): the same for one key
--   key_start_at(queue row, key, cost, now) → when the key's next job (of that cost) may start
--                                          (NULL: no bound holds it back)
--   next_start_ms(queue, now)           → ms until the next job may start (0: now; NULL: no bound)
--   report_cost(job, token, units)      → a running job's real cost, for its start too
--   report_starts(ids, tokens, ages, now, in_claim, settling) → a worker's report of when handlers began
--   starts_ahead(queue row, now, room, limit) → the moments further starts may begin within
--                                          the horizon (start_ahead_ms)
--   key_start_ahead(queue row, key, now)  → the same for a key's next start (NULL: none
--                                          within the horizon)
--
-- Judged where the handler runs. A start is the moment its handler began, not the moment
-- its claim was recorded: the handlers of a batch begin tens of ms after their claim, and
-- a count at the claim let the next batch's handlers crowd into the window of the last
-- ones (62 in a second at a rate of 50). So a worker of this library (which says so with
-- report_starts in the statement of each claim) has every start it claims reserved
-- (job.start_reserved, counted in every window, as a job claimed ahead is) until it
-- reports when the handler began; the report rides on its next statement (a claim, a
-- completion, next_start_ms) or goes alone within 10 ms (src/worker/completer.ts), and
-- records the start at the report's arrival less the handler's age on the worker's
-- monotonic clock: never before the handler began (the statement cannot arrive before it
-- was sent), late by the report's transit at most, and that only shortens the rate.
-- Every window of the period, judged by the handlers' own start times, then holds no
-- more than the rate, globally and per key, across processes: of any rate + 1 starts
-- within one period, the last one admitted counted each other one, which was either
-- recorded no earlier than its handler began, or reserved. The tolerance is the clock's:
-- the worker's monotonic clock and the database's are assumed to run at the same speed
-- (their offset does not matter). A start never reported (its process died, its report
-- failed 8 times) is recorded as its job leaves `active`, which is later still.
-- - Admitted ahead: near the bound, a reporting worker's claim on a rate takes the room
--   that starts leaving the window free within the next start_ahead_ms (starts_ahead),
--   each job at the moment its room frees (job.started_at); the answer says how long
--   after it arrives the handler may begin, counted from the database's clock as the
--   rows were made, so the answer's way back only delays it. The start is reserved
--   meanwhile. So the claim's round trip and the wake-up are no longer paid between one
--   start and the next: a window holds the rate less only the handlers' lateness.
-- - Per key the same (key_start_ahead): a reporting worker's claim takes one job of a key
--   whose window is full when one of its places frees within the horizon, to begin then.
--   Not with a key budget (a cost decides there, not a place).
-- - A pull worker's claims (no report) record their starts at the claim, as below.
--
-- Guarantees:
-- - Exact across processes, on the database clock: claim() (claim.sql) counts a queue's
--   starts under a lock per queue and records its own (job_start) before the lock is
--   released, at the time the lock is held; so the starts of every window of the period,
--   closed at both ends, stay within the bound. A sliding window, not a fixed one: there
--   is no boundary at which twice the rate could pass.
-- - Jobs claimed ahead (they wait for a local slot of their worker, executor.ts) are
--   claimed only if the window has room for them too; on a queue without a cap only in a
--   grant (below). Until a job's start is recorded its handler may begin at any time, so
--   it counts in every window (job.start_reserved): start_room counts it as a
--   reservation, read before the recorded starts (a start recorded in between is counted
--   twice, never missed). It is recorded, in the same transaction that ends the
--   reservation, when its slot is written (take_over_slots: a handed-over job began
--   before that statement) or when it ends, from `claimed` or `active` (the trigger below; on a queue
--   without a cap that is the only end). So every start counts in each window that holds
--   the moment its handler began.
-- - Grants: where a window has room for many claims (a rate without a budget), a claim
--   under the lock held exclusively grants its worker a share of the room for a second
--   (rate_grant), counted in full in every window its time touches, as if each of its
--   starts were in all of them. The worker's next claims take their starts from the
--   grant with the lock held shared (so claims of several workers run at once) and record
--   nothing one by one; jobs claimed ahead in a grant and moved before its end need no
--   record either (their handlers began within it). A claim that takes the lock
--   exclusively waits for every claim holding it shared, so it counts every start a
--   grant gave. Near the bound (room for fewer than 16 claims) nothing is granted and
--   each claim counts exactly.
-- - Per key the same: a claim counts a key's starts in a statement after it took the key's
--   lock (pick_per_key, claim.sql) and records them (job_start.key) before the lock is
--   released. A count reads every start from the window's beginning on (none is in the
--   future of a later claim's count), so the bound holds whatever order the claims' clocks
--   were read in. Jobs without a key are not bound per key.
-- - A job held back by a rate or a budget stays pending: no attempt is spent. A key held
--   back is passed over: the other keys take their turns.
-- - A budget is taken in claim order (per key: in the key's order): a job whose cost does
--   not fit waits, and so do the jobs behind it, so a costly job is never starved by cheap
--   ones.
-- - job_start keeps each start for the queue's longest window; the maintenance tick prunes
--   what is older (sql/queries/maintenance.sql).

CREATE OR REPLACE FUNCTION :SCHEMA.start_room(q :SCHEMA.queue, p_now timestamptz, OUT jobs integer, OUT units bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_reserved integer;
  v_reserved_units bigint;
BEGIN
  IF q.rate_count IS NULL AND q.budget_units IS NULL THEN
    RETURN;
  END IF;
  SELECT r.jobs, r.units INTO v_reserved, v_reserved_units FROM :SCHEMA.reserved_starts(q) r;
  IF q.rate_count IS NOT NULL THEN
    SELECT q.rate_count - v_reserved - count(*) INTO jobs FROM :SCHEMA.job_start s
    WHERE s.queue = q.name AND s.started_at >= p_now - q.rate_period_ms * interval '1 millisecond';
    jobs := jobs - (SELECT coalesce(sum(g.jobs), 0) FROM :SCHEMA.rate_grant g
                    WHERE g.queue = q.name AND g.until >= p_now - q.rate_period_ms * interval '1 millisecond');
  END IF;
  IF q.budget_units IS NOT NULL THEN
    SELECT q.budget_units - v_reserved_units - coalesce(sum(s.units), 0) INTO units FROM :SCHEMA.job_start s
    WHERE s.queue = q.name AND s.started_at >= p_now - q.budget_period_ms * interval '1 millisecond';
  END IF;
END $$;

-- A grant of starts to a worker, taken under the queue's lock held exclusively (p_now is
-- the time it is held), if the window has room for many claims (16 of p_want); else NULL.
-- Before counting, grants no claim can take any more count only what they used: those
-- past their end, and this worker's own (it ends now, so that its claims from now on are
-- told apart from the grant's). No claim on them is in flight: such claims hold the lock
-- shared.
CREATE OR REPLACE FUNCTION :SCHEMA.grant_starts(q :SCHEMA.queue, p_worker_id text, p_now timestamptz, p_want integer)
RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE
  v_room integer;
BEGIN
  UPDATE :SCHEMA.rate_grant g SET jobs = g.used, until = least(g.until, p_now)
  WHERE g.queue = q.name AND g.until >= p_now - q.rate_period_ms * interval '1 millisecond'
    AND (g.worker_id = p_worker_id OR (g.until <= p_now AND g.jobs > g.used));
  SELECT r.jobs INTO v_room FROM :SCHEMA.start_room(q, p_now) r;
  IF v_room < 16 * p_want THEN
    RETURN NULL;
  END IF;
  -- An eighth of the room, so that every worker's share leaves room for the others';
  -- for a second, so that an unused grant holds the windows it touches for little longer
  -- than one, and a worker asks again a few times a second at most (a claim that grants
  -- waits for the claims in flight, and the claims behind it wait for it).
  INSERT INTO :SCHEMA.rate_grant AS g (queue, worker_id, granted_at, until, jobs, rate_count, rate_period_ms)
  VALUES (q.name, p_worker_id, p_now, p_now + interval '1 second', least(v_room / 8, 256 * p_want),
          q.rate_count, q.rate_period_ms)
  -- A grant closed at this very time (an injected clock): the new one continues it.
  ON CONFLICT (queue, worker_id, granted_at) DO UPDATE SET until = excluded.until, jobs = g.used + excluded.jobs;
  RETURN p_now;
END $$;

-- Records the starts of jobs claimed ahead (reserved until now) as at p_at, except those a
-- grant of their worker covers: claimed in it and moved before its end. Called before
-- the reservations are cleared.
-- (plpgsql, not sql: its plan is kept per connection, not made at every call.)
CREATE OR REPLACE FUNCTION :SCHEMA.record_reserved_starts(p_queue text, p_ids bigint[], p_at timestamptz)
RETURNS void LANGUAGE plpgsql
-- Primary-key reads, whatever the statistics say (as the moves that call it).
SET enable_bitmapscan = off SET enable_seqscan = off SET jit = off SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  INSERT INTO :SCHEMA.job_start (queue, started_at, units, job_id)
  SELECT p_queue, p_at, j.cost, j.id FROM :SCHEMA.job j
  WHERE j.id = ANY (p_ids) AND j.start_reserved AND NOT EXISTS (
    SELECT 1 FROM :SCHEMA.rate_grant g
    WHERE g.queue = p_queue AND g.worker_id = j.worker_id
      AND g.granted_at <= j.started_at AND j.started_at < g.until AND p_at <= g.until);
END $$;

-- Whether this transaction's claims come from a worker that reports when its handlers
-- begin (report_starts set it): their starts are then reserved until reported.
CREATE OR REPLACE FUNCTION :SCHEMA.starts_reported() RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT coalesce(current_setting('sluice.starts_reported', true) = 'on', false)
$$;

-- A worker's report of when its handlers began, riding on its next statement (a claim, a
-- completion, the question of when the next start is allowed): p_ages_ms[i] is how long
-- before the statement was sent the handler of job p_ids[i] began, on the worker's
-- monotonic clock. Each reported start is recorded at statement_timestamp() (when the
-- statement arrived, so no earlier than it was sent) less its age: never before the
-- handler really began, late by the statement's transit at most. The reservation ends in
-- the same statement. With p_in_claim (the report rides on a claim), a start its worker's
-- grant covers (claimed in it, and begun by its end) needs no record: only this worker's
-- claims end its grant early (grant_starts), one at a time and each after the report it
-- carries, so the grant's end is never moved before a start it covered. Elsewhere (a
-- flush that may run beside a claim) every start is recorded, counted twice at worst. Fenced by the lease tokens: a job swept or given back in
-- between had its start recorded as it left `active`.
--
-- Marks the transaction as a reporting worker's (starts_reported): its claims reserve
-- every start until reported. With p_ids NULL (a pull worker: its handlers run where
-- nothing reports them) it marks nothing, and claims record their starts as they claim.
-- Returns p_now, so that a statement can make its claim depend on (and follow) it.
-- (No SET clause: it would undo the transaction-local setting when the function returns.)
CREATE OR REPLACE FUNCTION :SCHEMA.report_starts(
  p_ids bigint[], p_tokens uuid[], p_ages_ms integer[], p_now timestamptz, p_in_claim boolean,
  p_settling bigint[] DEFAULT '{}')
RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE
  v_at timestamptz := coalesce(p_now, statement_timestamp());
BEGIN
  IF p_ids IS NULL THEN
    RETURN p_now;
  END IF;
  PERFORM set_config('sluice.starts_reported', 'on', true);
  IF cardinality(p_ids) > 0 THEN
    -- The jobs the statement settles after this (`p_settling`: completions, moves) locked
    -- with the reported ones, in one id order: locked in two runs, reports then the rest, a
    -- job reported here and settled by the worker's other statement in flight, and one the
    -- other way round, would deadlock the two (every statement on a worker's jobs sends
    -- its ids ascending, src/worker/completer.ts).
    IF cardinality(p_settling) > 0 THEN
      PERFORM 1 FROM :SCHEMA.job WHERE id = ANY (p_ids || p_settling) ORDER BY id FOR UPDATE;
    END IF;
    -- state::text: see the note at the top of queries/worker.sql.
    WITH reported AS (
      UPDATE :SCHEMA.job j SET start_reserved = NULL
      FROM unnest(p_ids, p_tokens, p_ages_ms) AS a(id, token, age_ms)
      WHERE j.id = a.id AND j.lease_token = a.token AND j.state::text IN ('active', 'claimed') AND j.start_reserved
      RETURNING j.id, j.queue, j.key, j.cost, j.worker_id, j.started_at,
                greatest(j.started_at, v_at - greatest(a.age_ms, 0) * interval '1 millisecond') AS began
    )
    INSERT INTO :SCHEMA.job_start (queue, started_at, units, job_id, key)
    SELECT r.queue, r.began, r.cost, r.id,
           CASE WHEN q.key_rate_count IS NOT NULL OR q.key_budget_units IS NOT NULL THEN r.key END
    FROM reported r JOIN :SCHEMA.queue q ON q.name = r.queue
    WHERE NOT (p_in_claim AND EXISTS (
      SELECT 1 FROM :SCHEMA.rate_grant g
      WHERE g.queue = r.queue AND g.worker_id = r.worker_id
        AND g.granted_at <= r.started_at AND r.started_at < g.until AND r.began <= g.until));
  END IF;
  RETURN p_now;
END $$;

-- A running job's real cost, reported by its handler (fenced by its lease token; NULL when
-- the token no longer holds it): the job's cost from now on, and what its current start
-- counts against the budget. Two statements, not one: a report of the job's start
-- (report_starts, from the same worker's other connection) may commit while this one
-- waits for the job's row, and only a statement begun after that sees the start it
-- recorded (with the claimed cost); a single statement's snapshot missed it, so the
-- budget counted the claimed cost.
CREATE OR REPLACE FUNCTION :SCHEMA.report_cost(p_id bigint, p_token uuid, p_units integer)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_queue text;
  v_started timestamptz;
BEGIN
  UPDATE :SCHEMA.job SET cost = p_units
  WHERE id = p_id AND lease_token = p_token AND state IN ('active', 'claimed')
  RETURNING queue, started_at INTO v_queue, v_started;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  -- A job claimed ahead is recorded when it got its slot: at or after its claim.
  UPDATE :SCHEMA.job_start s SET units = p_units
  WHERE s.queue = v_queue AND s.started_at >= v_started AND s.job_id = p_id;
  RETURN p_id;
END $$;

-- How far ahead a reporting worker's claim may admit starts (starts_ahead), in ms: a claim
-- sent this long before a start leaves the window takes its room, so that the round trip
-- and the wake-up no longer stand between one start and the next.
CREATE OR REPLACE FUNCTION :SCHEMA.start_ahead_ms() RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT 250';

-- Starts admitted ahead, for a claim of a reporting worker on a queue with a rate (its
-- room now is p_room, possibly below 0; it wants up to p_limit): beyond the room now, the
-- moments within the horizon at which further starts may begin, one per start that
-- leaves the window by then, oldest first (a start at t leaves it just after t + period).
-- The job admitted at such a moment is reserved like any other until its worker reports
-- when its handler began, which is never before that moment (the worker waits for it):
-- so each window judged by handler starts holds no more than the rate, the reservation
-- counting in every window until the report.
CREATE OR REPLACE FUNCTION :SCHEMA.starts_ahead(q :SCHEMA.queue, p_now timestamptz, p_room integer, p_limit integer)
RETURNS timestamptz[] LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF p_limit <= greatest(p_room, 0) THEN
    RETURN '{}';
  END IF;
  RETURN ARRAY(
    SELECT x.at FROM (
      SELECT u.t + q.rate_period_ms * interval '1 millisecond' + interval '1 microsecond' AS at
      FROM (SELECT s.started_at AS t FROM :SCHEMA.job_start s
            WHERE s.queue = q.name AND s.started_at >= p_now - q.rate_period_ms * interval '1 millisecond'
            UNION ALL
            -- A grant counts as its starts at its end (as in next_start_ms).
            SELECT g.until FROM :SCHEMA.rate_grant g, generate_series(1, g.jobs)
            WHERE g.queue = q.name AND g.until >= p_now - q.rate_period_ms * interval '1 millisecond') u
      ORDER BY u.t
      OFFSET greatest(-p_room, 0) LIMIT p_limit - greatest(p_room, 0)
    ) x
    WHERE x.at <= p_now + :SCHEMA.start_ahead_ms() * interval '1 millisecond'
    ORDER BY x.at);
END $$;

-- When a key's next start may begin, if a place of its window frees within the horizon
-- (NULL otherwise, or while it has room now). As starts_ahead for the queue: the key's
-- reserved starts hold a place in every window, so the place is the one its
-- (reserved + recorded - count + 1)-th oldest recorded start leaves: after it, the window
-- holds count - 1 others at most.
CREATE OR REPLACE FUNCTION :SCHEMA.key_start_ahead(q :SCHEMA.queue, p_key text, p_now timestamptz)
RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_room integer;
  v_at timestamptz;
BEGIN
  SELECT r.jobs INTO v_room FROM :SCHEMA.key_start_room(q, p_key, p_now) r;
  IF v_room IS NULL OR v_room > 0 THEN
    RETURN NULL;
  END IF;
  SELECT s.started_at + q.key_rate_period_ms * interval '1 millisecond' + interval '1 microsecond' INTO v_at
  FROM :SCHEMA.job_start s
  WHERE s.queue = q.name AND s.key = p_key AND s.started_at >= p_now - q.key_rate_period_ms * interval '1 millisecond'
  ORDER BY s.started_at
  OFFSET -v_room LIMIT 1;
  RETURN CASE WHEN v_at <= p_now + :SCHEMA.start_ahead_ms() * interval '1 millisecond' THEN v_at END;
END $$;

-- Starts reserved and not yet recorded: jobs claimed ahead, still waiting for a slot
-- (job.start_reserved; also after the cap was lifted or the rate removed: they may still
-- begin).
CREATE OR REPLACE FUNCTION :SCHEMA.reserved_starts(q :SCHEMA.queue, OUT jobs integer, OUT units bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  SELECT count(*)::integer, coalesce(sum(j.cost), 0)::bigint INTO jobs, units FROM :SCHEMA.job j
  WHERE j.queue = q.name AND j.state IN ('active', 'claimed') AND j.start_reserved;
END $$;

-- A job whose start is still reserved that ends, `claimed` (still waiting for its slot: it
-- completed or failed before its move was written, was swept, cancelled or given back) or
-- `active`, has its start recorded as it leaves, unless its grant covers it: its handler may have begun (a job
-- given back unstarted counts too, which only errs on the safe side). A completion that
-- finds the grant covering it clears the reservation itself (complete_and_claim), so
-- the trigger does not fire.
-- A BEFORE trigger, like job_release_slot (slots.sql): the old row is then read once for
-- both, where an AFTER UPDATE row trigger would read every updated row of `job` again.
CREATE OR REPLACE FUNCTION :SCHEMA.job_record_reserved_start() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM :SCHEMA.rate_grant g
                     WHERE g.queue = NEW.queue AND g.worker_id = NEW.worker_id
                       AND g.granted_at <= NEW.started_at AND NEW.started_at < g.until AND now() <= g.until) THEN
    INSERT INTO :SCHEMA.job_start (queue, started_at, units, job_id, key)
    SELECT NEW.queue, now(), NEW.cost, NEW.id,
           CASE WHEN q.key_rate_count IS NOT NULL OR q.key_budget_units IS NOT NULL THEN NEW.key END
    FROM :SCHEMA.queue q WHERE q.name = NEW.queue;
  END IF;
  RETURN NEW;
END $$;

DROP TRIGGER IF EXISTS job_record_reserved_start ON :SCHEMA.job;
CREATE TRIGGER job_record_reserved_start BEFORE UPDATE OF state ON :SCHEMA.job
-- Only such jobs fire it (job.start_reserved): the other state changes pay one test.
FOR EACH ROW WHEN (OLD.start_reserved AND NEW.start_reserved AND OLD.state IN ('active', 'claimed') AND NEW.state NOT IN ('active', 'claimed'))
EXECUTE FUNCTION :SCHEMA.job_record_reserved_start();

CREATE OR REPLACE FUNCTION :SCHEMA.key_start_room(q :SCHEMA.queue, p_key text, p_now timestamptz, OUT jobs integer, OUT units bigint)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_reserved integer;
  v_reserved_units bigint;
BEGIN
  IF q.key_rate_count IS NULL AND q.key_budget_units IS NULL THEN
    RETURN;
  END IF;
  -- The key's reserved starts first (read before the recorded ones, as in start_room).
  SELECT r.jobs, r.units INTO v_reserved, v_reserved_units FROM :SCHEMA.key_reserved_starts(q, p_key) r;
  IF q.key_rate_count IS NOT NULL THEN
    SELECT q.key_rate_count - v_reserved - count(*) INTO jobs FROM :SCHEMA.job_start s
    WHERE s.queue = q.name AND s.key = p_key AND s.started_at >= p_now - q.key_rate_period_ms * interval '1 millisecond';
  END IF;
  IF q.key_budget_units IS NOT NULL THEN
    SELECT q.key_budget_units - v_reserved_units - coalesce(sum(s.units), 0) INTO units FROM :SCHEMA.job_start s
    WHERE s.queue = q.name AND s.key = p_key AND s.started_at >= p_now - q.key_budget_period_ms * interval '1 millisecond';
  END IF;
END $$;

-- A key's starts reserved and not yet recorded: its jobs claimed by a worker that reports
-- when their handlers began (report_starts), not reported yet.
CREATE OR REPLACE FUNCTION :SCHEMA.key_reserved_starts(q :SCHEMA.queue, p_key text, OUT jobs integer, OUT units bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  SELECT count(*)::integer, coalesce(sum(j.cost), 0)::bigint INTO jobs, units FROM :SCHEMA.job j
  WHERE j.queue = q.name AND j.state IN ('active', 'claimed') AND j.key = p_key AND j.start_reserved;
END $$;

-- When a key's rate and budget let its next job start: once the starts that keep its
-- window full have left it (NULL: nothing holds it back now).
CREATE OR REPLACE FUNCTION :SCHEMA.key_start_at(q :SCHEMA.queue, p_key text, p_cost integer, p_now timestamptz)
RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_rate_at timestamptz;
  v_budget_at timestamptz;
  v_reserved integer;
  v_reserved_units bigint;
BEGIN
  -- Reserved starts (not reported yet) count as starts now: the earliest they can be.
  SELECT r.jobs, r.units INTO v_reserved, v_reserved_units FROM :SCHEMA.key_reserved_starts(q, p_key) r;
  IF q.key_rate_count IS NOT NULL AND v_reserved >= q.key_rate_count THEN
    v_rate_at := p_now + q.key_rate_period_ms * interval '1 millisecond';
  ELSIF q.key_rate_count IS NOT NULL THEN
    SELECT s.started_at + q.key_rate_period_ms * interval '1 millisecond' INTO v_rate_at
    FROM :SCHEMA.job_start s
    WHERE s.queue = q.name AND s.key = p_key AND s.started_at >= p_now - q.key_rate_period_ms * interval '1 millisecond'
    ORDER BY s.started_at DESC OFFSET q.key_rate_count - 1 - v_reserved LIMIT 1;
  END IF;
  IF q.key_budget_units IS NOT NULL AND v_reserved_units + p_cost > q.key_budget_units THEN
    v_budget_at := p_now + q.key_budget_period_ms * interval '1 millisecond';
  ELSIF q.key_budget_units IS NOT NULL THEN
    SELECT x.started_at + q.key_budget_period_ms * interval '1 millisecond' INTO v_budget_at
    FROM (
      SELECT s.started_at, sum(s.units) OVER (ORDER BY s.started_at DESC, s.job_id DESC) AS newer
      FROM :SCHEMA.job_start s
      WHERE s.queue = q.name AND s.key = p_key AND s.started_at >= p_now - q.key_budget_period_ms * interval '1 millisecond'
    ) x
    WHERE x.newer + v_reserved_units + p_cost > q.key_budget_units
    ORDER BY x.started_at DESC LIMIT 1;
  END IF;
  RETURN greatest(v_rate_at, v_budget_at);
END $$;

-- When the rate and the budget next let a job start: once the starts that keep the window
-- full have left it. For the budget, the job waiting first in claim order (cost 1 if none
-- is ready) must fit.
--
-- Per key: the earliest time any key with a job due may start one, among the keys the
-- next claims visit first (from the cursor on, at most 100: the cost is bounded, and a
-- later key is found by the worker's poll). A job without a key, or a key no bound holds
-- back, may start now; a key at its perKeyConcurrency is left out (a completion wakes
-- the workers).
CREATE OR REPLACE FUNCTION :SCHEMA.next_start_ms(p_queue text, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, clock_timestamp());
  v_rate_at timestamptz;
  v_budget_at timestamptz;
  v_key_at timestamptz;
  v_cost integer;
  v_cursor text;
  v_from text;
  v_key text;
  v_priority integer;
  v_run_at timestamptz;
  v_wrapped boolean := false;
  v_at timestamptz;
  v_reserved integer;
  v_reserved_units bigint;
  v_key_ahead boolean;
BEGIN
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  v_key_ahead := :SCHEMA.starts_reported() AND p_now IS NULL AND q.key_rate_count IS NOT NULL AND q.key_budget_units IS NULL;
  IF q.name IS NULL OR (q.rate_count IS NULL AND q.budget_units IS NULL
                        AND q.key_rate_count IS NULL AND q.key_budget_units IS NULL) THEN
    RETURN NULL;
  END IF;
  -- Reserved starts (jobs claimed ahead) count as starts now: the earliest they can be.
  SELECT r.jobs, r.units INTO v_reserved, v_reserved_units FROM :SCHEMA.reserved_starts(q) r;
  IF q.rate_count IS NOT NULL AND v_reserved >= q.rate_count THEN
    v_rate_at := v_now + q.rate_period_ms * interval '1 millisecond';
  ELSIF q.rate_count IS NOT NULL THEN
    -- The newest start that, with those after it, fills the window: while it is in, the
    -- window is full. A grant counts as its starts at its end (the latest they can be).
    SELECT x.t + q.rate_period_ms * interval '1 millisecond' INTO v_rate_at
    FROM (
      SELECT u.t, sum(u.n) OVER (ORDER BY u.t DESC ROWS UNBOUNDED PRECEDING) AS newer
      FROM (SELECT s.started_at AS t, 1 AS n FROM :SCHEMA.job_start s
            WHERE s.queue = p_queue AND s.started_at >= v_now - q.rate_period_ms * interval '1 millisecond'
            UNION ALL
            SELECT g.until, g.jobs FROM :SCHEMA.rate_grant g
            WHERE g.queue = p_queue AND g.until >= v_now - q.rate_period_ms * interval '1 millisecond') u
    ) x
    WHERE x.newer + v_reserved >= q.rate_count
    ORDER BY x.t DESC LIMIT 1;
  END IF;
  IF q.budget_units IS NOT NULL THEN
    SELECT j.cost INTO v_cost FROM :SCHEMA.job j
    WHERE j.queue = p_queue AND j.state = 'pending' AND j.run_at <= v_now
    ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1;
    -- The newest start that, with every start after it and the waiting job, passes the budget.
    SELECT x.started_at + q.budget_period_ms * interval '1 millisecond' INTO v_budget_at
    FROM (
      SELECT s.started_at, sum(s.units) OVER (ORDER BY s.started_at DESC, s.job_id DESC) AS newer
      FROM :SCHEMA.job_start s
      WHERE s.queue = p_queue AND s.started_at >= v_now - q.budget_period_ms * interval '1 millisecond'
    ) x
    WHERE x.newer + v_reserved_units + coalesce(v_cost, 1) > q.budget_units
    ORDER BY x.started_at DESC LIMIT 1;
    IF v_reserved_units + coalesce(v_cost, 1) > q.budget_units THEN
      v_budget_at := v_now + q.budget_period_ms * interval '1 millisecond';
    END IF;
  END IF;
  IF (q.key_rate_count IS NOT NULL OR q.key_budget_units IS NOT NULL) AND NOT EXISTS (
       SELECT 1 FROM :SCHEMA.job j
       WHERE j.queue = p_queue AND j.state = 'pending' AND j.key IS NULL AND j.run_at <= v_now) THEN
    SELECT c.key INTO v_cursor FROM :SCHEMA.key_cursor c WHERE c.queue = p_queue;
    v_from := coalesce(v_cursor, '');
    FOR v_step IN 1..100 LOOP
      -- The next key with a pending job: its most urgent one (an index probe).
      SELECT j.key, j.priority, j.run_at, j.cost INTO v_key, v_priority, v_run_at, v_cost FROM :SCHEMA.job j
      WHERE j.queue = p_queue AND j.state = 'pending' AND j.key > v_from
      ORDER BY j.key, j.priority DESC, j.run_at, j.id LIMIT 1;
      IF NOT FOUND OR (v_wrapped AND v_key > v_cursor) THEN
        EXIT WHEN v_wrapped OR v_cursor IS NULL;
        v_wrapped := true;
        v_from := '';
        CONTINUE;
      END IF;
      v_from := v_key;
      CONTINUE WHEN v_run_at > v_now AND NOT :SCHEMA.key_has_ready_job(p_queue, v_key, v_priority, v_now);
      CONTINUE WHEN q.per_key_concurrency IS NOT NULL AND (
        SELECT count(*) FROM :SCHEMA.job a
        WHERE a.queue = p_queue AND a.state IN ('active', 'claimed') AND a.key = v_key) >= q.per_key_concurrency;
      -- A key whose first job is not due: its due one's cost is not read (1 is the earliest).
      v_at := coalesce(:SCHEMA.key_start_at(q, v_key, CASE WHEN v_run_at <= v_now THEN v_cost ELSE 1 END, v_now), v_now);
      IF v_key_ahead AND v_run_at <= v_now THEN
        -- A reporting worker's claim admits the key's next start a horizon early.
        v_at := greatest(v_at - :SCHEMA.start_ahead_ms() * interval '1 millisecond', v_now);
      END IF;
      v_key_at := least(v_key_at, v_at);
      IF v_key_at <= v_now THEN
        v_key_at := NULL; -- a key may start now
        EXIT;
      END IF;
    END LOOP;
  END IF;
  -- A reporting worker claims a horizon early on a rate alone: its claim admits starts
  -- ahead (starts_ahead), each at the moment its room frees.
  IF :SCHEMA.starts_reported() AND p_now IS NULL AND v_rate_at IS NOT NULL
     AND v_rate_at >= coalesce(greatest(v_budget_at, v_key_at), v_rate_at) THEN
    v_rate_at := greatest(v_rate_at - :SCHEMA.start_ahead_ms() * interval '1 millisecond',
                          coalesce(greatest(v_budget_at, v_key_at), v_now));
  END IF;
  RETURN greatest(0, ceil(extract(epoch FROM greatest(v_rate_at, v_budget_at, v_key_at) - v_now) * 1000) + 1)::integer;
END $$;

-- A budget added to a queue that had none: starts taken from grants (made only without a
-- budget) were counted in the grants, not one by one, so the budget's window would miss
-- them. They are recorded now, from the jobs that began within each grant in the window
-- (running, or finished since the window began: two index reads; an attempt that failed
-- back to pending is not found, nor a job retention already deleted), and the grants are
-- ended, under the queue's rate lock held exclusively: claims in flight under a grant
-- finish first, and later ones find their grant over and count exactly. The rate then
-- counts these starts twice for at most a window, on the safe side.
CREATE OR REPLACE FUNCTION :SCHEMA.queue_budget_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_from timestamptz := now() - NEW.budget_period_ms * interval '1 millisecond';
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.rate'), hashtext(NEW.name));
  INSERT INTO :SCHEMA.job_start (queue, started_at, units, job_id)
  SELECT NEW.name, j.started_at, j.cost, j.id
  FROM (SELECT * FROM :SCHEMA.job a WHERE a.queue = NEW.name AND a.state IN ('active', 'claimed')
        UNION ALL
        SELECT * FROM :SCHEMA.job f
        WHERE f.queue = NEW.name AND f.state IN ('completed', 'cancelled', 'dead') AND f.finished_at >= v_from) j
  -- Jobs claimed ahead still hold reservations, which every count reads already.
  WHERE j.started_at >= v_from AND j.start_reserved IS NOT TRUE AND EXISTS (
    SELECT 1 FROM :SCHEMA.rate_grant g
    WHERE g.queue = NEW.name AND g.worker_id = j.worker_id AND g.granted_at <= j.started_at AND j.started_at < g.until);
  UPDATE :SCHEMA.rate_grant g SET jobs = g.used, until = least(g.until, now())
  WHERE g.queue = NEW.name AND g.until > now();
  RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS queue_budget_added ON :SCHEMA.queue;
CREATE TRIGGER queue_budget_added AFTER UPDATE OF budget_units ON :SCHEMA.queue
FOR EACH ROW WHEN (OLD.budget_units IS NULL AND NEW.budget_units IS NOT NULL)
EXECUTE FUNCTION :SCHEMA.queue_budget_added();
