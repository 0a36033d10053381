/**
 * The LLM saboteur: asks an OpenAI-compatible chat model for one specific, teachable bug
 * of a named family (families.ts) and a hint, as JSON, and validates the reply; the reply
 * says which family it planted. Each rejected attempt goes back into the
 * next prompt with the proof's reasons, so a retry can correct course.
 */
import { LlmNotConfiguredError, LlmReplyInvalidError } from '../errors.js';
import { checkRelativePath } from '../files.js';
import type { Logger } from '../options.js';
import type { Challenge, SourceFiles } from '../types.js';
import { ChatClient, type ChatClientOptions, type ChatMessage } from './chat-client.js';
import { FAMILIES, isBugFamily, realisticFamilies, type BugFamily } from './families.js';
import type { ProposeRequest, RejectedAttempt, SabotageCandidate, Saboteur } from './saboteur.js';

const RUNNER: Record<Challenge['language'], string> = {
  javascript: 'Jest',
  typescript: 'Jest (ts-jest)',
  python: 'pytest',
  sql: 'pgTAP',
};
const MAX_TEXT = 2_000;

export class LlmSaboteur implements Saboteur {
  readonly kind = 'llm' as const;
  readonly client: ChatClient;

  constructor(options: ChatClientOptions | ChatClient) {
    this.client = options instanceof ChatClient ? options : new ChatClient(options);
  }

  /**
   * From the environment: SLUICE_LLM_API_KEY (or OPENAI_API_KEY), SLUICE_LLM_BASE_URL
   * (or OPENAI_BASE_URL; default https://api.openai.com/v1), SLUICE_LLM_MODEL (default gpt-4o).
   * Null when no key is set.
   */
  static fromEnvironment(env: NodeJS.ProcessEnv = process.env, logger?: Logger): LlmSaboteur | null {
    const apiKey = env.SLUICE_LLM_API_KEY ?? env.OPENAI_API_KEY;
    if (!apiKey) return null;
    const baseUrl = env.SLUICE_LLM_BASE_URL ?? env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1';
    return new LlmSaboteur({ baseUrl, apiKey, model: env.SLUICE_LLM_MODEL || undefined, logger });
  }

  static requireFromEnvironment(env: NodeJS.ProcessEnv = process.env, logger?: Logger): LlmSaboteur {
    const saboteur = LlmSaboteur.fromEnvironment(env, logger);
    if (!saboteur)
      throw new LlmNotConfiguredError('no LLM is configured: set SLUICE_LLM_API_KEY (and SLUICE_LLM_BASE_URL, SLUICE_LLM_MODEL as needed)');
    return saboteur;
  }

  async propose(
    challenge: Challenge,
    rejected: readonly RejectedAttempt[],
    signal?: AbortSignal,
    request: ProposeRequest = {},
  ): Promise<SabotageCandidate[]> {
    const reply = await this.client.complete(buildPrompt(challenge, rejected, request.family), { json: true, signal });
    const candidate = parseReply(reply, challenge.gold);
    return [{ ...candidate, family: candidate.family ?? request.family }];
  }
}

export function buildPrompt(challenge: Challenge, rejected: readonly RejectedAttempt[], family?: BugFamily): ChatMessage[] {
  const families = realisticFamilies(challenge.language);
  const system = [
    'You help build programming assessments. You are given working code (the gold solution) and its test suite.',
    'Plant exactly ONE specific, realistic bug of the kind a developer really makes and a candidate can learn from.',
    family && family !== 'return_value'
      ? `The bug must be of this family: "${family}" (${FAMILIES[family].label}). Only when the code has no such place, choose another family from the list below.`
      : 'Choose its family from the list below.',
    `Families: ${families.map((f) => `"${f}" (${FAMILIES[f].label})`).join('; ')}.`,
    'Never merely add a constant to a returned value or negate it: that is not a realistic bug and is refused.',
    'Hard rules:',
    `- EVERY test in the suite must fail when run with ${RUNNER[challenge.language]}, by an assertion failure or an exception raised inside the test;`,
    '- the code must still load: no syntax errors, no import errors, no compile errors, nothing that breaks before the tests run;',
    '- no infinite loops, no sleeps, no hangs: a test that times out does not count;',
    challenge.language === 'sql'
      ? '- in SQL the bug must return wrong values or rows: an SQL error aborts the pgTAP file and does not count;'
      : '- do not exit the process and do not touch the tests;',
    '- change only the solution files, keep their names, keep everything else identical, and add no comment that reveals the bug.',
    'Reply with one JSON object and nothing else:',
    '{"files": {"<path>": "<the complete sabotaged file>"}, "family": "<the family of the bug, from the list>", "bug": "<what you changed and why every test fails>", "hint": "<one sentence for the candidate that points at the area without giving the bug away>"}',
  ].join('\n');
  const parts = [`Language: ${challenge.language}`];
  if (challenge.description) parts.push(`What the code should do:\n${challenge.description}`);
  parts.push('Gold solution files:', ...fenced(challenge.gold), 'Test files:', ...fenced(challenge.tests));
  if (rejected.length > 0) {
    parts.push('Earlier attempts that were NOT accepted (do something different):');
    for (const [i, attempt] of rejected.entries()) {
      parts.push(
        `${i + 1}. ${attempt.candidate.description.slice(0, 300)}\n   rejected because: ${attempt.reasons.slice(0, 5).join('; ').slice(0, 600)}`,
      );
    }
  }
  return [
    { role: 'system', content: system },
    { role: 'user', content: parts.join('\n\n') },
  ];
}

function fenced(files: SourceFiles): string[] {
  return Object.entries(files).map(([path, text]) => `--- ${path}\n\`\`\`\n${text}\n\`\`\``);
}

/** Validates the model's reply against the gold files. */
export function parseReply(reply: string, gold: SourceFiles): SabotageCandidate {
  const text = reply
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new LlmReplyInvalidError('the reply is not a JSON object');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new LlmReplyInvalidError('the reply is not a JSON object');
  const { files, bug, hint, family } = parsed as { files?: unknown; bug?: unknown; hint?: unknown; family?: unknown };
  if (files === null || typeof files !== 'object' || Array.isArray(files))
    throw new LlmReplyInvalidError('"files" must be an object of path → contents');
  if (typeof bug !== 'string' || !bug.trim()) throw new LlmReplyInvalidError('"bug" must be a non-empty string');
  if (typeof hint !== 'string' || !hint.trim()) throw new LlmReplyInvalidError('"hint" must be a non-empty string');
  if (family !== undefined && !isBugFamily(family))
    throw new LlmReplyInvalidError(`"family" must be one of the named families, not ${JSON.stringify(family).slice(0, 60)}`);
  const changed = Object.entries(files as Record<string, unknown>);
  if (changed.length === 0) throw new LlmReplyInvalidError('"files" is empty');
  const sabotaged: SourceFiles = { ...gold };
  for (const [path, contents] of changed) {
    try {
      checkRelativePath(path, 'files');
    } catch {
      throw new LlmReplyInvalidError(`"files" names an invalid path "${path.slice(0, 80)}"`);
    }
    if (!Object.hasOwn(gold, path)) throw new LlmReplyInvalidError(`"files" names "${path}", which is not a solution file`);
    if (typeof contents !== 'string') throw new LlmReplyInvalidError(`"files"."${path}" must be a string`);
    sabotaged[path] = contents;
  }
  const named = family as BugFamily | undefined;
  return {
    files: sabotaged,
    description: bug.trim().slice(0, MAX_TEXT),
    hint: hint.trim().slice(0, MAX_TEXT),
    ...(named ? { family: named } : {}),
  };
}
