/**
 * A generator backed by an OpenAI-compatible chat API (the proof engine's `ChatClient`,
 * so retries, timeouts and key scrubbing behave the same). The reply is a JSON challenge
 * in the runners' file conventions; it is checked here, and the generation job then
 * proves it like any other: a model's tests that do not pass on its own gold never
 * become a mission.
 */
import { ChatClient, type ChatClientOptions, type ChatMessage, type Language } from '@sluice/proof';
import { MissionsError } from './errors.js';
import { seededRandom, type GeneratedChallenge, type GenerationRequest, type Generator } from './generator.js';

const RUNNER_CONVENTIONS: Record<Language, string> = {
  javascript: "Jest 30, CommonJS: solution `x.js` exports with `module.exports`; tests `x.test.js` use `require('./x')`.",
  typescript: "Jest 30 with ts-jest: solution `x.ts` uses `export`; tests `x.test.ts` use `import { … } from './x'`.",
  python: 'pytest: solution `x.py`; tests `test_x.py` do `from x import …` and define `test_…` functions.',
  sql: "PostgreSQL 15 + pgTAP: `solution.sql` creates tables, rows and a function returning a number; tests `test_x.sql` are `BEGIN; SELECT plan(n); SELECT is(f(...), value, 'description'); … SELECT * FROM finish(); ROLLBACK;`.",
};

const MAX_FILE_CHARS = 20_000;

export interface LlmGeneratorOptions {
  /** A ready client, or the options to make one. */
  client: ChatClient | ChatClientOptions;
  /** Languages to draw from (by seed). Default all four. */
  languages?: Language[];
}

export class LlmGenerator implements Generator {
  readonly kind = 'llm';
  private readonly client: ChatClient;
  private readonly languages: Language[];

  constructor(options: LlmGeneratorOptions) {
    this.client = options.client instanceof ChatClient ? options.client : new ChatClient(options.client);
    this.languages = options.languages ?? ['javascript', 'typescript', 'python', 'sql'];
  }

  /** Configured from SLUICE_LLM_API_KEY / OPENAI_API_KEY (and _BASE_URL, SLUICE_LLM_MODEL); null without a key. */
  static fromEnvironment(env: NodeJS.ProcessEnv = process.env): LlmGenerator | null {
    const apiKey = env.SLUICE_LLM_API_KEY ?? env.OPENAI_API_KEY;
    if (!apiKey) return null;
    const baseUrl = env.SLUICE_LLM_BASE_URL ?? env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1';
    return new LlmGenerator({ client: { baseUrl, apiKey, model: env.SLUICE_LLM_MODEL || undefined } });
  }

  async generate(request: GenerationRequest, signal?: AbortSignal): Promise<GeneratedChallenge> {
    const language = this.languages[Math.floor(seededRandom(request.seed)() * this.languages.length)]!;
    const reply = await this.client.completion(buildGenerationPrompt(request.domain, language), { json: true, signal });
    const challenge = parseGenerationReply(reply.content, request.domain, language);
    return reply.totalTokens === null ? challenge : { ...challenge, tokensUsed: reply.totalTokens };
  }
}

export function buildGenerationPrompt(domain: string, language: Language): ChatMessage[] {
  return [
    {
      role: 'system',
      content: [
        'You write short, realistic coding challenges for job assessments.',
        `Domain: ${domain}. Language: ${language}. ${RUNNER_CONVENTIONS[language]}`,
        "Write one small function a practitioner of this domain would really write, a correct (gold) solution, and 2 to 5 tests that all pass on it and each check the function's result.",
        'No network, no files, no randomness, no clock. Reply with one JSON object only:',
        '{"title": string, "brief": string (what the code must do, as a ticket), "solution": {path: contents}, "tests": {path: contents}}',
      ].join('\n'),
    },
    { role: 'user', content: `Write a ${language} challenge for the ${domain} domain.` },
  ];
}

/** Checks the model's reply; anything off is `generator_reply_invalid` (the job fails and is retried). */
export function parseGenerationReply(reply: string, domain: string, language: Language): GeneratedChallenge {
  const invalid = (why: string) => new MissionsError('generator_reply_invalid', `the model's challenge is unusable: ${why}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(reply);
  } catch {
    throw invalid('not JSON');
  }
  const r = parsed as { title?: unknown; brief?: unknown; solution?: unknown; tests?: unknown };
  if (typeof r.title !== 'string' || !r.title.trim() || r.title.length > 200) throw invalid('"title" must be a short string');
  if (typeof r.brief !== 'string' || !r.brief.trim() || r.brief.length > 4000) throw invalid('"brief" must be a string');
  const gold = files(r.solution, 'solution', invalid);
  const tests = files(r.tests, 'tests', invalid);
  for (const path of Object.keys(tests)) if (Object.hasOwn(gold, path)) throw invalid(`"${path}" is both a solution and a test file`);
  return { source: 'llm', language, domain, title: r.title.trim(), brief: r.brief.trim(), gold, tests };
}

function files(value: unknown, field: string, invalid: (why: string) => MissionsError): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(`"${field}" must be an object of files`);
  const entries = Object.entries(value);
  if (entries.length === 0 || entries.length > 10) throw invalid(`"${field}" must hold 1 to 10 files`);
  for (const [path, text] of entries) {
    // Relative, forward slashes, no climbing out of the workspace.
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.\-/]{0,120}$/.test(path) || path.split('/').includes('..')) throw invalid(`bad file path "${path}"`);
    if (typeof text !== 'string' || text.length > MAX_FILE_CHARS)
      throw invalid(`"${path}" must be text under ${MAX_FILE_CHARS} characters`);
  }
  return Object.fromEntries(entries) as Record<string, string>;
}
