-- Retry delays: exponential backoff with jitter, on the database's side so that every
-- path that retries a job (a failure, a sweep of an expired lease) computes it the same way.

-- Exponential backoff with jitter, in milliseconds, for the attempt that just failed
-- (1-based): min(max, base * 2^(attempt-1)) scaled into [1 - jitter, 1], rounded to
-- whole milliseconds.
CREATE OR REPLACE FUNCTION :SCHEMA.backoff_ms(base_ms integer, max_ms integer, jitter real, attempt integer)
RETURNS double precision LANGUAGE sql VOLATILE AS $$
  SELECT round(least(max_ms::double precision, base_ms * power(2::double precision, least(greatest(attempt - 1, 0), 60)))
               * (1 - jitter * random()))
$$;
