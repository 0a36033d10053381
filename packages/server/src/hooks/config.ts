/**
 * The hooks file (`--hooks-file`, `SLUICE_HOOKS_FILE`): JSON naming the sources whose
 * signed webhooks `POST /api/hooks/:source` takes in, and the targets that outbound
 * webhooks deliver chosen job events to. A secret is given inline
 * (`secret`) or, to keep it out of the file, as the name of an environment variable
 * (`secretEnv`). Errors name the field, never a secret's value.
 *
 * { "sources": [ { "name": "github", "queue": "gh-events", "scheme": "github", "secretEnv": "GH_HOOK_SECRET" } ],
 *   "webhooks": [ { "name": "ops", "url": "https://ops.example/sluice", "events": ["dead"], "secretEnv": "OPS_SECRET" } ] }
 */
import { readFileSync } from 'node:fs';

export type SignatureScheme = 'github' | 'hmac-sha256';

export interface HookSource {
  /** The `:source` of `POST /api/hooks/:source`. */
  name: string;
  /** Where each accepted delivery becomes a job. */
  queue: string;
  secret: string;
  /**
   * `github`: `X-Hub-Signature-256: sha256=<hex>`, delivery id `X-GitHub-Delivery`, event
   * `X-GitHub-Event`. `hmac-sha256`: the same `sha256=<hex>` HMAC in `signatureHeader`,
   * delivery id in `deliveryHeader`, event (optional) in `eventHeader`.
   */
  scheme: SignatureScheme;
  signatureHeader: string;
  deliveryHeader: string;
  eventHeader: string | null;
  /**
   * Media types the source's deliveries may have (lowercase, no parameters). Default:
   * application/json and application/x-www-form-urlencoded (GitHub's two). JSON types
   * are parsed, a form's `payload` field is parsed as JSON, any other type is kept as text.
   */
  contentTypes: string[];
}

export const DEFAULT_CONTENT_TYPES = ['application/json', 'application/x-www-form-urlencoded'];
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** What an outbound webhook may be sent for: a job's end (`gap` is accepted for older files and never sent: deliveries come from the outbox). */
export const WEBHOOK_EVENTS = ['completed', 'failed', 'dead', 'cancelled', 'gap'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

export interface WebhookTarget {
  /** Names the target in deliveries' data and logs (its URL may hold a token; it is never logged). */
  name: string;
  /** http or https only. */
  url: string;
  events: WebhookEventType[];
  /** Only these queues' events; null: every queue's (except the webhooks' own). */
  queues: string[] | null;
  secret: string;
}

export interface HooksConfig {
  /** The hooks file read (null: none was given). */
  file: string | null;
  sources: HookSource[];
  webhooks: WebhookTarget[];
  /** How long a delivery id is remembered; a redelivery within it is a duplicate. */
  dedupeWindowSeconds: number;
  /**
   * A delivery is answered within this bound: accepted (202), a duplicate (200), or, when
   * the database did not record it in time, 503 with Retry-After. Senders such as GitHub
   * give up after 10 s; the default leaves room for the network.
   */
  ackTimeoutMs: number;
}

export const NO_HOOKS: HooksConfig = { file: null, sources: [], webhooks: [], dedupeWindowSeconds: 7 * 86_400, ackTimeoutMs: 4_000 };

const SCHEME_HEADERS: Record<SignatureScheme, Pick<HookSource, 'signatureHeader' | 'deliveryHeader' | 'eventHeader'>> = {
  github: { signatureHeader: 'x-hub-signature-256', deliveryHeader: 'x-github-delivery', eventHeader: 'x-github-event' },
  'hmac-sha256': { signatureHeader: 'x-signature-256', deliveryHeader: 'idempotency-key', eventHeader: null },
};

const SOURCE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const HEADER_NAME = /^[A-Za-z0-9-]{1,100}$/;
/** Shorter HMAC keys are guessable offline from one signed delivery. */
const MIN_SECRET_LENGTH = 16;

export class HooksConfigError extends Error {}

type Fields = Record<string, unknown>;

function field(where: string, object: Fields, name: string, test: (v: unknown) => boolean, what: string, required = true): unknown {
  const value = object[name];
  if (value === undefined && !required) return undefined;
  if (!test(value)) throw new HooksConfigError(`${where}.${name} must be ${what}`);
  return value;
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** `secret`, or the environment variable `secretEnv` names: exactly one, long enough. */
function secretOf(where: string, object: Fields, env: NodeJS.ProcessEnv): string {
  const inline = object.secret;
  const fromEnv = field(where, object, 'secretEnv', (v) => isString(v) && v.length > 0, 'the name of an environment variable', false) as
    string | undefined;
  if ((inline === undefined) === (fromEnv === undefined)) throw new HooksConfigError(`${where} needs exactly one of secret and secretEnv`);
  const secret = fromEnv === undefined ? inline : env[fromEnv];
  const origin = fromEnv === undefined ? `${where}.secret` : `${where}.secretEnv (${fromEnv})`;
  if (!isString(secret) || secret.length < MIN_SECRET_LENGTH)
    throw new HooksConfigError(`${origin} must give a secret of at least ${MIN_SECRET_LENGTH} characters`);
  return secret;
}

/** The object at `where`, with no field outside `known`. */
function objectOf(where: string, raw: unknown, known: string[]): Fields {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new HooksConfigError(`${where} must be an object`);
  const unknown = Object.keys(raw).find((k) => !known.includes(k));
  if (unknown) throw new HooksConfigError(`${where} has an unknown field "${unknown}"`);
  return raw as Fields;
}

const nameOf = (where: string, object: Fields) =>
  field(
    where,
    object,
    'name',
    (v) => isString(v) && SOURCE_NAME.test(v),
    'a lowercase name of letters, digits, - and _ (at most 64)',
  ) as string;

function parseWebhook(raw: unknown, index: number, env: NodeJS.ProcessEnv): WebhookTarget {
  const where = `webhooks[${index}]`;
  const object = objectOf(where, raw, ['name', 'url', 'events', 'queues', 'secret', 'secretEnv']);
  const name = nameOf(where, object);
  const url = field(
    where,
    object,
    'url',
    (v) => {
      if (!isString(v) || !URL.canParse(v)) return false;
      const { protocol } = new URL(v);
      return protocol === 'http:' || protocol === 'https:';
    },
    'an http or https URL',
  ) as string;
  const events = field(
    where,
    object,
    'events',
    (v) => Array.isArray(v) && v.length > 0 && v.every((e) => (WEBHOOK_EVENTS as readonly unknown[]).includes(e)),
    `a non-empty list of ${WEBHOOK_EVENTS.join(', ')}`,
  ) as WebhookEventType[];
  const queues = field(
    where,
    object,
    'queues',
    (v) => Array.isArray(v) && v.length > 0 && v.every((q) => isString(q) && q.length > 0),
    'a non-empty list of queue names',
    false,
  ) as string[] | undefined;
  return { name, url, events: [...new Set(events)], queues: queues ?? null, secret: secretOf(where, object, env) };
}

function parseSource(raw: unknown, index: number, env: NodeJS.ProcessEnv): HookSource {
  const where = `sources[${index}]`;
  const object = objectOf(where, raw, [
    'name',
    'queue',
    'scheme',
    'secret',
    'secretEnv',
    'signatureHeader',
    'deliveryHeader',
    'eventHeader',
    'contentTypes',
  ]);
  const name = nameOf(where, object);
  const queue = field(where, object, 'queue', (v) => isString(v) && v.length > 0 && v.length <= 128, 'a queue name') as string;
  const scheme = field(
    where,
    object,
    'scheme',
    (v) => v === 'github' || v === 'hmac-sha256',
    '"github" or "hmac-sha256"',
  ) as SignatureScheme;
  const secret = secretOf(where, object, env);
  const header = (name: string) =>
    field(where, object, name, (v) => isString(v) && HEADER_NAME.test(v), 'an HTTP header name', false) as string | undefined;
  const defaults = SCHEME_HEADERS[scheme];
  const contentTypes = field(
    where,
    object,
    'contentTypes',
    (v) => Array.isArray(v) && v.length > 0 && v.every((t) => isString(t) && MEDIA_TYPE.test(t.toLowerCase())),
    'a non-empty list of media types such as "application/json"',
    false,
  ) as string[] | undefined;
  const custom = {
    signatureHeader: header('signatureHeader'),
    deliveryHeader: header('deliveryHeader'),
    eventHeader: header('eventHeader'),
  };
  if (scheme === 'github' && Object.values(custom).some((v) => v !== undefined)) {
    throw new HooksConfigError(`${where}: the github scheme has GitHub's headers; custom headers are for hmac-sha256`);
  }
  return {
    name,
    queue,
    secret,
    scheme,
    signatureHeader: (custom.signatureHeader ?? defaults.signatureHeader).toLowerCase(),
    deliveryHeader: (custom.deliveryHeader ?? defaults.deliveryHeader).toLowerCase(),
    eventHeader: (custom.eventHeader ?? defaults.eventHeader)?.toLowerCase() ?? null,
    contentTypes: contentTypes ? [...new Set(contentTypes.map((t) => t.toLowerCase()))] : DEFAULT_CONTENT_TYPES,
  };
}

/** Parses the hooks file's JSON text; throws `HooksConfigError` naming what is wrong. */
export function parseHooksConfig(text: string, env: NodeJS.ProcessEnv): HooksConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new HooksConfigError(`is not JSON: ${(err as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new HooksConfigError('must be a JSON object');
  const object = raw as Fields;
  const unknown = Object.keys(object).find((k) => !['sources', 'webhooks', 'dedupeWindowSeconds', 'ackTimeoutMs'].includes(k));
  if (unknown) throw new HooksConfigError(`has an unknown field "${unknown}"`);
  const list = field('hooks', object, 'sources', Array.isArray, 'an array', false) as unknown[] | undefined;
  const sources = (list ?? []).map((s, i) => parseSource(s, i, env));
  const targets = ((field('hooks', object, 'webhooks', Array.isArray, 'an array', false) as unknown[] | undefined) ?? []).map((w, i) =>
    parseWebhook(w, i, env),
  );
  for (const [kind, list] of [
    ['source', sources],
    ['webhook', targets],
  ] as const) {
    const names = new Set<string>();
    for (const { name } of list) {
      if (names.has(name)) throw new HooksConfigError(`${kind} "${name}" is named twice`);
      names.add(name);
    }
  }
  const window = field(
    'hooks',
    object,
    'dedupeWindowSeconds',
    (v) => Number.isSafeInteger(v) && (v as number) >= 60,
    'an integer of at least 60',
    false,
  ) as number | undefined;
  const ack = field(
    'hooks',
    object,
    'ackTimeoutMs',
    (v) => Number.isSafeInteger(v) && (v as number) >= 100 && (v as number) <= 60_000,
    'an integer from 100 to 60000',
    false,
  ) as number | undefined;
  return {
    file: null,
    sources,
    webhooks: targets,
    dedupeWindowSeconds: window ?? NO_HOOKS.dedupeWindowSeconds,
    ackTimeoutMs: ack ?? NO_HOOKS.ackTimeoutMs,
  };
}

export function loadHooksFile(path: string, env: NodeJS.ProcessEnv): HooksConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new HooksConfigError(`cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return { ...parseHooksConfig(text, env), file: path };
}
