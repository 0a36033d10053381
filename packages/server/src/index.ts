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
export { migrateServerSchema } from './db.js';
export {
  parseHooksConfig,
  loadHooksFile,
  HooksConfigError,
  WEBHOOK_EVENTS,
  type HooksConfig,
  type HookSource,
  type SignatureScheme,
  type WebhookTarget,
  type WebhookEventType,
} from './hooks/config.js';
export {
  WebhookRelay,
  signDelivery,
  subscribeTargets,
  targetOf,
  WEBHOOK_QUEUE,
  type WebhookDelivery,
  type WebhookRelayOptions,
} from './hooks/outbound.js';
export { signBody } from './hooks/signature.js';
export type { HookDelivery } from './hooks/intake.js';
