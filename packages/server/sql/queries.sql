-- name: ClaimDelivery
-- Returns a row only for a delivery not seen before. A concurrent replay of the same
-- delivery waits here for the first one's transaction: it commits (the replay returns
-- nothing, a duplicate) or rolls back (the replay takes the delivery over).
INSERT INTO sluice_server.hook_delivery (source, delivery_id)
VALUES ($1, $2)
ON CONFLICT (source, delivery_id) DO NOTHING
RETURNING delivery_id;

-- name: SetDeliveryJob
UPDATE sluice_server.hook_delivery SET job_id = $3 WHERE source = $1 AND delivery_id = $2;

-- name: DeliveryJob
SELECT job_id FROM sluice_server.hook_delivery WHERE source = $1 AND delivery_id = $2;

-- name: PruneDeliveries
-- Deliveries older than the deduplication window; a redelivery after it is a new delivery.
DELETE FROM sluice_server.hook_delivery WHERE received_at < now() - make_interval(secs => $1);
