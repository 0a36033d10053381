/**
 * The missions platform inside the Sluice server: `missionsExtension()` is a server
 * extension that sets up the `missions` schema and queues, checks the sandbox, starts the
 * generation, grading and refill workers, mounts the routes with the server's token checks,
 * and stops the workers when the server drains. `main.ts` (what `npm start` runs) composes
 * it with the server. The server knows nothing of missions; the dependency points one way.
 */
import { LlmSaboteur, MAX_PROOF_REPETITIONS, type EngineOptions } from '@sluice/proof';
import { ConfigError, type AppPlugin, type ServerExtension } from '@sluice/server';
import { CATALOG } from './catalog/index.js';
import { HOST_CORES, type MissionsConfigInput, type ModelLimits } from './config.js';
import { DomainMap } from './domain-map.js';
import { OfflineGenerator, type Generator } from './generator.js';
import { LlmGenerator } from './llm-generator.js';
import { Missions } from './missions.js';
import { missionsRoutes } from './routes.js';
import { probeSandbox } from './sandbox-probe.js';
import type { SandboxStatus } from './types.js';

export interface PlatformSettings {
  /** How long an offline generation takes (stands in for model time, so a demo shows queueing). */
  generationDelayMs: number;
  autoApprove: boolean;
  refillTargetPerDomain: number;
  /** null: no refill schedule. */
  refillCron: string | null;
  domainMapPath: string | undefined;
  /** Proof and grading jobs at once on this host; default its cores. */
  proofConcurrency: number;
  gradingConcurrency: number;
  /** Proof and grading jobs at once across every instance; null: no such cap (each host adds capacity). */
  proofClusterConcurrency: number | null;
  gradingClusterConcurrency: number | null;
  /** How many times a proof runs each side (the engine's `proofRepetitions`); undefined: its default. */
  proofRepetitions: number | undefined;
  /** The model provider's limits, on the generation queue. */
  model: ModelLimits;
  /** The database proofs of SQL missions create their disposable databases on; default the server's. */
  proofAdminUrl: string | undefined;
  /** The key invitation tokens are signed with; undefined: one made once and kept in the database. Never printed. */
  invitationSecret: string | undefined;
  /** How long an invitation is valid, in hours. */
  invitationTtlHours: number;
  /** Failed submissions after which a candidate sees the saboteur's hint. */
  hintAfterFailedSubmissions: number;
  /** How long before a cohort's start its missions are planned, in hours. */
  cohortPlanLeadHours: number;
  /** Proven bugs of distinct families a mission holds at most. */
  variantsPerMission: number;
  /** Within how long a candidate's request for their mission is answered, in ms. */
  candidateAnswerMs: number;
  /** Where candidates' links point; undefined: the host the recruiter called. */
  publicUrl: string | undefined;
  env: NodeJS.ProcessEnv;
}

export const PLATFORM_USAGE = `
Missions platform (environment):
  SLUICE_MISSIONS_GENERATION_DELAY_MS   offline generation time, to show queueing (default 3000)
  SLUICE_MISSIONS_AUTO_APPROVE=1        serve proven missions without QA review (default: review)
  SLUICE_MISSIONS_REFILL_TARGET         approved + pending missions kept per domain (default 5)
  SLUICE_MISSIONS_REFILL_CRON           when the refill runs, or "off" (default */5 * * * *)
  SLUICE_MISSIONS_DOMAIN_MAP            role → domains JSON file (default packages/missions/config/domain-map.json)
  SLUICE_MISSIONS_PROOF_CONCURRENCY     suite runs at once across proofs on this host (default: its cores)
  SLUICE_MISSIONS_PROOF_CLUSTER_CAP     proofs at once across every instance (default: none, each host adds capacity)
  SLUICE_MISSIONS_VARIANTS              proven bugs of distinct families per mission, one per candidate in turn (default 3)
  SLUICE_MISSIONS_PROOF_REPETITIONS     times a proof runs gold and the bug, to find flaky suites (default 3, at most ${MAX_PROOF_REPETITIONS})
  SLUICE_MISSIONS_GRADING_CONCURRENCY   gradings running at once on this host (default: its cores)
  SLUICE_MISSIONS_GRADING_CLUSTER_CAP   gradings at once across every instance (default: none)
  SLUICE_MISSIONS_GENERATIONS_PER_MINUTE   generations started per minute at most, across processes (default: no limit)
  SLUICE_MISSIONS_MODEL_TOKENS_PER_MINUTE  the model's tokens per minute, a budget across processes (default: no limit)
  SLUICE_MISSIONS_TOKENS_PER_GENERATION    what one generation counts against that budget (default 8000)
  SLUICE_MISSIONS_INVITATION_SECRET     key that signs candidates' invitation links, at least 32 characters (default: one made once and kept in the database)
  SLUICE_MISSIONS_INVITATION_TTL_HOURS  how long an invitation link is valid, from its cohort's start (default 336: 14 days)
  SLUICE_MISSIONS_HINT_AFTER_FAILURES   failed submissions after which a candidate sees the hint (default 2)
  SLUICE_MISSIONS_CANDIDATE_ANSWER_MS   a candidate's mission request is answered within this, or 503 + Retry-After (default 4000)
  SLUICE_MISSIONS_COHORT_PLAN_LEAD_HOURS  how long before a cohort's start its missions are planned (default 24)
  SLUICE_MISSIONS_PUBLIC_URL            where invitation links point, e.g. https://missions.example.com (default: the host the recruiter called)
  SLUICE_LLM_API_KEY, SLUICE_LLM_BASE_URL, SLUICE_LLM_MODEL   generate with an OpenAI-compatible API
  SLUICE_PROOF_ALLOW_UNSANDBOXED=1      run untrusted code without bubblewrap (only on purpose)
`;

function integer(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(Number(value)))
    throw new ConfigError(`${name} must be a non-negative integer, got "${value}"`);
  return Number(value);
}

function positive(value: string | undefined, name: string, fallback: number): number {
  const n = integer(value, name, fallback);
  if (n < 1) throw new ConfigError(`${name} must be at least 1, got "${value}"`);
  return n;
}

function optionalPositive(value: string | undefined, name: string): number | null {
  return value === undefined || value === '' ? null : positive(value, name, 1);
}

function repetitions(value: string | undefined): number | undefined {
  const n = optionalPositive(value, 'SLUICE_MISSIONS_PROOF_REPETITIONS');
  if (n !== null && n > MAX_PROOF_REPETITIONS) {
    throw new ConfigError(`SLUICE_MISSIONS_PROOF_REPETITIONS must be at most ${MAX_PROOF_REPETITIONS}, got "${value}"`);
  }
  return n ?? undefined;
}

function flag(value: string | undefined, name: string): boolean {
  if (value === undefined || value === '' || value === '0') return false;
  if (value === '1') return true;
  throw new ConfigError(`${name} must be 1 or 0, got "${value}"`);
}

/** Reads the platform's settings; throws the server's `ConfigError` with a one-line reason on bad input. */
export function loadPlatformSettings(env: NodeJS.ProcessEnv): PlatformSettings {
  const cron = env.SLUICE_MISSIONS_REFILL_CRON;
  return {
    generationDelayMs: integer(env.SLUICE_MISSIONS_GENERATION_DELAY_MS, 'SLUICE_MISSIONS_GENERATION_DELAY_MS', 3_000),
    autoApprove: flag(env.SLUICE_MISSIONS_AUTO_APPROVE, 'SLUICE_MISSIONS_AUTO_APPROVE'),
    refillTargetPerDomain: integer(env.SLUICE_MISSIONS_REFILL_TARGET, 'SLUICE_MISSIONS_REFILL_TARGET', 5),
    refillCron: cron === 'off' ? null : cron || '*/5 * * * *',
    domainMapPath: env.SLUICE_MISSIONS_DOMAIN_MAP || undefined,
    proofConcurrency: positive(env.SLUICE_MISSIONS_PROOF_CONCURRENCY, 'SLUICE_MISSIONS_PROOF_CONCURRENCY', HOST_CORES),
    proofRepetitions: repetitions(env.SLUICE_MISSIONS_PROOF_REPETITIONS),
    gradingConcurrency: positive(env.SLUICE_MISSIONS_GRADING_CONCURRENCY, 'SLUICE_MISSIONS_GRADING_CONCURRENCY', HOST_CORES),
    proofClusterConcurrency: optionalPositive(env.SLUICE_MISSIONS_PROOF_CLUSTER_CAP, 'SLUICE_MISSIONS_PROOF_CLUSTER_CAP'),
    gradingClusterConcurrency: optionalPositive(env.SLUICE_MISSIONS_GRADING_CLUSTER_CAP, 'SLUICE_MISSIONS_GRADING_CLUSTER_CAP'),
    model: {
      generationsPerMinute: optionalPositive(env.SLUICE_MISSIONS_GENERATIONS_PER_MINUTE, 'SLUICE_MISSIONS_GENERATIONS_PER_MINUTE'),
      tokensPerMinute: optionalPositive(env.SLUICE_MISSIONS_MODEL_TOKENS_PER_MINUTE, 'SLUICE_MISSIONS_MODEL_TOKENS_PER_MINUTE'),
      tokensPerGeneration: positive(env.SLUICE_MISSIONS_TOKENS_PER_GENERATION, 'SLUICE_MISSIONS_TOKENS_PER_GENERATION', 8_000),
    },
    proofAdminUrl: env.SLUICE_PROOF_ADMIN_URL || undefined,
    invitationSecret: invitationSecret(env.SLUICE_MISSIONS_INVITATION_SECRET),
    invitationTtlHours: positive(env.SLUICE_MISSIONS_INVITATION_TTL_HOURS, 'SLUICE_MISSIONS_INVITATION_TTL_HOURS', 14 * 24),
    hintAfterFailedSubmissions: integer(env.SLUICE_MISSIONS_HINT_AFTER_FAILURES, 'SLUICE_MISSIONS_HINT_AFTER_FAILURES', 2),
    cohortPlanLeadHours: positive(env.SLUICE_MISSIONS_COHORT_PLAN_LEAD_HOURS, 'SLUICE_MISSIONS_COHORT_PLAN_LEAD_HOURS', 24),
    variantsPerMission: positive(env.SLUICE_MISSIONS_VARIANTS, 'SLUICE_MISSIONS_VARIANTS', 3),
    candidateAnswerMs: positive(env.SLUICE_MISSIONS_CANDIDATE_ANSWER_MS, 'SLUICE_MISSIONS_CANDIDATE_ANSWER_MS', 4_000),
    publicUrl: publicUrl(env.SLUICE_MISSIONS_PUBLIC_URL),
    env,
  };
}

function invitationSecret(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  // The value itself is never repeated in the message.
  if (value.length < 32) throw new ConfigError(`SLUICE_MISSIONS_INVITATION_SECRET must be at least 32 characters, got ${value.length}`);
  return value;
}

function publicUrl(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`SLUICE_MISSIONS_PUBLIC_URL must be an http(s) URL, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`SLUICE_MISSIONS_PUBLIC_URL must be an http(s) URL, got "${value}"`);
  return value.replace(/\/+$/, '');
}

/** The routes, mounted with the host server's token checks. */
export function missionsPlugin(missions: Missions, { publicUrl = null }: { publicUrl?: string | null } = {}): AppPlugin {
  return async (app, { apiAuth, adminAuth }) => {
    await app.register(missionsRoutes, { missions, apiAuth, adminAuth, publicUrl });
  };
}

export interface MissionsExtension extends ServerExtension {
  /** The running platform (after start). */
  readonly missions: Missions | null;
}

/** The platform as a server extension. `generator` and `engine` override what the settings choose (tests). */
export function missionsExtension(
  settings: PlatformSettings,
  overrides: { generator?: Generator; engine?: EngineOptions; config?: MissionsConfigInput } = {},
): MissionsExtension {
  let missions: Missions | null = null;
  return {
    name: 'missions',
    get missions() {
      return missions;
    },
    async start({ sluice, databaseUrl, print }) {
      const domainMap = settings.domainMapPath ? DomainMap.load(settings.domainMapPath) : DomainMap.load();
      // A proof makes several suite runs (repetitions, isolation, a rewrite): together they stay within the proof cap.
      const engine: EngineOptions = {
        ...(overrides.engine ?? {
          database: { adminUrl: settings.proofAdminUrl ?? databaseUrl },
          maxParallelRuns: settings.proofConcurrency,
        }),
        ...(settings.proofRepetitions !== undefined ? { proofRepetitions: settings.proofRepetitions } : {}),
      };
      const sandbox = await probeSandbox(engine);
      // Without a sandbox only SQL challenges can be proven (they run inside PostgreSQL):
      // the offline generator draws from those rather than fail every other generation.
      const catalog = sandbox.state === 'unavailable' ? CATALOG.filter((e) => e.language === 'sql') : CATALOG;
      const generator =
        overrides.generator ??
        LlmGenerator.fromEnvironment(settings.env) ??
        new OfflineGenerator({ catalog, generationDelayMs: settings.generationDelayMs });
      const platform = new Missions({
        sluice,
        // The server's own pool: one bounded set of connections per process (SLUICE_DB_POOL_SIZE),
        // whose acquire timeout and statement deadline make a busy database a 503, not a wait.
        pool: sluice.pool,
        domainMap,
        engine,
        sandbox,
        generator,
        llmSaboteur: LlmSaboteur.fromEnvironment(settings.env),
        ...(settings.invitationSecret ? { invitationSecret: settings.invitationSecret } : {}),
        config: {
          autoApprove: settings.autoApprove,
          refillTargetPerDomain: settings.refillTargetPerDomain,
          refillCron: settings.refillCron,
          proving: { concurrency: settings.proofConcurrency, clusterConcurrency: settings.proofClusterConcurrency },
          grading: { concurrency: settings.gradingConcurrency, clusterConcurrency: settings.gradingClusterConcurrency },
          model: settings.model,
          invitationTtlMs: settings.invitationTtlHours * 3_600_000,
          hintAfterFailedSubmissions: settings.hintAfterFailedSubmissions,
          cohortPlanLeadMs: settings.cohortPlanLeadHours * 3_600_000,
          variantsPerMission: settings.variantsPerMission,
          candidateAnswerMs: settings.candidateAnswerMs,
          ...overrides.config,
        },
      });
      try {
        await platform.setup();
        for (const line of describe(platform, sandbox, settings)) print(line);
        platform.startWorkers();
      } catch (error) {
        await platform.close().catch(() => undefined);
        throw error;
      }
      missions = platform;
    },
    register: (app, context) => {
      if (!missions) throw new Error('the missions extension must start before its routes are mounted');
      return missionsPlugin(missions, { publicUrl: settings.publicUrl ?? null })(app, context);
    },
    async stop({ timeoutMs }) {
      await missions?.close(timeoutMs);
      missions = null;
    },
  };
}

function clusterCaps(proofs: number | null, gradings: number | null): string {
  if (proofs === null && gradings === null) return 'each instance adds its own';
  const cap = (n: number | null) => (n === null ? 'none' : String(n));
  return `across instances at most ${cap(proofs)} proofs and ${cap(gradings)} gradings`;
}

function describe(missions: Missions, sandbox: SandboxStatus, settings: PlatformSettings): string[] {
  const { generation, proving, grading, model } = missions.config;
  const lines = [
    `missions: generator ${missions.generator.kind}${missions.generator.kind === 'offline' ? ` (${settings.generationDelayMs} ms per generation)` : ''}; ` +
      `queue missions.generate: cap ${generation.concurrency}, ${missions.config.requestsPerUser} requests per user, shed at ${generation.maxPending} pending` +
      (model.generationsPerMinute === null ? '' : `, ${model.generationsPerMinute} generations a minute`) +
      (model.tokensPerMinute === null
        ? ''
        : `, ${model.tokensPerMinute} model tokens a minute (${model.tokensPerGeneration} per generation)`),
    `missions: test suites on this host (${HOST_CORES} cores): ${proving.concurrency} proofs and ${grading.concurrency} gradings at once` +
      `, ${clusterCaps(proving.clusterConcurrency, grading.clusterConcurrency)}`,
    `missions: ${settings.autoApprove ? 'proven missions are served at once (auto-approve)' : 'proven missions wait for QA review on the dashboard (Missions → QA)'}; ` +
      `refill ${settings.refillCron ? `"${settings.refillCron}" to ${settings.refillTargetPerDomain} per domain` : 'off'}`,
  ];
  if (sandbox.state === 'isolated') lines.push(`missions: sandbox ok: ${sandbox.detail}`);
  else if (sandbox.state === 'unsandboxed') lines.push(`missions: WARNING: ${sandbox.detail}`);
  else {
    const fix = sandbox.detail.includes('bubblewrap is not usable')
      ? 'missions:   install bubblewrap (apt-get install bubblewrap), or set SLUICE_PROOF_ALLOW_UNSANDBOXED=1 to run untrusted code without isolation on purpose;'
      : sandbox.detail.includes('no kernel-enforced bound')
        ? 'missions:   run as root where cgroup v1 or v2 has the pids and memory controllers, or set SLUICE_PROOF_CGROUP_ROOT to a delegated cgroup v2 subtree, or set SLUICE_PROOF_ALLOW_UNBOUNDED_PROCESSES=1 to accept the risk on purpose;'
        : sandbox.detail.startsWith('sandbox_unavailable')
          ? 'missions:   fix what the message names;'
          : 'missions:   install what the message names (python3-pytest and python3-pytest-timeout on Debian);';
    lines.push(
      `missions: WARNING: Python and JavaScript proofs and gradings cannot run here: ${sandbox.detail.split('. ')[0]}.`,
      fix,
      `missions:   until then ${missions.generator.kind === 'offline' ? 'the offline generator draws SQL challenges only (they run inside PostgreSQL)' : 'generation jobs for those languages fail'}.`,
    );
  }
  return lines;
}
