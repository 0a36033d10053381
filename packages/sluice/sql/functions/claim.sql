-- Claims: pending jobs become active in exactly one claimer, with a fresh lease token; and
-- completions, which a worker writes in the statement of its next claim (one round trip).
--
--   claim(queue, limit, worker, now, ahead, in_hand) → the claimed job rows; two of its parts:
--     claim_start_room(queue row, …) → what rate and budget let start (rate.sql)
--     claim_slots(queue row, in_hand, …) → a capped queue's slots (slots.sql)
--   lone_claim(queue, limit, worker, now, ahead)      → the same, for an uncapped queue,
--                                                       without waiting for the WAL flush
--   complete_and_claim(ids, tokens, results, now, notify, queue, limit, worker, ahead,
--                      move_ids, move_tokens) → (completed ids, moved ids, claimed jobs)
--   complete_and_move(ids, tokens, results, now, notify, queue, move_ids, move_tokens)
--     → (completed ids, moved ids): the same without a claim
--   claimed_json(job row, now) → a claimed job as the worker reads it
--
-- Guarantees:
-- - Atomic: jobs are picked FOR UPDATE SKIP LOCKED from the ready index (priority, then
--   due time, then id), so a job is handed to one claimer only.
-- - The global cap is exact: a job of a capped queue starts only with a slot (slots.sql);
--   jobs claimed ahead (`ahead`) wait with slot 0 and are granted only when every free
--   local slot got a slot, none while slots above a lowered cap are held.
-- - Rate and budget (rate.sql): a claim of such a queue starts only what its windows
--   allow, counted and recorded under the queue's lock; on a capped queue its jobs ahead
--   reserve their starts in the windows until their slots are written.
-- - Per-key concurrency, rate and budget: keys take turns (pick_per_key), so one key cannot
--   starve the others, and no key passes its limits: a claim takes a lock per key with a
--   try-lock (a key another claim is serving is skipped, not waited for) and reads the
--   key's running count and its starts in the window (rate.sql) in a statement after the
--   lock, so the counts include every job the previous holder claimed. Only claims start
--   jobs, and every claim of a key holds its lock until its starts are recorded. Keys
--   whose hashes collide share a lock: served by one claim at a time, only slower.
-- - The time is the database's (`now`, injectable for tests); leases end at now +
--   lease_seconds.
-- - Completions are fenced: a job is completed only if it is still active under the lease
--   token given; a late result of a swept job changes nothing (its id is missing from
--   `completed`).
-- - A completed job's slot is handed to this worker's jobs waiting with slot 0 (`move_ids`,
--   fenced by their tokens), then to the claim; the rest are freed. A completion that
--   waited for the statement moving its job into a slot keeps that slot on the row, so the
--   trigger frees it (slots.sql).
-- - Planned the way they are written, with one generic plan per connection (see slots.sql).

-- Whether a key has a job due by p_now among those of priority below p_below (its first
-- job, of priority p_below, is not due). A key's pending jobs are indexed by priority, then
-- due time: one probe per lower priority level reads that level's earliest job, so a key
-- whose jobs all wait for later (retries backing off) costs a probe or two, not a read of
-- every job it holds.
CREATE OR REPLACE FUNCTION :SCHEMA.key_has_ready_job(p_queue text, p_key text, p_below integer, p_now timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_priority integer := p_below;
  v_run_at timestamptz;
BEGIN
  LOOP
    SELECT j.priority, j.run_at INTO v_priority, v_run_at FROM :SCHEMA.job j
    WHERE j.queue = p_queue AND j.state = 'pending' AND j.key = p_key AND j.priority < v_priority
    ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1;
    IF NOT FOUND THEN
      RETURN false;
    ELSIF v_run_at <= p_now THEN
      RETURN true;
    END IF;
  END LOOP;
END $$;

-- The jobs a claim takes from a queue with per_key_concurrency, a per-key rate or a per-key
-- budget (without per_key_concurrency a key's room is its rate's). Keys take turns: a round
-- gives every key with room its next job (highest priority, then oldest), walking the keys
-- in order from just after the cursor, with the jobs without a key taking one turn where
-- the walk wraps around; rounds repeat until the batch is full or a round finds nothing.
--
-- Set-based, so a claim costs a few statements rather than a few per job: the walk lists
-- the next keys with a ready job (one index probe each, a recursive skip scan), passes over
-- those already full (running count, or starts in a per-key window) as far as its
-- snapshot shows (a key it wrongly thinks has room is
-- caught below; one it wrongly thinks full waits for the next claim) and takes the lock
-- of each key no other claim holds; a second statement, whose snapshot is taken
-- after those locks, reads each key's running count and starts in its windows, and locks
-- its next job if it fits (a key's budget is taken in the key's order: a job that does not
-- fit ends the key's share of the claim). Only when the
-- first round leaves the batch short (fewer keys with room than jobs wanted) do further
-- rounds run, one statement each. Every job picked is locked (a job being cancelled is
-- skipped), so it is still pending when the claim updates it.
--
-- With `p_ahead` (a reporting worker's claim, a key rate without a key budget), a key whose
-- window is full gives one job admitted ahead when a place frees within the horizon
-- (key_start_ahead, rate.sql): in `ahead_ids`, to begin at its `ahead_at`.
DROP FUNCTION IF EXISTS :SCHEMA.pick_per_key(:SCHEMA.queue, integer, timestamptz);
CREATE OR REPLACE FUNCTION :SCHEMA.pick_per_key(q :SCHEMA.queue, p_limit integer, p_now timestamptz, p_ahead boolean,
                                                 OUT ids bigint[], OUT ahead_ids bigint[], OUT ahead_at timestamptz[])
LANGUAGE plpgsql AS $$
DECLARE
  v_cursor text;
  v_from text;
  v_batch text[];
  v_ids bigint[] := '{}';
  -- Keys that gave a job in round 1, in walk order, the room each had and the units of its
  -- budget left (NULL: no budget); NULL is the keyless turn (unlimited room), at
  -- v_keyless_pos among them.
  v_keys text[] := '{}';
  v_rooms integer[] := '{}';
  v_units bigint[] := '{}';
  v_more_costs integer[];
  v_key_rated boolean := q.key_rate_count IS NOT NULL OR q.key_budget_units IS NOT NULL;
  v_keyless_pos integer;
  v_more bigint[];
  v_more_keys text[];
  v_id bigint;
  v_last text;
  v_want integer;
BEGIN
  ahead_ids := '{}';
  ahead_at := '{}';
  SELECT c.key INTO v_cursor FROM :SCHEMA.key_cursor c WHERE c.queue = q.name;

  -- Round 1. Pass 1: keys after the cursor; pass 2: the keyless turn; pass 3: keys up to it.
  FOR v_pass IN 1..3 LOOP
    EXIT WHEN cardinality(v_ids) >= p_limit;
    IF v_pass = 2 THEN
      SELECT j.id INTO v_id FROM :SCHEMA.job j
      WHERE j.queue = q.name AND j.state = 'pending' AND j.key IS NULL AND j.run_at <= p_now
      ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1
      FOR UPDATE SKIP LOCKED;
      IF FOUND THEN
        v_ids := v_ids || v_id;
        v_keys := v_keys || NULL::text;
        v_rooms := v_rooms || p_limit;
        v_units := v_units || NULL::bigint;
        v_keyless_pos := cardinality(v_keys);
      END IF;
      CONTINUE;
    END IF;
    CONTINUE WHEN v_pass = 3 AND v_cursor IS NULL;
    v_from := CASE WHEN v_pass = 1 THEN coalesce(v_cursor, '') ELSE '' END;
    LOOP
      v_want := p_limit - cardinality(v_ids);
      -- The next keys with a ready job, each locked unless another claim holds it.
      v_batch := ARRAY(
        -- Each step reads the first index entry of the next key: its most urgent job.
        WITH RECURSIVE walk(key, priority, run_at) AS (
          (SELECT j.key, j.priority, j.run_at FROM :SCHEMA.job j
           WHERE j.queue = q.name AND j.state = 'pending' AND j.key > v_from
           ORDER BY j.key, j.priority DESC, j.run_at, j.id LIMIT 1)
          UNION ALL
          SELECT n.key, n.priority, n.run_at
          FROM walk w, LATERAL (SELECT j.key, j.priority, j.run_at FROM :SCHEMA.job j
                                WHERE j.queue = q.name AND j.state = 'pending' AND j.key > w.key
                                ORDER BY j.key, j.priority DESC, j.run_at, j.id LIMIT 1) n
          WHERE v_pass = 1 OR w.key <= v_cursor
        )
        SELECT w.key FROM walk w
        WHERE CASE WHEN v_pass = 3 AND w.key > v_cursor THEN false
                   -- No job due yet: passed over (its later jobs are not read).
                   WHEN w.run_at > p_now AND NOT :SCHEMA.key_has_ready_job(q.name, w.key, w.priority, p_now) THEN false
                   -- Full as of this statement's snapshot: passed over without its lock.
                   WHEN q.per_key_concurrency IS NOT NULL AND (SELECT count(*) FROM :SCHEMA.job a
                         WHERE a.queue = q.name AND a.state IN ('active', 'claimed') AND a.key = w.key) >= q.per_key_concurrency THEN false
                   WHEN v_key_rated AND (SELECT r.jobs <= 0 OR r.units <= 0 FROM :SCHEMA.key_start_room(q, w.key, p_now) r)
                        AND NOT (p_ahead AND :SCHEMA.key_start_ahead(q, w.key, p_now) IS NOT NULL) THEN false
                   ELSE pg_try_advisory_xact_lock(hashtext(':SCHEMA_NAME.claim_key'), hashtext(q.name || '/' || w.key)) END
        LIMIT v_want);
      EXIT WHEN cardinality(v_batch) = 0;
      -- A new statement, so a snapshot taken after the locks: each key's running count and
      -- starts in its windows, and the next job of each key with room, if it fits.
      -- A key whose window is full may give one job admitted ahead (room 1, no more rounds).
      SELECT v_ids || coalesce(array_agg(c.id ORDER BY k.pos), '{}'),
             v_keys || coalesce(array_agg(k.key ORDER BY k.pos), '{}'),
             v_rooms || coalesce(array_agg(r.room ORDER BY k.pos), '{}'),
             v_units || coalesce(array_agg(r.units - c.cost ORDER BY k.pos), '{}'),
             ahead_ids || coalesce(array_agg(c.id ORDER BY k.pos) FILTER (WHERE r.start_ahead IS NOT NULL), '{}'),
             ahead_at || coalesce(array_agg(r.start_ahead ORDER BY k.pos) FILTER (WHERE r.start_ahead IS NOT NULL), '{}')
      INTO v_ids, v_keys, v_rooms, v_units, ahead_ids, ahead_at
      FROM unnest(v_batch) WITH ORDINALITY AS k(key, pos)
      CROSS JOIN LATERAL (
        SELECT CASE WHEN a.at IS NOT NULL THEN least(q.per_key_concurrency - n.running, 1)
                    ELSE coalesce(least(q.per_key_concurrency - n.running, s.jobs), p_limit) END AS room,
               s.units, a.at AS start_ahead
        FROM (SELECT count(*)::integer AS running FROM :SCHEMA.job a
              WHERE q.per_key_concurrency IS NOT NULL
                AND a.queue = q.name AND a.state IN ('active', 'claimed') AND a.key = k.key) n,
             :SCHEMA.key_start_room(q, k.key, p_now) s,
             LATERAL (SELECT CASE WHEN p_ahead AND s.jobs <= 0 THEN :SCHEMA.key_start_ahead(q, k.key, p_now) END AS at) a) r
      CROSS JOIN LATERAL (SELECT j.id, j.cost FROM :SCHEMA.job j
                          WHERE j.queue = q.name AND j.state = 'pending' AND j.key = k.key
                            AND j.run_at <= p_now AND r.room > 0
                          ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1
                          FOR UPDATE SKIP LOCKED) c
      WHERE c.cost <= coalesce(r.units, c.cost);
      v_from := v_batch[cardinality(v_batch)];
      EXIT WHEN cardinality(v_batch) < v_want OR cardinality(v_ids) >= p_limit;
    END LOOP;
  END LOOP;

  -- The cursor moves to the last key served, in walk order.
  v_last := (SELECT u.k FROM unnest(v_keys) WITH ORDINALITY AS u(k, i) WHERE u.k IS NOT NULL ORDER BY u.i DESC LIMIT 1);

  -- Further rounds, while the batch is short: one more job from every key that has room.
  FOR v_round IN 2..p_limit LOOP
    EXIT WHEN cardinality(v_ids) >= p_limit;
    v_want := p_limit - cardinality(v_ids);
    SELECT coalesce(array_agg(x.id ORDER BY x.pos), '{}'), coalesce(array_agg(x.key ORDER BY x.pos), '{}'),
           coalesce(array_agg(x.cost ORDER BY x.pos), '{}')
    INTO v_more, v_more_keys, v_more_costs
    FROM (
      SELECT k.pos, k.key, c.id, c.cost
      FROM unnest(v_keys, v_rooms, v_units) WITH ORDINALITY AS k(key, room, units, pos)
      CROSS JOIN LATERAL (SELECT j.id, j.cost FROM :SCHEMA.job j
                          WHERE j.queue = q.name AND j.state = 'pending' AND j.key = k.key
                            AND j.run_at <= p_now AND j.id <> ALL (v_ids)
                          ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1
                          FOR UPDATE SKIP LOCKED) c
      WHERE k.key IS NOT NULL AND k.room >= v_round AND c.cost <= coalesce(k.units, c.cost)
      ORDER BY k.pos LIMIT v_want
    ) x;
    IF q.key_budget_units IS NOT NULL AND cardinality(v_more) > 0 THEN
      -- What each key's budget has left after this round's jobs.
      v_units := ARRAY(
        SELECT u.units - coalesce(m.cost, 0)
        FROM unnest(v_keys, v_units) WITH ORDINALITY AS u(key, units, pos)
        LEFT JOIN unnest(v_more_keys, v_more_costs) AS m(key, cost) ON m.key = u.key
        ORDER BY u.pos);
    END IF;
    IF v_keyless_pos IS NOT NULL THEN
      SELECT j.id INTO v_id FROM :SCHEMA.job j
      WHERE j.queue = q.name AND j.state = 'pending' AND j.key IS NULL AND j.run_at <= p_now
        AND j.id <> ALL (v_ids)
      ORDER BY j.priority DESC, j.run_at, j.id LIMIT 1
      FOR UPDATE SKIP LOCKED;
      IF FOUND THEN
        -- The keyless job takes its place in the walk order.
        SELECT coalesce(array_agg(m.id ORDER BY m.pos), '{}'), coalesce(array_agg(m.key ORDER BY m.pos), '{}')
        INTO v_more, v_more_keys FROM (
          SELECT a.id, a.key, array_position(v_keys, a.key) AS pos FROM unnest(v_more, v_more_keys) AS a(id, key)
          UNION ALL SELECT v_id, NULL, v_keyless_pos
          ORDER BY 3 LIMIT v_want) m;
      ELSE
        v_keyless_pos := NULL;
      END IF;
    END IF;
    EXIT WHEN cardinality(v_more) = 0;
    v_ids := v_ids || v_more;
    v_last := coalesce((SELECT u.k FROM unnest(v_more_keys) WITH ORDINALITY AS u(k, i) WHERE u.k IS NOT NULL
                        ORDER BY u.i DESC LIMIT 1), v_last);
  END LOOP;

  IF v_last IS NOT NULL THEN
    -- Skipped when another claim holds the cursor row: it is moving the cursor itself.
    UPDATE :SCHEMA.key_cursor c SET key = v_last
    FROM (SELECT queue FROM :SCHEMA.key_cursor WHERE queue = q.name FOR UPDATE SKIP LOCKED) mine
    WHERE c.queue = mine.queue;
    IF NOT FOUND AND v_cursor IS NULL THEN
      INSERT INTO :SCHEMA.key_cursor (queue, key) VALUES (q.name, v_last) ON CONFLICT DO NOTHING;
    END IF;
  END IF;
  ids := v_ids;
END $$;

-- A claim's rate and budget (rate.sql): how many of the `p_limit` jobs it asks for
-- (`p_free` of them for its free local slots) may start, and the budget's units left.
-- Counted under the queue's lock, taken here and held to the end of the claim's
-- transaction, at the time it is held (`counted_at`); the claim records its starts before the
-- lock is released. Or, for a rate alone, taken from this worker's grant under the lock
-- shared. Jobs are claimed ahead only if the window (or the grant) has room for them
-- too, each reserving its start until its slot is written or it ends; on a queue without
-- a cap, only in a grant (otherwise such a reservation would hold the window for the
-- whole of its job). Admitted ahead: a reporting worker's claim on a rate also takes the
-- starts that the rate lets begin within the horizon (starts_ahead), `start_at[i]` for
-- the job after the first `room_now`; its worker begins the handler no earlier.
CREATE OR REPLACE FUNCTION :SCHEMA.claim_start_room(
  q :SCHEMA.queue, p_worker_id text, p_now timestamptz, p_limit integer, p_free integer,
  p_key_rated boolean, p_reported boolean,
  OUT lim integer, OUT units bigint, OUT counted_at timestamptz, OUT grant_at timestamptz,
  OUT start_at timestamptz[], OUT room_now integer)
LANGUAGE plpgsql AS $$
DECLARE
  v_grantable boolean := q.budget_units IS NULL AND NOT p_key_rated AND p_worker_id IS NOT NULL;
  v_room integer;
BEGIN
  lim := p_limit;
  start_at := '{}';
  room_now := 0;
  IF v_grantable AND EXISTS (
       SELECT 1 FROM :SCHEMA.rate_grant g
       WHERE g.queue = q.name AND g.worker_id = p_worker_id AND g.jobs - g.used >= p_limit
         AND g.rate_count = q.rate_count AND g.rate_period_ms = q.rate_period_ms
         AND g.until > coalesce(p_now, clock_timestamp()) + interval '50 milliseconds') THEN
    -- Looked at without a lock, so that a claim holding the shared lock never asks for
    -- the exclusive one (two such claims would deadlock); checked again under it.
    PERFORM pg_advisory_xact_lock_shared(hashtext(':SCHEMA_NAME.rate'), hashtext(q.name));
    counted_at := coalesce(p_now, clock_timestamp());
    SELECT g.granted_at, g.jobs - g.used INTO grant_at, v_room FROM :SCHEMA.rate_grant g
    WHERE g.queue = q.name AND g.worker_id = p_worker_id AND g.granted_at <= counted_at AND g.until > counted_at
      AND g.rate_count = q.rate_count AND g.rate_period_ms = q.rate_period_ms
    ORDER BY g.granted_at DESC LIMIT 1
    FOR UPDATE;
    -- A grant that ran out in between (a long wait for the lock): what is left of it.
    v_room := coalesce(v_room, 0);
  ELSE
    PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.rate'), hashtext(q.name));
    counted_at := coalesce(p_now, clock_timestamp());
    IF v_grantable THEN
      grant_at := :SCHEMA.grant_starts(q, p_worker_id, counted_at, p_limit);
    END IF;
    IF grant_at IS NOT NULL THEN
      v_room := p_limit;
    ELSE
      IF q.concurrency IS NULL THEN
        lim := least(lim, p_free);
      END IF;
      SELECT r.jobs, r.units INTO v_room, units FROM :SCHEMA.start_room(q, counted_at) r;
      IF p_reported AND p_now IS NULL AND q.rate_count IS NOT NULL THEN
        start_at := :SCHEMA.starts_ahead(q, counted_at, v_room, lim);
        room_now := greatest(v_room, 0);
        v_room := room_now + cardinality(start_at);
      END IF;
    END IF;
  END IF;
  lim := least(lim, greatest(coalesce(v_room, lim), 0));
END $$;

-- A capped queue's slots for a claim (slots.sql): the slots in hand (`p_in_hand`, from
-- this worker's completions in the same statement, all within the cap) first, free ones
-- taken for what they do not cover, only for the `p_want` jobs that can start now (jobs
-- ahead wait with slot 0). Returns the slots in claim order, those in hand kept
-- (`reuse`: the caller frees those no job takes), and how many jobs the claim may take
-- (`lim`, of the `p_limit` asked; none ahead when the cap is full). With `lim` 0 every
-- slot in hand is freed here.
-- Exact: while slots above a cap since lowered are held, claims of the queue serialize
-- and count the running jobs (those waiting with slot 0 hold none), so the lowered cap
-- is reached without being passed.
CREATE OR REPLACE FUNCTION :SCHEMA.claim_slots(
  q :SCHEMA.queue, p_in_hand integer[], p_want integer, p_limit integer, p_free integer,
  OUT slots integer[], OUT reuse integer[], OUT lim integer)
LANGUAGE plpgsql AS $$
DECLARE
  v_want integer := p_want;
  v_active integer;
BEGIN
  reuse := p_in_hand;
  lim := p_limit;
  IF EXISTS (SELECT 1 FROM :SCHEMA.slot WHERE queue = q.name AND n > q.concurrency AND job_id IS NOT NULL) THEN
    PERFORM pg_advisory_xact_lock(hashtext(':SCHEMA_NAME.claim'), hashtext(q.name));
    DELETE FROM :SCHEMA.slot WHERE queue = q.name AND n > q.concurrency AND job_id IS NULL;
    SELECT count(*) INTO v_active FROM :SCHEMA.job
    WHERE queue = q.name AND state = 'active';
    -- Slots in hand count as room only up to what the cap has left (the rest are freed
    -- below, with those beyond the free local slots).
    v_want := least(v_want, q.concurrency - v_active);
    -- No jobs ahead: they would keep the slots above the cap in use.
    lim := least(lim, greatest(v_want, 0));
  END IF;
  IF cardinality(reuse) > greatest(v_want, 0) THEN
    PERFORM :SCHEMA.free_slots(q.name, reuse[greatest(v_want, 0) + 1:]);
    reuse := reuse[1:greatest(v_want, 0)];
  END IF;
  slots := reuse || CASE WHEN v_want > cardinality(reuse) THEN :SCHEMA.take_slots(q.name, q.concurrency, v_want - cardinality(reuse)) ELSE '{}' END;
  IF cardinality(slots) < p_free THEN
    -- The cap is full: no jobs ahead of what can start.
    lim := cardinality(slots);
  END IF;
  IF lim <= 0 THEN
    PERFORM :SCHEMA.free_slots(q.name, reuse);
  END IF;
END $$;

-- The claim: its room by rate and budget (claim_start_room), its slots on a capped queue
-- (claim_slots), its jobs (by priority, then due time; per key: pick_per_key), cut to the
-- budget; then the jobs become active, the first in claim order in the slots, and the
-- starts that are not reserved are recorded. The parts are called as expressions, not
-- queries: plpgsql evaluates those without the executor, and a claim runs once per batch. Slots in hand
-- (from this worker's completions in the same statement) go to the jobs claimed first,
-- and every slot that found no job is freed.
CREATE OR REPLACE FUNCTION :SCHEMA.claim(
  p_queue text, p_limit integer, p_worker_id text, p_now timestamptz,
  p_ahead integer DEFAULT 0, p_in_hand integer[] DEFAULT '{}')
RETURNS SETOF :SCHEMA.job LANGUAGE plpgsql
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET enable_sort = off SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  q :SCHEMA.queue;
  v_now timestamptz := coalesce(p_now, now());
  v_free integer := greatest(p_limit, 0);
  v_limit integer := greatest(p_limit, 0) + greatest(coalesce(p_ahead, 0), 0);
  v_want integer := greatest(p_limit, 0);
  v_slots integer[] := '{}';
  v_reuse integer[] := '{}';
  v_ids bigint[];
  v_slotted integer;
  v_started integer;
  v_rated boolean;
  v_key_rated boolean;
  v_reported boolean;
  v_units bigint;
  v_grant_at timestamptz;
  v_start_at timestamptz[] := '{}';
  v_room_now integer := 0;
  -- Jobs a key's rate admitted ahead (pick_per_key) and when each may begin.
  v_key_ahead_ids bigint[];
  v_key_ahead_at timestamptz[];
  v_part record;
BEGIN
  SELECT * INTO q FROM :SCHEMA.queue WHERE name = p_queue;
  IF q.name IS NULL OR q.paused OR v_limit <= 0 OR q.concurrency IS NULL THEN
    -- Nothing to hand the slots over to (or no cap any more): freed.
    IF cardinality(p_in_hand) > 0 THEN
      PERFORM :SCHEMA.free_slots(p_queue, p_in_hand);
    END IF;
    IF q.name IS NULL OR q.paused OR v_limit <= 0 THEN
      RETURN;
    END IF;
  ELSE
    -- Slots above a cap since lowered are freed, never handed over.
    v_reuse := ARRAY(SELECT u FROM unnest(p_in_hand) u WHERE u <= q.concurrency ORDER BY u);
    IF cardinality(v_reuse) < cardinality(p_in_hand) THEN
      PERFORM :SCHEMA.free_slots(p_queue, ARRAY(SELECT u FROM unnest(p_in_hand) u WHERE u > q.concurrency));
    END IF;
  END IF;

  v_rated := q.rate_count IS NOT NULL OR q.budget_units IS NOT NULL;
  v_reported := :SCHEMA.starts_reported();
  v_key_rated := q.key_rate_count IS NOT NULL OR q.key_budget_units IS NOT NULL;
  IF v_key_rated THEN
    -- No jobs beyond the free local slots: each counts as started when it is claimed (one
    -- a key's rate admits ahead, in its slot, at most start_ahead_ms later). Per-key rates
    -- and budgets are counted under the keys' locks (pick_per_key), at the time read here.
    v_now := coalesce(p_now, clock_timestamp());
    v_limit := least(v_limit, v_free);
  END IF;
  IF v_rated THEN
    v_part := :SCHEMA.claim_start_room(q, p_worker_id, p_now, v_limit, v_free, v_key_rated, v_reported);
    v_limit := v_part.lim;
    v_units := v_part.units;
    v_now := v_part.counted_at;
    v_grant_at := v_part.grant_at;
    v_start_at := v_part.start_at;
    v_room_now := v_part.room_now;
    v_want := least(v_want, v_limit);
    IF v_limit <= 0 OR v_units <= 0 THEN
      PERFORM :SCHEMA.free_slots(p_queue, v_reuse);
      RETURN;
    END IF;
  END IF;

  IF q.concurrency IS NOT NULL THEN
    v_part := :SCHEMA.claim_slots(q, v_reuse, v_want, v_limit, v_free);
    v_slots := v_part.slots;
    v_reuse := v_part.reuse;
    v_limit := v_part.lim;
    IF v_limit <= 0 THEN
      RETURN;
    END IF;
  END IF;

  IF q.per_key_concurrency IS NULL AND NOT v_key_rated THEN
    v_ids := ARRAY(
      SELECT n.id FROM :SCHEMA.job n
      WHERE n.queue = p_queue AND n.state = 'pending' AND n.run_at <= v_now
      ORDER BY n.priority DESC, n.run_at, n.id
      LIMIT v_limit
      FOR UPDATE SKIP LOCKED);
  ELSE
    SELECT p.ids, p.ahead_ids, p.ahead_at INTO v_ids, v_key_ahead_ids, v_key_ahead_at
    FROM :SCHEMA.pick_per_key(q, v_limit, v_now, v_reported AND p_now IS NULL AND q.key_rate_count IS NOT NULL
                                                 AND q.key_budget_units IS NULL) p;
  END IF;
  IF v_units IS NOT NULL AND cardinality(v_ids) > 0 THEN
    -- The budget, in claim order: the jobs whose running total of cost fits.
    v_ids := ARRAY(
      SELECT x.id FROM (
        SELECT j.id, sum(j.cost) OVER (ORDER BY j.priority DESC, j.run_at, j.id) AS spent
        FROM :SCHEMA.job j WHERE j.id = ANY (v_ids)
      ) x
      WHERE x.spent <= v_units ORDER BY x.spent);
  END IF;

  v_slotted := least(cardinality(v_slots), cardinality(v_ids));
  -- The jobs that start now: those with slots, or on a queue without a cap the first
  -- for the free local slots (a worker starts the rows in claim order).
  v_started := CASE WHEN q.concurrency IS NOT NULL THEN v_slotted ELSE least(greatest(v_want, 0), cardinality(v_ids)) END;
  IF cardinality(v_reuse) > v_slotted THEN
    -- Slots in hand beyond the jobs found (they come first in v_slots): freed.
    PERFORM :SCHEMA.free_slots(p_queue, v_reuse[v_slotted + 1:]);
  END IF;
  IF q.concurrency IS NOT NULL AND v_slotted > 0 THEN
    -- A primary-key lookup per slot (`n = ANY (...)` on the key's second column would
    -- be a filter over every slot of the queue).
    UPDATE :SCHEMA.slot s SET job_id = a.job_id
    FROM unnest(v_slots[1:v_slotted], v_ids[1:v_slotted]) AS a(n, job_id)
    WHERE s.queue = p_queue AND s.n = a.n;
  END IF;

  -- Rows come back in claim order (priority, then age): a worker starts them in that order.
  -- The first jobs in that order get the slots; the rest of a capped queue's wait as
  -- `claimed`, with slot 0.
  RETURN QUERY
  WITH claimed AS (
    UPDATE :SCHEMA.job j
    SET state = CASE WHEN q.concurrency IS NOT NULL AND NOT j.id = ANY (v_ids[1:v_slotted]) THEN 'claimed':::SCHEMA.job_state
                     ELSE 'active':::SCHEMA.job_state END,
        attempts = j.attempts + 1, lease_token = gen_random_uuid(),
        lease_expires_at = v_now + q.lease_seconds * interval '1 second',
        started_at = greatest(coalesce(v_start_at[array_position(v_ids, j.id) - v_room_now], v_now),
                              coalesce(v_key_ahead_at[array_position(v_key_ahead_ids, j.id)], v_now)),
        worker_id = p_worker_id,
        slot = CASE WHEN q.concurrency IS NOT NULL THEN coalesce(v_slots[array_position(v_ids[1:v_slotted], j.id)], 0) END,
        start_reserved = CASE WHEN v_rated AND NOT j.id = ANY (v_ids[1:v_started]) THEN true
                              WHEN v_reported AND (v_rated OR v_key_rated) THEN true END
    -- The rows are locked by the pick: no state to recheck. (A state condition here would
    -- also let the planner read the whole ready index to find them.)
    WHERE j.id = ANY (v_ids)
    RETURNING j.*
  )
  SELECT * FROM claimed ORDER BY priority DESC, run_at, id;

  IF v_grant_at IS NOT NULL THEN
    -- The grant counts its starts (rate.sql): nothing recorded one by one.
    UPDATE :SCHEMA.rate_grant g SET used = g.used + cardinality(v_ids)
    WHERE g.queue = p_queue AND g.worker_id = p_worker_id AND g.granted_at = v_grant_at;
  ELSIF (v_rated OR v_key_rated) AND cardinality(v_ids) > 0 AND NOT v_reported THEN
    -- The jobs that may start now; those waiting with slot 0 hold a reservation instead,
    -- recorded when they get a slot or leave (rate.sql). A worker that reports when its
    -- handlers begin has every start reserved until it does (report_starts, rate.sql).
    INSERT INTO :SCHEMA.job_start (queue, started_at, units, job_id, key)
    SELECT p_queue, v_now, j.cost, j.id, CASE WHEN v_key_rated THEN j.key END FROM :SCHEMA.job j
    WHERE j.id = ANY (v_ids[1:v_started]);
  END IF;
END $$;

-- A claim that is the only write of its transaction, on a queue without caps, commits
-- without waiting for its WAL flush.
--
-- An idle worker claims each job as it arrives with a statement of its own, and until
-- now that statement waited for its commit record to reach the disk before the handler
-- could start: on the machines measured, a flush is a third of a millisecond at the
-- median and several at the tail, on the path from send to start. Nothing a lone claim
-- writes needs it. If the server crashes before the record is flushed (at most
-- wal_writer_delay later), the claim is undone: its jobs are pending again, their
-- attempt uncounted and their lease tokens gone, so the worker that started them is
-- fenced out and the jobs run again — what a worker that dies mid-job already causes,
-- and what at-least-once delivery allows. A completion, a failure or any other write is
-- still flushed before it is acknowledged, and its flush also carries every claim
-- committed before it.
--
-- Not for a queue with `concurrency`, `perKeyConcurrency`, a rate or a budget (its own or
-- per key): an undone
-- claim would free its slot, its key's room or its start, while the worker that holds
-- the job may still be running it, and the bound must hold through a crash. Not when the transaction has written
-- before (the caller's own work must keep the caller's durability). The setting is
-- local to the transaction, and the library sends this statement on its own.
CREATE OR REPLACE FUNCTION :SCHEMA.lone_claim(
  p_queue text, p_limit integer, p_worker_id text, p_now timestamptz, p_ahead integer)
RETURNS SETOF :SCHEMA.job LANGUAGE plpgsql
-- No SET clause: it would undo the transaction-local setting below when the function returns.
AS $$
BEGIN
  IF pg_current_xact_id_if_assigned() IS NULL AND EXISTS (
       SELECT 1 FROM :SCHEMA.queue
       WHERE name = p_queue AND concurrency IS NULL AND per_key_concurrency IS NULL
         AND rate_count IS NULL AND budget_units IS NULL
         AND key_rate_count IS NULL AND key_budget_units IS NULL) THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  ELSE
    -- A queue that chose durability 'async' accepts what an undone claim costs (durability.sql).
    PERFORM :SCHEMA.commit_as(ARRAY[p_queue], true);
  END IF;
  RETURN QUERY SELECT * FROM :SCHEMA.claim(p_queue, p_limit, p_worker_id, p_now, p_ahead);
END $$;

-- A claimed job as the worker reads it: a `json` array of its columns in the order of
-- CLAIMED_COLUMNS (src/queue/rows.ts). Without the names, a row is under half the text of a
-- keyed object, and faster to build and to parse. The id as text (a bigint past 2^53 would
-- lose digits as a JSON number); `json`, not `jsonb`: written out as text, no binary value
-- built that the client never sees. The last element, `start_in_ms`: a start admitted
-- ahead (starts_ahead, rate.sql) begins no sooner than this long after the answer arrives
-- (counted from the database's clock as the rows are sent, so the answer's way back only
-- adds to it); 0 under an injected clock. One SELECT of an expression, not STABLE: the
-- planner inlines it into the statement that claims.
CREATE OR REPLACE FUNCTION :SCHEMA.claimed_json(c :SCHEMA.job, p_now timestamptz) RETURNS json LANGUAGE sql AS $$
  SELECT json_build_array(
    c.id::text, c.queue, c.state, c.data, c.key, c.singleton_key, c.priority, c.run_at,
    c.attempts, c.max_attempts, c.lease_token, c.lease_expires_at, c.worker_id, c.result, c.errors,
    c.created_at, c.started_at, c.finished_at, c.slot, c.cost, c.timeout_ms, c.cancel_requested_at,
    c.waiting_parents, c.on_parent_failure, c.trace_context, c.start_reserved,
    CASE WHEN p_now IS NULL THEN (extract(epoch FROM c.started_at - clock_timestamp()) * 1000)::float8 ELSE 0 END)
$$;

-- Completions without a claim (a pull worker's, or a worker's with nothing to claim for):
-- fenced by their lease tokens; slots are freed by the trigger (slots.sql), and capped
-- queues get one wake-up per batch, so claimers waiting on the cap try again.
CREATE OR REPLACE FUNCTION :SCHEMA.complete_many(
  p_ids bigint[], p_tokens uuid[], p_results jsonb[], p_now timestamptz, p_notify boolean)
RETURNS TABLE (id bigint, queue text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_done bigint[];
  v_queues text[];
  v_parents bigint[];
BEGIN
  -- state::text: see the note at the top of queries/worker.sql.
  WITH done AS (
    UPDATE :SCHEMA.job j
    SET state = 'completed', finished_at = v_now, result = c.result, lease_token = NULL, lease_expires_at = NULL
    FROM unnest(p_ids, p_tokens, p_results) AS c(id, token, result)
    WHERE j.id = c.id AND j.lease_token = c.token AND j.state::text IN ('active', 'claimed')
    RETURNING j.id, j.queue, j.has_children
  ), woken AS (
    SELECT pg_notify(':CHANNEL', q.name) FROM :SCHEMA.queue q
    WHERE p_notify AND q.name IN (SELECT DISTINCT d.queue FROM done d)
      AND (q.concurrency IS NOT NULL OR q.per_key_concurrency IS NOT NULL)
  )
  SELECT coalesce(array_agg(d.id) FILTER (WHERE d.id IS NOT NULL), '{}'),
         coalesce(array_agg(d.queue) FILTER (WHERE d.id IS NOT NULL), '{}'),
         coalesce(array_agg(d.id) FILTER (WHERE d.has_children), '{}')
  INTO v_done, v_queues, v_parents
  -- The wake-ups are counted so that they happen; the join keeps the row when none completed.
  FROM (SELECT count(*) FROM woken) w LEFT JOIN done d ON true;
  IF cardinality(v_done) > 0 THEN
    PERFORM :SCHEMA.job_ends(v_done, v_queues, array_fill('completed'::text, ARRAY[cardinality(v_done)]), v_parents, v_now, p_notify);
    -- The library sends this statement on its own (durability.sql).
    PERFORM :SCHEMA.commit_as(v_queues, true);
  END IF;
  RETURN QUERY SELECT * FROM unnest(v_done, v_queues);
END $$;

-- A worker's completions, the moves of its jobs waiting for a slot, and its next claim, in
-- one transaction: the statement a busy worker sends once per round trip.
CREATE OR REPLACE FUNCTION :SCHEMA.complete_and_claim(
  p_ids bigint[], p_tokens uuid[], p_results jsonb[], p_now timestamptz, p_notify boolean,
  p_queue text, p_limit integer, p_worker_id text, p_ahead integer,
  p_move_ids bigint[], p_move_tokens uuid[])
RETURNS TABLE (completed bigint[], moved bigint[], job json) LANGUAGE plpgsql
SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_done bigint[];
  v_done_queues text[];
  v_parents bigint[];
  v_moved bigint[] := '{}';
  v_claimed integer;
  v_in_hand integer[] := '{}';
  v_capped boolean;
  v_rated boolean;
  v_grant_from timestamptz;
  v_grant_until timestamptz;
BEGIN
  SELECT concurrency IS NOT NULL, rate_count IS NOT NULL INTO v_capped, v_rated FROM :SCHEMA.queue WHERE name = p_queue;
  IF v_rated THEN
    -- This worker's grant (rate.sql): its jobs claimed ahead in it that end while their
    -- starts are still reserved (waiting for a move, or on a queue without a cap) began
    -- within it, and need no record (their reservations end here, not in the trigger).
    SELECT g.granted_at, g.until INTO v_grant_from, v_grant_until FROM :SCHEMA.rate_grant g
    WHERE g.queue = p_queue AND g.worker_id = p_worker_id AND g.granted_at <= v_now AND v_now <= g.until
    ORDER BY g.granted_at DESC LIMIT 1;
  END IF;
  -- state::text: see the note at the top of queries/worker.sql.
  IF v_capped THEN
    -- The slot comes from the row as it was (`o`): a job whose state changed since fails
    -- the fence and keeps out of it. This queue's slots are handed on below; jobs of
    -- other queues in the batch free theirs here. A job that completes while still
    -- waiting for its move (slot 0: started by hand-over, ended before the move was
    -- written) has no slot to give: the slot it ran in is its predecessor's, in hand.
    -- A slot given to the job after this statement began (its move committed while this
    -- waited for the row: `j`, the row as locked, differs from `o`) is kept on the row,
    -- so the trigger frees it (slots.sql).
    WITH done AS (
      UPDATE :SCHEMA.job j
      SET state = 'completed', finished_at = v_now, result = c.result,
          lease_token = NULL, lease_expires_at = NULL,
          slot = CASE WHEN j.slot IS DISTINCT FROM o.slot THEN j.slot END,
          start_reserved = CASE WHEN j.worker_id = p_worker_id AND j.started_at >= v_grant_from
                                     AND j.started_at < v_grant_until THEN NULL ELSE j.start_reserved END
      FROM unnest(p_ids, p_tokens, p_results) AS c(id, token, result)
      JOIN :SCHEMA.job o ON o.id = c.id
      WHERE j.id = c.id AND j.lease_token = c.token AND j.state::text IN ('active', 'claimed')
      RETURNING j.id, j.queue, o.slot, j.has_children
    ), freed AS (
      UPDATE :SCHEMA.slot s SET job_id = NULL
      FROM done d
      WHERE s.queue = d.queue AND s.n = d.slot AND s.job_id = d.id AND d.queue <> p_queue
    )
    SELECT coalesce(array_agg(done.id), '{}'), coalesce(array_agg(done.queue), '{}'),
           coalesce(array_agg(done.slot) FILTER (WHERE done.queue = p_queue AND done.slot > 0), '{}'),
           coalesce(array_agg(done.id) FILTER (WHERE done.has_children), '{}')
    INTO v_done, v_done_queues, v_in_hand, v_parents FROM done;
  ELSE
    -- Uncapped: no lookup of the old row (a job that holds a slot anyway, from a cap since
    -- lifted, frees it through the trigger).
    WITH done AS (
      UPDATE :SCHEMA.job j
      SET state = 'completed', finished_at = v_now, result = c.result,
          lease_token = NULL, lease_expires_at = NULL,
          start_reserved = CASE WHEN j.worker_id = p_worker_id AND j.started_at >= v_grant_from
                                     AND j.started_at < v_grant_until THEN NULL ELSE j.start_reserved END
      FROM unnest(p_ids, p_tokens, p_results) AS c(id, token, result)
      WHERE j.id = c.id AND j.lease_token = c.token AND j.state::text IN ('active', 'claimed')
      RETURNING j.id, j.queue, j.has_children
    )
    SELECT coalesce(array_agg(done.id), '{}'), coalesce(array_agg(done.queue), '{}'),
           coalesce(array_agg(done.id) FILTER (WHERE done.has_children), '{}')
    INTO v_done, v_done_queues, v_parents FROM done;
  END IF;
  -- Announced, and their children released (events.sql, flow.sql).
  IF cardinality(v_done) > 0 THEN
    PERFORM :SCHEMA.job_ends(v_done, v_done_queues, array_fill('completed'::text, ARRAY[cardinality(v_done)]), v_parents, v_now, p_notify);
  END IF;
  -- The worker sends this statement on its own (durability.sql).
  PERFORM :SCHEMA.commit_as(array_append(v_done_queues, p_queue), true);

  IF cardinality(p_move_ids) > 0 THEN
    SELECT t.moved, t.left_over INTO v_moved, v_in_hand
    FROM :SCHEMA.take_over_slots(p_queue, v_in_hand, p_move_ids, p_move_tokens, v_now) t;
  END IF;

  -- The completed and moved ids ride on the first row only: the client parses them once.
  RETURN QUERY
  SELECT CASE WHEN row_number() OVER () = 1 THEN v_done END,
         CASE WHEN row_number() OVER () = 1 THEN v_moved END,
         :SCHEMA.claimed_json(c, p_now)
  FROM :SCHEMA.claim(p_queue, p_limit, p_worker_id, p_now, p_ahead, v_in_hand) c;
  GET DIAGNOSTICS v_claimed = ROW_COUNT;
  IF v_claimed = 0 THEN
    RETURN QUERY SELECT v_done, v_moved, NULL::json;
  END IF;

  -- Slots (or key room) freed rather than passed on wake the claimers waiting on the cap:
  -- slots in hand the claim had no job for, or completions nothing took the place of.
  IF p_notify AND (cardinality(v_in_hand) > least(greatest(p_limit, 0), v_claimed)
                   OR cardinality(v_done) > v_claimed + cardinality(v_moved)) THEN
    PERFORM pg_notify(':CHANNEL', q.name) FROM :SCHEMA.queue q
    WHERE q.name = p_queue AND (q.concurrency IS NOT NULL OR q.per_key_concurrency IS NOT NULL);
  END IF;
END $$;

-- Completions and moves without a claim, for a worker with nothing to claim for:
-- complete_and_claim with a limit of 0, whose claim then frees the slots left in hand and
-- wakes the claimers waiting on this queue's caps (with p_notify).
CREATE OR REPLACE FUNCTION :SCHEMA.complete_and_move(
  p_ids bigint[], p_tokens uuid[], p_results jsonb[], p_now timestamptz, p_notify boolean,
  p_queue text, p_move_ids bigint[], p_move_tokens uuid[])
RETURNS TABLE (completed bigint[], moved bigint[]) LANGUAGE sql AS $$
  SELECT c.completed, c.moved
  FROM :SCHEMA.complete_and_claim(
    p_ids => p_ids, p_tokens => p_tokens, p_results => p_results, p_now => p_now, p_notify => p_notify,
    p_queue => p_queue, p_limit => 0, p_worker_id => NULL, p_ahead => 0,
    p_move_ids => p_move_ids, p_move_tokens => p_move_tokens) c
  LIMIT 1
$$;
