/**
 * What every part of the platform reads: the Sluice instance whose queues carry the work,
 * the pool of the `missions` schema, the configuration and the domain map. `Missions`
 * builds it once and hands it to each part (warm pool, generation flow, grading, QA).
 */
import type pg from 'pg';
import type { Sluice } from 'sluice';
import type { MissionsConfig } from './config.js';
import type { DomainMap } from './domain-map.js';

export interface PlatformParts {
  sluice: Sluice;
  pool: pg.Pool;
  config: MissionsConfig;
  domainMap: DomainMap;
}
