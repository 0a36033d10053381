export { createTestDatabase, adminUrl, type TestDatabase } from './database.js';
export { waitFor } from './wait.js';
export { hasPgBouncer, startPgBouncer, PGBOUNCER } from './pgbouncer.js';
