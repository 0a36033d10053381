-- Complete a worker's finished jobs and claim its next ones in one transaction.
--
-- A busy worker otherwise spends two transactions (two commits, two round trips) per
-- batch. Here the claim runs after the completions in the same transaction, so on a
-- capped queue it already sees the slots this worker just freed: each worker reuses its
-- own capacity instead of waiting for its completions to commit and racing the others.
-- Other claimers are only woken when slots stay free after this claim.
CREATE FUNCTION :SCHEMA.complete_and_claim(
  p_ids bigint[], p_tokens uuid[], p_results jsonb[], p_now timestamptz, p_notify boolean,
  p_queue text, p_limit integer, p_worker_id text)
RETURNS TABLE (completed bigint[], job jsonb) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := coalesce(p_now, now());
  v_done bigint[];
  v_claimed integer;
BEGIN
  WITH done AS (
    UPDATE :SCHEMA.job j
    SET state = 'completed', finished_at = v_now, result = c.result,
        lease_token = NULL, lease_expires_at = NULL
    FROM unnest(p_ids, p_tokens, p_results) AS c(id, token, result)
    WHERE j.id = c.id AND j.lease_token = c.token AND j.state = 'active'
    RETURNING j.id
  )
  SELECT coalesce(array_agg(done.id), '{}') INTO v_done FROM done;

  RETURN QUERY
  SELECT v_done, to_jsonb(c) || jsonb_build_object('id', c.id::text)
  FROM :SCHEMA.claim(p_queue, p_limit, p_worker_id, p_now) c;
  GET DIAGNOSTICS v_claimed = ROW_COUNT;
  IF v_claimed = 0 THEN
    RETURN QUERY SELECT v_done, NULL::jsonb;
  END IF;

  IF p_notify AND cardinality(v_done) > v_claimed THEN
    PERFORM pg_notify(':CHANNEL', q.name) FROM :SCHEMA.queue q
    WHERE q.name = p_queue AND (q.concurrency IS NOT NULL OR q.per_key_concurrency IS NOT NULL);
  END IF;
END $$;
