/**
 * Generators produce a challenge: a brief, a gold solution and a test suite. The offline
 * generator draws from the catalog and renames identifiers, deterministically from a seed,
 * and takes `generationDelayMs` like a model would, so a demo shows queueing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Language, SourceFiles } from '@sluice/proof';
import { CATALOG, type CatalogEntry } from './catalog/index.js';
import { MissionsError } from './errors.js';

export interface GenerationRequest {
  domain: string;
  /** Same seed, same challenge. */
  seed: number;
  /** The catalog entry to draw, when the generator has a catalog (a refill's plan); the seed still picks the names. */
  source?: string;
}

export interface GeneratedChallenge {
  /** Where it came from: a catalog entry id, or `llm`. */
  source: string;
  language: Language;
  domain: string;
  title: string;
  brief: string;
  gold: SourceFiles;
  tests: SourceFiles;
  /** Model tokens the generation used, when the model said: what it counts against the token budget. */
  tokensUsed?: number;
}

export interface Generator {
  readonly kind: string;
  generate(request: GenerationRequest, signal?: AbortSignal): Promise<GeneratedChallenge>;
  /**
   * Up to `count` catalog entries of the domain to plan, none of `avoid` (challenges already
   * pending there), each once; absent for a generator without a catalog.
   */
  plan?(domain: string, avoid: ReadonlySet<string>, count: number): string[];
}

export interface OfflineGeneratorOptions {
  catalog?: readonly CatalogEntry[];
  /** How long each generation takes, to stand in for model time. Default 0. */
  generationDelayMs?: number;
}

export class OfflineGenerator implements Generator {
  readonly kind = 'offline';
  private readonly catalog: readonly CatalogEntry[];
  private readonly generationDelayMs: number;

  constructor(options: OfflineGeneratorOptions = {}) {
    this.catalog = options.catalog ?? CATALOG;
    this.generationDelayMs = options.generationDelayMs ?? 0;
  }

  plan(domain: string, avoid: ReadonlySet<string>, count: number): string[] {
    return planFromCatalog(this.catalog, domain, avoid, count);
  }

  async generate(request: GenerationRequest, signal?: AbortSignal): Promise<GeneratedChallenge> {
    const entries = this.catalog.filter((e) => e.domain === request.domain);
    if (entries.length === 0) throw new MissionsError('unknown_domain', `the catalog has no challenge in domain "${request.domain}"`);
    const random = seededRandom(request.seed);
    const drawn = entries[Math.floor(random() * entries.length)]!;
    const entry = entries.find((e) => e.id === request.source) ?? drawn;
    const names: Record<string, string> = {};
    for (const [placeholder, alternatives] of Object.entries(entry.names)) {
      names[placeholder] = alternatives[Math.floor(random() * alternatives.length)]!;
    }
    if (this.generationDelayMs > 0) await sleep(this.generationDelayMs, undefined, { signal });
    return {
      source: entry.id,
      language: entry.language,
      domain: entry.domain,
      title: entry.title,
      brief: render(entry.brief, names),
      gold: renderFiles(entry.solution, names),
      tests: renderFiles(entry.tests, names),
    };
  }
}

/**
 * The entries of a domain not in `avoid`, in catalog order: a refill never plans a
 * challenge already pending in the domain, nor one twice (fewer when the domain runs out).
 */
export function planFromCatalog(catalog: readonly CatalogEntry[], domain: string, avoid: ReadonlySet<string>, count: number): string[] {
  return catalog
    .filter((e) => e.domain === domain && !avoid.has(e.id))
    .map((e) => e.id)
    .slice(0, Math.max(0, count));
}

/** Replaces `{{name}}` placeholders; an unknown placeholder is a catalog bug, so it throws. */
export function render(template: string, names: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    const value = names[name];
    if (value === undefined) throw new MissionsError('catalog_invalid', `placeholder {{${name}}} has no value`);
    return value;
  });
}

export function renderFiles(files: SourceFiles, names: Record<string, string>): SourceFiles {
  return Object.fromEntries(Object.entries(files).map(([path, text]) => [path, render(text, names)]));
}

/** mulberry32: small, fast and the same on every platform. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
