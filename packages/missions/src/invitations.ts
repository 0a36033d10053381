/**
 * Invitations: a recruiter invites a cohort of candidates to a role, and each candidate
 * gets a link whose token is who they are. The token is `v1.<invitation id>.<expiry, unix
 * seconds>.<HMAC-SHA256 of both>`, signed with the platform's key: checked without the
 * database first (shape, signature, expiry), then against the invitation's row (revoked,
 * expired). The candidate's user id, which the per-user limit, the domain map and grading
 * key on, is derived from the invitation, never taken from a request.
 *
 * An invitation, as the token check sees it:
 *
 *   invited ──(link opened)──► opened
 *      │                         │
 *      └──(revoked, or past its expiry)──► refused (401)
 *
 * Tokens are never stored or logged: the row holds what is signed, so the same token can
 * be given again to the recruiter.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import { inTransaction as withTransaction } from 'sluice';
import { sql } from './db.js';
import { InvitationNotOpenError, MissionsError } from './errors.js';
import type { PlatformParts } from './parts.js';
import { checkNumericId, checkPageLimit, checkStorable } from './validate.js';

/** Who a valid token is: everything else about the candidate is read from here. */
export interface Candidate {
  invitationId: string;
  cohortId: string;
  /** The identity the platform keys on (requests, instances, grading jobs). */
  userId: string;
  name: string;
  email: string;
  role: string;
  expiresAt: Date;
}

export interface Invitation {
  id: string;
  cohortId: string;
  name: string;
  email: string;
  expiresAt: Date;
  revokedAt: Date | null;
  openedAt: Date | null;
  createdAt: Date;
}

export interface Cohort {
  id: string;
  role: string;
  startsAt: Date | null;
  createdAt: Date;
}

/** A cohort in the recruiter's list: how many were invited and how many opened their link. */
export interface CohortSummary extends Cohort {
  invited: number;
  opened: number;
}

export interface CohortInput {
  role: string;
  candidates: { name: string; email: string }[];
  startsAt?: Date | null;
  /** The file line each candidate came from (a CSV upload): errors then name the line, as `csv_invalid`. */
  lines?: number[];
}

const TOKEN = /^v1\.([1-9][0-9]{0,17})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/;
// Plain enough to refuse typos, not a full RFC 5322 parser: no spaces, one @, a dot in the domain.
const EMAIL = /^[^\s@<>()",;:]+@[^\s@<>()",;:]+\.[^\s@<>()",;:]+$/;
const KEY_NAME = 'invitation';

/** The user id a candidate's requests, instances and grading jobs are keyed by. */
export const candidateUserId = (invitationId: string) => `invitation:${invitationId}`;

export class Invitations {
  private key: Promise<Buffer> | null = null;

  constructor(
    private readonly parts: PlatformParts,
    /** The signing key from the configuration; null: one made once and kept in the database. */
    private readonly configuredSecret: string | null,
    /** The clock invitations are issued and checked by. */
    private readonly now: () => Date = () => new Date(),
  ) {
    if (configuredSecret !== null && configuredSecret.length < 32) {
      throw new MissionsError('config_invalid', 'the invitation signing secret must be at least 32 characters');
    }
  }

  /**
   * Invites a cohort: one invitation per candidate, all or none. `inTransaction` runs in
   * the same transaction once the cohort is written (e.g. to send its planning job).
   */
  async createCohort(
    input: CohortInput,
    inTransaction?: (client: pg.PoolClient, cohort: Cohort) => Promise<void>,
  ): Promise<{ cohort: Cohort; invitations: (Invitation & { token: string })[] }> {
    const { config, domainMap, pool } = this.parts;
    domainMap.domainsFor(input.role); // unknown_role before anything is written
    checkStorable(input.role, 'role');
    const candidates = input.candidates ?? [];
    // An uploaded file's errors name its lines; a request body's, its indexes.
    const code = input.lines ? 'csv_invalid' : 'validation';
    const where = (i: number, field: string) => (input.lines ? `line ${input.lines[i]}: ${field}` : `candidates[${i}].${field}`);
    if (candidates.length === 0) throw new MissionsError(code, 'a cohort needs at least one candidate');
    if (candidates.length > config.maxCohortSize) {
      throw new MissionsError(code, `a cohort has at most ${config.maxCohortSize} candidates, got ${candidates.length}`);
    }
    const seen = new Set<string>();
    const names: string[] = [];
    const emails: string[] = [];
    candidates.forEach((c, i) => {
      const name = typeof c?.name === 'string' ? c.name.trim() : '';
      const email = typeof c?.email === 'string' ? c.email.trim().toLowerCase() : '';
      if (!name || name.length > 200) throw new MissionsError(code, `${where(i, 'name')} must be 1 to 200 characters`);
      try {
        checkStorable(name, where(i, 'name'));
      } catch (error) {
        throw error instanceof MissionsError ? new MissionsError(code, error.message) : error;
      }
      if (email.length > 254 || !EMAIL.test(email))
        throw new MissionsError(code, `${where(i, 'email')} is not an e-mail address: ${JSON.stringify(c?.email)}`);
      if (seen.has(email)) throw new MissionsError(code, `${where(i, 'email')} ${email} is invited twice`);
      seen.add(email);
      names.push(name);
      emails.push(email);
    });
    const startsAt = input.startsAt ?? null;
    if (startsAt !== null && Number.isNaN(startsAt.getTime())) throw new MissionsError('validation', 'startsAt must be an ISO time');
    const from = Math.max(this.now().getTime(), startsAt?.getTime() ?? 0);
    // Whole seconds: the expiry is signed into the token as unix seconds.
    const expiresAt = new Date(Math.floor((from + config.invitationTtlMs) / 1000) * 1000);

    const { cohort, rows } = await withTransaction(pool, async (client) => {
      const cohortRow = (await client.query(sql('InsertCohort'), [input.role, startsAt])).rows[0];
      const cohort: Cohort = { id: String(cohortRow.id), role: input.role, startsAt, createdAt: cohortRow.created_at };
      const rows = (await client.query(sql('InsertInvitations'), [cohort.id, names, emails, expiresAt])).rows;
      await inTransaction?.(client, cohort);
      return { cohort, rows };
    });
    const invitations = await Promise.all(
      rows.map(async (r) => {
        const invitation = invitationFromRow({ ...r, cohort_id: cohort.id, created_at: cohort.createdAt });
        return { ...invitation, token: await this.tokenOf(invitation) };
      }),
    );
    return { cohort, invitations };
  }

  /** The cohort; `cohort_not_found` when there is none. */
  async cohort(id: string): Promise<Cohort> {
    const { rows } = await this.parts.pool.query(sql('GetCohort'), [checkNumericId(id, 'cohort')]);
    if (!rows[0]) throw new MissionsError('cohort_not_found', `cohort ${id} does not exist`);
    return cohortFromRow(rows[0]);
  }

  /** A page of cohorts, newest first; `nextCursor` reads the next (older) page, null on the last. */
  async listCohorts({ limit = 100, cursor }: { limit?: number; cursor?: string } = {}): Promise<{
    cohorts: CohortSummary[];
    nextCursor: string | null;
  }> {
    const before = cursor === undefined ? null : checkNumericId(cursor, 'cursor');
    const { rows } = await this.parts.pool.query(sql('ListCohorts'), [checkPageLimit(limit) + 1, before]);
    const cohorts = rows.slice(0, limit).map((r) => ({ ...cohortFromRow(r), invited: r.invited, opened: r.opened }));
    return { cohorts, nextCursor: rows.length > limit ? cohorts.at(-1)!.id : null };
  }

  async getCohort(id: string): Promise<{ cohort: Cohort; invitations: (Invitation & { token: string })[] }> {
    const cohort = await this.cohort(id);
    const invitations = (await this.parts.pool.query(sql('CohortInvitations'), [cohort.id])).rows.map(invitationFromRow);
    return { cohort, invitations: await Promise.all(invitations.map(async (i) => ({ ...i, token: await this.tokenOf(i) }))) };
  }

  /** Revokes an invitation: its token is refused from now on (idempotent). */
  async revoke(id: string): Promise<Invitation> {
    const { rows } = await this.parts.pool.query(sql('RevokeInvitation'), [checkNumericId(id, 'invitation')]);
    if (!rows[0]) throw new MissionsError('invitation_not_found', `invitation ${id} does not exist`);
    return invitationFromRow(rows[0]);
  }

  /**
   * The candidate a token stands for. `invitation_invalid` for a token that is malformed,
   * not signed by this platform or names no invitation; `invitation_expired`,
   * `invitation_revoked` as they say; `invitation_not_open` before the cohort's start.
   * Messages never repeat the token.
   */
  async verify(token: string): Promise<Candidate> {
    const match = TOKEN.exec(token);
    if (!match) throw new MissionsError('invitation_invalid', 'this invitation link is not valid: it was cut short or changed');
    const [, id, expiry, signature] = match as unknown as [string, string, string, string];
    const expected = await this.sign(id, expiry);
    const given = Buffer.from(signature, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new MissionsError('invitation_invalid', 'this invitation link is not valid: it was changed or was not issued here');
    }
    if (Number(expiry) * 1000 <= this.now().getTime())
      throw new MissionsError('invitation_expired', 'this invitation has expired: ask your recruiter for a new one');
    const { rows } = await this.parts.pool.query(sql('GetInvitation'), [id]);
    const row = rows[0];
    if (!row) throw new MissionsError('invitation_invalid', 'this invitation does not exist');
    if (row.revoked_at) throw new MissionsError('invitation_revoked', 'this invitation was withdrawn by the recruiter');
    if (row.expires_at.getTime() <= this.now().getTime())
      throw new MissionsError('invitation_expired', 'this invitation has expired: ask your recruiter for a new one');
    // Before its start a cohort's link opens nothing: no mission is served, the opening is not recorded.
    if (row.starts_at && row.starts_at.getTime() > this.now().getTime()) throw new InvitationNotOpenError(row.starts_at, this.now());
    return {
      invitationId: String(row.id),
      cohortId: String(row.cohort_id),
      userId: candidateUserId(String(row.id)),
      name: row.name,
      email: row.email,
      role: row.role,
      expiresAt: row.expires_at,
    };
  }

  /** Records the first opening of the candidate's page. */
  async markOpened(candidate: Candidate): Promise<void> {
    await this.parts.pool.query(sql('OpenInvitation'), [candidate.invitationId]);
  }

  private async tokenOf(invitation: Invitation): Promise<string> {
    const expiry = String(Math.floor(invitation.expiresAt.getTime() / 1000));
    return `v1.${invitation.id}.${expiry}.${(await this.sign(invitation.id, expiry)).toString('base64url')}`;
  }

  private async sign(id: string, expiry: string): Promise<Buffer> {
    return createHmac('sha256', await this.signingKey())
      .update(`sluice-invitation:v1:${id}:${expiry}`)
      .digest();
  }

  private signingKey(): Promise<Buffer> {
    if (this.configuredSecret !== null) return Promise.resolve(Buffer.from(this.configuredSecret, 'utf8'));
    this.key ??= (async () => {
      // Whichever process inserts first wins; every process then reads the same key.
      await this.parts.pool.query(sql('InsertSigningKey'), [KEY_NAME, randomBytes(32).toString('base64url')]);
      const { rows } = await this.parts.pool.query<{ secret: string }>(sql('GetSigningKey'), [KEY_NAME]);
      return Buffer.from(rows[0]!.secret, 'utf8');
    })().catch((error) => {
      this.key = null;
      throw error;
    });
    return this.key;
  }
}

function cohortFromRow(r: Record<string, any>): Cohort {
  return { id: String(r.id), role: r.role, startsAt: r.starts_at, createdAt: r.created_at };
}

function invitationFromRow(r: Record<string, any>): Invitation {
  return {
    id: String(r.id),
    cohortId: String(r.cohort_id),
    name: r.name,
    email: r.email,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at ?? null,
    openedAt: r.opened_at ?? null,
    createdAt: r.created_at,
  };
}
