export { createTestDatabase, adminUrl, type TestDatabase } from './database.js';
export { waitFor } from './wait.js';
export { hasPgBouncer, skipWithoutPgBouncer, startPgBouncer } from './pgbouncer.js';
export { dumpSchema } from './schema-dump.js';
export { startStallProxy, type StallProxy } from './stall-proxy.js';
export { scratchDatabase } from './scratch.js';
