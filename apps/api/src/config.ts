import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { type ModelProfile, readProfilesFromEnv } from '@tether/agent/spec';
import {
  type Env,
  EnvReader,
  readSecrets,
  readSharedConfig,
  type SecretBox,
  type SharedConfig,
} from '@tether/config';

/** A configured API key: only its SHA-256 is kept, never the key itself. */
export interface ApiKey {
  tenant: string;
  /** sha256 of the key. */
  hash: Buffer;
}

/** Everything the API reads from its environment, parsed once and frozen. */
export interface ApiConfig extends SharedConfig {
  /** The address the server binds to; always loopback when no API keys are configured. */
  host: string;
  /** `HOST` as given, if given (reported when it is overridden). */
  requestedHost: string | undefined;
  port: number;
  /** Bearer keys → tenants. Empty: no authentication, every caller is tenant `default`. */
  apiKeys: readonly ApiKey[];
  /** HMAC key of the run-scoped read tokens (`?token=` on the events route). */
  tokenSecret: Buffer;
  /** Whether `tokenSecret` was derived from the API keys (no `TETHER_TOKEN_SECRET`). */
  tokenSecretDerived: boolean;
  tokenTtlSeconds: number;
  /** Largest request body, in bytes. */
  bodyLimit: number;
  /** How deep a JSON body may nest arrays and objects. */
  jsonMaxDepth: number;
  /** How long a client may take to send a whole request (ms). */
  requestTimeoutMs: number;
  rateLimitMax: number;
  rateLimitWindowMs: number;
  /** How often each instance adds its request counts to the shared ones in Redis (ms). */
  rateLimitSyncMs: number;
  /** Failed authentications per client address per window before they are answered 429. */
  authFailLimit: number;
  authFailWindowMs: number;
  /** Concurrent SSE streams per tenant, per API process. */
  sseMaxPerTenant: number;
  sseHeartbeatMs: number;
  /** A stream whose unsent bytes exceed this is dropped (the client reconnects with `Last-Event-ID`). */
  sseMaxBufferBytes: number;
  /** Largest WebSocket frame a client may send, in bytes (bigger: closed with 1009). */
  wsMaxFrameBytes: number;
  /** Open WebSockets per tenant, per API process (more: closed with 1013). */
  wsMaxPerTenant: number;
  /** How often each WebSocket is pinged; one that has not answered the previous ping is cut (ms). */
  wsHeartbeatMs: number;
  /** Frames a WebSocket may send within one second (more: closed with 1008). */
  wsMaxFramesPerSecond: number;
  /** On SIGTERM: how long open requests get before the process exits anyway (ms). */
  shutdownTimeoutMs: number;
  /** Names this process's Redis connections (`CLIENT LIST`): `tether-api:<instanceId>`. */
  instanceId: string;
  /** Trust `X-Forwarded-*` from a proxy in front (for the client address in logs). */
  trustProxy: boolean;
  profiles: readonly ModelProfile[];
  defaultProfile: string | undefined;
  /** Seals secrets at rest (`TETHER_SECRETS_KEY`): MCP server headers, webhook signing secrets. Undefined: features that store a secret answer 503. */
  secrets: SecretBox | undefined;
  /** The built console (`index.html` and `assets/`), served at `/console/`. */
  consoleDir: string;
  /**
   * Origins whose browser pages may call the API (`TETHER_CORS_ORIGINS`): exact origins, or `['*']`
   * for any (then without credentials). Empty: no CORS headers at all.
   */
  corsOrigins: readonly string[];
}

/** Where `pnpm build` puts the console: apps/console/dist, beside this app (from src/ or dist/ alike). */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../console/dist/', import.meta.url));

/** Tenant names go into Redis keys inside a hash tag, and into read tokens: letters, digits, `_` and `-`. */
const TENANT = /^[A-Za-z0-9_-]{1,64}$/;
/** Keys are bearer tokens: printable ASCII without spaces or commas (the list syntax). */
const KEY = /^[\x21-\x7e]{8,512}$/;

/** The tenant of every request when no API keys are configured. */
export const DEFAULT_TENANT = 'default';

/**
 * Parses `TETHER_API_KEYS`: comma-separated `tenant:key` pairs
 * (`acme:sk_live_abc,beta:sk_xyz`) or a JSON object `{ "<key>": "<tenant>" }`.
 * Problems name the entry by position, never by its key.
 */
export function parseApiKeys(raw: string | undefined, problem: (message: string) => void): ApiKey[] {
  if (raw === undefined || raw.trim() === '') return [];
  const pairs: [tenant: string, key: string][] = [];
  const text = raw.trim();
  if (text.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      problem('TETHER_API_KEYS is not valid JSON (expected {"<key>":"<tenant>"} or tenant:key,tenant:key)');
      return [];
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      problem('TETHER_API_KEYS must be a JSON object {"<key>":"<tenant>"}');
      return [];
    }
    for (const [key, tenant] of Object.entries(parsed)) {
      if (typeof tenant !== 'string') {
        problem(`TETHER_API_KEYS entry ${pairs.length + 1}: the tenant must be a string`);
        continue;
      }
      pairs.push([tenant, key]);
    }
  } else {
    for (const [index, entry] of text.split(',').entries()) {
      const trimmed = entry.trim();
      const colon = trimmed.indexOf(':');
      if (colon <= 0) {
        problem(`TETHER_API_KEYS entry ${index + 1} must be tenant:key`);
        continue;
      }
      pairs.push([trimmed.slice(0, colon), trimmed.slice(colon + 1)]);
    }
  }
  const keys: ApiKey[] = [];
  const seen = new Set<string>();
  for (const [index, [tenant, key]] of pairs.entries()) {
    if (!TENANT.test(tenant)) {
      problem(
        `TETHER_API_KEYS entry ${index + 1}: tenant ${JSON.stringify(tenant)} must be 1 to 64 letters, digits, _ or -`,
      );
      continue;
    }
    if (!KEY.test(key) || key.includes(',')) {
      problem(
        `TETHER_API_KEYS entry ${index + 1} (tenant ${tenant}): the key must be 8 to 512 printable characters without spaces or commas`,
      );
      continue;
    }
    const hash = sha256(key);
    const hex = hash.toString('hex');
    if (seen.has(hex)) {
      problem(`TETHER_API_KEYS entry ${index + 1} (tenant ${tenant}): the same key is listed twice`);
      continue;
    }
    seen.add(hex);
    keys.push({ tenant, hash });
  }
  return keys;
}

/**
 * Parses `TETHER_CORS_ORIGINS`: a comma-separated list of exact origins
 * (`https://app.example.com,http://localhost:5173`), or `*` alone for any
 * origin. Each entry must be an http(s) origin as a browser sends it in
 * `Origin`: `scheme://host[:port]`, lower case, no default port, no path (not
 * even `/`), query or credentials; a problem names the entry and, when the
 * URL parses, the origin it should have been.
 */
export function parseCorsOrigins(raw: string | undefined, problem: (message: string) => void): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  const entries = raw.split(',').map((entry) => entry.trim());
  if (entries.includes('*')) {
    if (entries.length > 1) problem('TETHER_CORS_ORIGINS: * allows every origin and must stand alone');
    return ['*'];
  }
  const origins: string[] = [];
  for (const [index, entry] of entries.entries()) {
    const where = `TETHER_CORS_ORIGINS entry ${index + 1} (${JSON.stringify(entry)})`;
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      problem(`${where} must be an origin scheme://host[:port] with scheme http or https`);
    } else if (url.origin !== entry) {
      problem(
        `${where} must be an origin scheme://host[:port] as browsers send it, without a path, query or default port: ${url.origin}`,
      );
    } else if (!origins.includes(entry)) origins.push(entry);
  }
  return origins;
}

/**
 * The read-token key when `TETHER_TOKEN_SECRET` is not set: a hash of the
 * configured keys, so every API instance with the same keys issues and accepts
 * the same tokens. Changing the keys invalidates outstanding tokens.
 */
export function deriveTokenSecret(keys: readonly ApiKey[]): Buffer {
  const hashes = keys.map((key) => `${key.tenant}:${key.hash.toString('hex')}`).sort();
  return sha256(`tether-read-token\n${hashes.join('\n')}`);
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Parses the API's configuration; throws one error naming every bad variable. */
export function loadApiConfig(env: Env = process.env): Readonly<ApiConfig> {
  const reader = new EnvReader(env);
  const shared = readSharedConfig(reader);
  const { profiles, defaultProfile } = readProfilesFromEnv(env, (problem) => reader.problem(problem));
  const apiKeys = parseApiKeys(reader.optional('TETHER_API_KEYS'), (message) => reader.problem(message));
  const secret = reader.optional('TETHER_TOKEN_SECRET');
  if (secret !== undefined && secret.length < 16) {
    reader.problem('TETHER_TOKEN_SECRET must be at least 16 characters');
  }
  const requestedHost = reader.optional('HOST');
  const config: ApiConfig = {
    ...shared,
    // Without keys anyone who can connect is trusted: only this machine can.
    host: apiKeys.length === 0 ? '127.0.0.1' : (requestedHost ?? '0.0.0.0'),
    requestedHost,
    port: reader.integer('PORT', 3000, 0, 65_535),
    apiKeys,
    tokenSecret: secret === undefined ? deriveTokenSecret(apiKeys) : sha256(secret),
    tokenSecretDerived: secret === undefined,
    tokenTtlSeconds: reader.integer('TETHER_TOKEN_TTL_S', 3_600, 10, 7 * 24 * 3_600),
    bodyLimit: reader.integer('TETHER_BODY_LIMIT', 1_048_576, 1_024, 100 * 1_048_576),
    // A replay script alone nests 7 deep; past ~1,000 what recurses over a body risks the stack.
    jsonMaxDepth: reader.integer('TETHER_JSON_MAX_DEPTH', 64, 16, 1_000),
    requestTimeoutMs: reader.integer('TETHER_REQUEST_TIMEOUT_MS', 30_000, 1_000, 600_000),
    rateLimitMax: reader.integer('TETHER_RATE_LIMIT_MAX', 600, 1, 1_000_000),
    rateLimitWindowMs: reader.integer('TETHER_RATE_LIMIT_WINDOW_MS', 60_000, 100, 3_600_000),
    rateLimitSyncMs: reader.integer('TETHER_RATE_LIMIT_SYNC_MS', 100, 1, 60_000),
    authFailLimit: reader.integer('TETHER_AUTH_FAIL_LIMIT', 30, 1, 1_000_000),
    authFailWindowMs: reader.integer('TETHER_AUTH_FAIL_WINDOW_MS', 60_000, 1_000, 3_600_000),
    sseMaxPerTenant: reader.integer('TETHER_SSE_MAX_PER_TENANT', 100, 1, 1_000_000),
    sseHeartbeatMs: reader.integer('TETHER_SSE_HEARTBEAT_MS', 15_000, 10, 600_000),
    sseMaxBufferBytes: reader.integer('TETHER_SSE_MAX_BUFFER_BYTES', 1_048_576, 1_024, 1_073_741_824),
    wsMaxFrameBytes: reader.integer('TETHER_WS_MAX_FRAME_BYTES', 262_144, 1_024, 16_777_216),
    wsMaxPerTenant: reader.integer('TETHER_WS_MAX_PER_TENANT', 200, 1, 1_000_000),
    wsHeartbeatMs: reader.integer('TETHER_WS_HEARTBEAT_MS', 30_000, 10, 600_000),
    wsMaxFramesPerSecond: reader.integer('TETHER_WS_MAX_FRAMES_PER_SECOND', 50, 1, 100_000),
    shutdownTimeoutMs: reader.integer('TETHER_SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    instanceId: reader.string(
      'TETHER_API_ID',
      `${hostname()}:${process.pid}`,
      /^[A-Za-z0-9_.:-]{1,100}$/,
      '1 to 100 letters, digits, _ . : or -',
    ),
    trustProxy: reader.boolean('TETHER_TRUST_PROXY', false),
    secrets: readSecrets(env, reader),
    profiles,
    defaultProfile,
    consoleDir: reader.string('TETHER_CONSOLE_DIR', DEFAULT_CONSOLE_DIR),
    corsOrigins: parseCorsOrigins(reader.optional('TETHER_CORS_ORIGINS'), (message) =>
      reader.problem(message),
    ),
  };
  reader.done();
  return Object.freeze(config);
}

/** What the server logs at start when it runs without keys (the bind address was forced to loopback). */
export function unauthenticatedWarning(config: Pick<ApiConfig, 'requestedHost'>): string {
  const given = config.requestedHost;
  const ignored = given === undefined || given === '127.0.0.1' ? '' : ` (HOST=${given} ignored)`;
  return `TETHER_API_KEYS is not set: no authentication, every caller is tenant "${DEFAULT_TENANT}"; listening on 127.0.0.1 only${ignored}`;
}
