/** The Sluice server as a library: build the app, or start everything from a configuration. */
export { buildApp, type AppOptions } from './app.js';
export { startServer, runFromCommandLine, DEMO_QUEUE, type RunningServer, type StartOptions } from './server.js';
export { loadConfig, usage, ConfigError, type ServerConfig } from './config.js';
export { loadOrCreateTokens, generateToken, TokenChecker, type Tokens, type TokenKind } from './tokens.js';
export { requireToken } from './auth.js';
export type { RouteContext, AppPlugin, ServerExtension, ExtensionStartContext } from './context.js';
export { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js';
export { installErrorHandlers, validationMessage } from './http-errors.js';
export { STORABLE_TEXT } from './schemas.js';
