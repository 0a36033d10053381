export { createTestDatabase, adminUrl, type TestDatabase } from './database.js';
export { waitFor } from './wait.js';
export { skipWithoutPgBouncer, startPgBouncer } from './pgbouncer.js';
export { dumpSchema } from './schema-dump.js';
