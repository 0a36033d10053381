/** The Sluice server as a library: build the app, or start everything from a configuration. */
export { buildApp, type AppOptions } from './app.js';
export { startServer, DEMO_QUEUE, type RunningServer } from './server.js';
export { loadConfig, usage, ConfigError, type ServerConfig } from './config.js';
export { loadOrCreateTokens, generateToken, type Tokens } from './tokens.js';
export { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js';
