/** The shape of an offline challenge: a brief, a gold solution and tests that pass on it. */
import type { Language, SourceFiles } from '@sluice/proof';

export interface CatalogEntry {
  /** Stable id, also the prefix of every mission generated from it. */
  id: string;
  language: Language;
  domain: string;
  title: string;
  /** What the candidate is asked to fix, in the words of a ticket. */
  brief: string;
  /**
   * Identifiers the generator may rename, by placeholder (`{{fn}}` in the brief, the
   * solution and the tests); the first alternative is the canonical one.
   */
  names: Record<string, string[]>;
  solution: SourceFiles;
  tests: SourceFiles;
}
