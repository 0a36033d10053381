/**
 * Enqueue a job at most once per (source, delivery id): the id is recorded in the
 * transaction that sends the job, so both exist or neither (`sluice_server.hook_delivery`).
 * Webhook intake keys deliveries by their sender's delivery id; outbound webhooks key the
 * announcements they relay, so that every server process hearing one sends one delivery.
 */
import type { Sluice } from 'sluice';
import { serverSql } from './db.js';

export interface OnceDelivery {
  source: string;
  deliveryId: string;
  queue: string;
  data: unknown;
  /** The job's key (what per-key limits count by). */
  key?: string;
}

/** The job's id and whether the delivery had been enqueued before (its first job's id then). */
export function enqueueOnce(sluice: Sluice, delivery: OnceDelivery): Promise<{ id: string; duplicate: boolean }> {
  const { source, deliveryId } = delivery;
  return sluice.transaction(async (client) => {
    const claimed = await client.query(serverSql('ClaimDelivery'), [source, deliveryId]);
    if (claimed.rowCount === 0) {
      // Recorded before: nothing was written here, and the first job's id is the answer.
      const { rows } = await client.query<{ job_id: string }>(serverSql('DeliveryJob'), [source, deliveryId]);
      return { id: rows[0]!.job_id, duplicate: true };
    }
    const sent = await sluice.send(delivery.queue, delivery.data, { client, ...(delivery.key ? { key: delivery.key } : {}) });
    await client.query(serverSql('SetDeliveryJob'), [source, deliveryId, sent.id]);
    return { id: sent.id, duplicate: false };
  });
}
