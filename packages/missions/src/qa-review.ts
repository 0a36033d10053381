/**
 * QA review: proven missions wait as `pending` until a reviewer approves them (then the
 * warm pool may serve them) or rejects them (never served). A decision is taken once:
 *
 *   pending ──► approved
 *      └──────► rejected
 *
 * A mission's variants (its proven bugs) are reviewed with it; a reviewer can take one
 * variant out of service (`rejectVariant`) without rejecting the mission, as long as
 * another stays in service.
 */
import { inTransaction } from 'sluice';
import { sql } from './db.js';
import { MissionsError } from './errors.js';
import type { PlatformParts } from './parts.js';
import { missionFromRow, variantFromRow } from './rows.js';
import type { Mission, MissionListFilter, MissionPage, MissionVariant } from './types.js';
import { checkNumericId, checkPageLimit, checkStorable } from './validate.js';

export class QaReview {
  constructor(private readonly parts: PlatformParts) {}

  /**
   * A page of missions, oldest first, optionally of one QA status: the `limit` after the
   * mission `cursor` (the previous page's `nextCursor`). `nextCursor` is null on the last page.
   */
  async list({ qaStatus, limit = 100, cursor }: MissionListFilter = {}): Promise<MissionPage> {
    const after = cursor === undefined ? null : checkNumericId(cursor, 'cursor');
    // One row past the page says whether another page follows.
    const { rows } = await this.parts.pool.query(sql('ListMissions'), [qaStatus ?? null, checkPageLimit(limit) + 1, after]);
    if (after !== null && rows.length === 0) await this.get(after);
    const missions = await this.withVariants(rows.slice(0, limit));
    return { missions, nextCursor: rows.length > limit ? missions.at(-1)!.id : null };
  }

  async get(id: string): Promise<Mission> {
    const { rows } = await this.parts.pool.query(sql('GetMission'), [checkNumericId(id, 'mission')]);
    if (!rows[0]) throw new MissionsError('mission_not_found', `mission ${id} does not exist`);
    return (await this.withVariants(rows))[0]!;
  }

  /**
   * Takes variant `ordinal` of a pending or approved mission out of service: it is never
   * served again (instances already served keep it and are graded on it). The last variant
   * in service cannot be rejected: reject the mission instead.
   */
  async rejectVariant(id: string, ordinal: number, note?: string): Promise<Mission> {
    if (note !== undefined && note !== null) checkStorable(note, 'note');
    const missionId = checkNumericId(id, 'mission');
    if (!Number.isInteger(ordinal) || ordinal < 1 || ordinal > 1000)
      throw new MissionsError('validation', 'variant must be an integer from 1');
    await inTransaction(this.parts.pool, async (client) => {
      // The mission's row lock orders this against serves (which pick a variant under it)
      // and against another rejection of the same mission's variants.
      const mission = (await client.query<{ qa_status: string }>(sql('LockMission'), [missionId])).rows[0];
      if (!mission) throw new MissionsError('mission_not_found', `mission ${id} does not exist`);
      if (mission.qa_status === 'rejected')
        throw new MissionsError('invalid_state', `mission ${id} is rejected; its variants are out of service with it`);
      const { rows } = await client.query(sql('RejectVariant'), [missionId, ordinal, note ?? null]);
      if (!rows[0]) {
        const variants = (await client.query(sql('MissionVariants'), [[missionId]])).rows.map(variantFromRow);
        const variant = variants.find((v) => v.ordinal === ordinal);
        if (!variant) throw new MissionsError('variant_not_found', `mission ${id} has no variant ${ordinal}`);
        throw new MissionsError(
          'invalid_state',
          variant.status === 'rejected'
            ? `variant ${ordinal} of mission ${id} is already rejected`
            : `variant ${ordinal} is the last of mission ${id} in service; reject the mission instead`,
        );
      }
    });
    return this.get(missionId);
  }

  /** Mission rows with their variants, read in one statement. */
  private async withVariants(rows: Record<string, unknown>[]): Promise<Mission[]> {
    if (rows.length === 0) return [];
    const { rows: variantRows } = await this.parts.pool.query(sql('MissionVariants'), [rows.map((r) => r.id)]);
    const byMission = new Map<string, MissionVariant[]>();
    for (const variant of variantRows.map(variantFromRow))
      byMission.set(variant.missionId, [...(byMission.get(variant.missionId) ?? []), variant]);
    return rows.map((r) => missionFromRow(r, byMission.get(String(r.id)) ?? []));
  }

  approve(id: string, note?: string): Promise<Mission> {
    return this.review(id, 'approved', note);
  }

  reject(id: string, note?: string): Promise<Mission> {
    return this.review(id, 'rejected', note);
  }

  private async review(id: string, decision: 'approved' | 'rejected', note?: string): Promise<Mission> {
    if (note !== undefined && note !== null) checkStorable(note, 'note');
    const { rows } = await this.parts.pool.query(sql('ReviewMission'), [checkNumericId(id, 'mission'), decision, note ?? null]);
    if (rows[0]) return (await this.withVariants(rows))[0]!;
    const current = await this.get(id);
    throw new MissionsError('invalid_state', `mission ${id} is ${current.qaStatus}; only a pending mission can be reviewed`);
  }
}
