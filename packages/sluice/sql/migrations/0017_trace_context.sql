-- The trace context of a job's sender (src/tracing.ts): the propagation carrier
-- (`{"traceparent": …, "tracestate": …}`) the send wrote, read back by the claim so the
-- handler's span continues the sender's trace. NULL when the sender traced nothing.
ALTER TABLE :SCHEMA.job ADD COLUMN trace_context jsonb;

-- The sends take the carrier as a last argument (sql/functions/send.sql, flow.sql).
DROP FUNCTION IF EXISTS :SCHEMA.send(text, jsonb, text, text, timestamptz, double precision, integer, integer, timestamptz, boolean, integer, integer);
DROP FUNCTION IF EXISTS :SCHEMA.send_many(text, jsonb, timestamptz, boolean);
DROP FUNCTION IF EXISTS :SCHEMA.send_after(bigint[], text, text, jsonb, text, text, timestamptz, double precision, integer, integer, timestamptz, boolean, integer, integer);
