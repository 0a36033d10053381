/**
 * The domain map: which domains a role may be served (a marketing mission is never
 * served to an engineer), and which domains are technical (their missions retire later).
 * It lives in a JSON file so it can change without a release.
 */
import { readFileSync } from 'node:fs';
import { MissionsError } from './errors.js';

export interface DomainMapFile {
  domains: Record<string, { technical?: boolean }>;
  roles: Record<string, string[]>;
}

export const DEFAULT_DOMAIN_MAP_PATH = new URL('../config/domain-map.json', import.meta.url);

export class DomainMap {
  private readonly file: DomainMapFile;

  constructor(file: DomainMapFile) {
    check(file);
    this.file = file;
  }

  static load(path: string | URL = DEFAULT_DOMAIN_MAP_PATH): DomainMap {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'));
    } catch (error) {
      throw new MissionsError('config_invalid', `cannot read the domain map ${String(path)}: ${(error as Error).message}`);
    }
    return new DomainMap(parsed as DomainMapFile);
  }

  /** The domains a role may be served, in the map's order; an unknown role is refused. */
  domainsFor(role: string): string[] {
    const domains = Object.hasOwn(this.file.roles, role) ? this.file.roles[role] : undefined;
    if (!domains) throw new MissionsError('unknown_role', `unknown role "${role}"; known roles: ${this.roles().join(', ')}`);
    return [...domains];
  }

  isTechnical(domain: string): boolean {
    return this.file.domains[domain]?.technical === true;
  }

  roles(): string[] {
    return Object.keys(this.file.roles);
  }

  domains(): string[] {
    return Object.keys(this.file.domains);
  }
}

function check(file: DomainMapFile): void {
  const bad = (why: string) => new MissionsError('config_invalid', `invalid domain map: ${why}`);
  if (typeof file !== 'object' || file === null) throw bad('not an object');
  if (typeof file.domains !== 'object' || file.domains === null) throw bad('"domains" must be an object');
  if (typeof file.roles !== 'object' || file.roles === null) throw bad('"roles" must be an object');
  for (const [role, domains] of Object.entries(file.roles)) {
    if (!Array.isArray(domains) || domains.length === 0) throw bad(`role "${role}" needs at least one domain`);
    for (const domain of domains) {
      if (!Object.hasOwn(file.domains, domain)) throw bad(`role "${role}" names unknown domain "${domain}"`);
    }
  }
}
