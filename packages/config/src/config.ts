import { isAbsolute, resolve } from 'node:path';
import {
  MCP_LIMITS,
  SCHEDULE_DEFAULTS,
  SKILL_DEFAULTS,
  type StdioServerConfig,
  type TenantBudgets,
  WEBHOOK_DEFAULTS,
  type WebhookSettings,
} from '@tether/protocol';
import { ConfigError } from './errors.js';
import { readMcpServersFile } from './mcp-servers.js';
import { parseTenantBudgets } from './tenant-budgets.js';

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads typed settings from an environment object, collecting every problem
 * so one error names them all. The apps' `config.ts` files are the only
 * callers that pass `process.env`.
 */
export class EnvReader {
  readonly #env: Env;
  readonly problems: string[] = [];

  constructor(env: Env) {
    this.#env = env;
  }

  /** `what`: what a value must be, in words, for the problem (else the pattern is shown). */
  string(name: string, fallback: string, pattern?: RegExp, what?: string): string {
    const raw = this.#env[name];
    if (raw === undefined || raw === '') return fallback;
    if (pattern && !pattern.test(raw)) {
      this.problem(`${name} must ${what ? `be ${what}` : `match ${pattern}`}, got ${shownValue(name, raw)}`);
      return fallback;
    }
    return raw;
  }

  optional(name: string): string | undefined {
    const raw = this.#env[name];
    return raw === undefined || raw === '' ? undefined : raw;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.#env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
      this.problem(`${name} must be an integer from ${min} to ${max}, got ${shownValue(name, raw)}`);
      return fallback;
    }
    return value;
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.#env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = raw.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(value)) return true;
    if (['0', 'false', 'no', 'off'].includes(value)) return false;
    this.problem(`${name} must be true or false (1/0, yes/no, on/off), got ${shownValue(name, raw)}`);
    return fallback;
  }

  oneOf<T extends string>(name: string, fallback: T, values: readonly T[]): T {
    const raw = this.#env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!values.includes(raw as T)) {
      this.problem(`${name} must be one of ${values.join(', ')}, got ${shownValue(name, raw)}`);
      return fallback;
    }
    return raw as T;
  }

  /**
   * Adds a problem found by other means: a sentence that starts with the
   * variable's name. A password in a URL is masked; a problem already listed
   * (a variable read twice) is not listed again.
   */
  problem(message: string): void {
    const masked = maskUrlPasswords(message);
    if (!this.problems.includes(masked)) this.problems.push(masked);
  }

  /**
   * Throws `ERR_CONFIG` listing every problem, if any. Its `report` is the
   * block an entry point prints (see `loadOrExit`): each bad variable once,
   * with its value (secrets masked) and what it must be.
   */
  done(): void {
    if (this.problems.length > 0) {
      throw new ConfigError('ERR_CONFIG', `Invalid configuration:\n- ${this.problems.join('\n- ')}`, {
        report: configReport(this.problems, this.#env),
      });
    }
  }
}

/** Variables whose values are never shown: keys, tokens, secrets and passwords. */
const SECRET_NAME = /_KEYS?$|_TOKEN$|_SECRET|PASSWORD/;

/** A variable's value as a problem shows it: JSON-quoted, a secret's masked, a URL's password masked. */
export function shownValue(name: string, raw: string): string {
  if (SECRET_NAME.test(name)) return `(secret, ${raw.length} characters)`;
  return JSON.stringify(maskUrlPasswords(raw));
}

/** `redis://user:pw@host` → `redis://user:****@host`, anywhere in a text. */
function maskUrlPasswords(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@"]*:)[^\s@/"]+@/gi, '$1****@');
}

/** The leading variable name of a problem (or names, `A / B`, for a setting read from several), and the rest of it. */
const PROBLEM = /^([A-Z][A-Z0-9_]*[A-Z0-9](?: \/ [A-Z][A-Z0-9_]*[A-Z0-9])*)\b:? ?(.*)$/s;

/**
 * The block an invalid configuration prints: every bad variable once, its
 * value as given (secrets masked) and each thing wrong with it, which names
 * the valid range. Problems that name no variable come last, as they are.
 */
export function configReport(problems: readonly string[], env: Env): string {
  const byName = new Map<string, string[]>();
  const other: string[] = [];
  for (const problem of problems) {
    const match = PROBLEM.exec(problem);
    if (!match) {
      other.push(problem);
      continue;
    }
    const [, name = '', rest = ''] = match;
    // The value is shown once, above: a rule's own "got …" would repeat it.
    const rule = rest.replace(/,? \(?got (?:"(?:[^"\\]|\\.)*"|\(secret, \d+ characters\))\)?$/, '');
    byName.set(name, [...(byName.get(name) ?? []), rule]);
  }
  const count = byName.size + other.length;
  const lines = [`Invalid configuration: ${count === 1 ? '1 setting is' : `${count} settings are`} wrong.`];
  for (const [names, rules] of byName) {
    const values = names.split(' / ').map((name) => {
      const raw = env[name];
      return `${name} = ${raw === undefined ? '(unset)' : shownValue(name, raw)}`;
    });
    lines.push(`  ${values.join(', ')}`);
    for (const rule of rules) lines.push(`      ${rule}`);
  }
  for (const problem of other) lines.push(`  ${problem}`);
  lines.push('Every variable, its default and its range: docs/operations.md. Nothing was started.');
  return lines.join('\n');
}

/** A Redis Cluster node, as `REDIS_CLUSTER_NODES` lists it. */
export interface RedisNodeAddress {
  host: string;
  port: number;
}

/** Settings the API and the worker share; they must agree across every process. */
export interface SharedConfig {
  /** `REDIS_URL`: one Redis server; unused when `redisClusterNodes` is set. */
  redisUrl: string;
  /**
   * `REDIS_CLUSTER_NODES`: seed nodes of a Redis Cluster. When set, every
   * connection (BullMQ's included) is ioredis's Cluster client and `REDIS_URL`
   * is ignored.
   */
  redisClusterNodes: readonly RedisNodeAddress[] | undefined;
  /** `REDIS_PASSWORD`: every cluster node's password, or the server's when `REDIS_URL` has none. */
  redisPassword: string | undefined;
  /** BullMQ prefix, a Redis Cluster hash tag. */
  queuePrefix: string;
  /** How many BullMQ queues the runs are spread over (each under its own hash-tagged prefix). */
  queueShards: number;
  /** Where run workspaces live: storage shared by every worker host (and the API, for file downloads). */
  workspaceRoot: string;
  retentionSeconds: number;
  /** How long a session lives after its last activity (a run added or ended), in seconds. */
  sessionTtlSeconds: number;
  eventMaxLength: number;
  /** Skills a tenant may have (`TETHER_SKILLS_MAX_COUNT`): the API's PUT and the agent's skill_manage check it. */
  skillsMaxCount: number;
  /** Bytes of every file of every skill of a tenant (`TETHER_SKILLS_MAX_BYTES`). */
  skillsMaxBytes: number;
  maxAttempts: number;
  backoffMs: number;
  allowReplay: boolean;
  /** Default clarify timeout (ms) when a run sets none. */
  clarifyTimeoutMs: number;
  /** The most entries one memory scope holds (`TETHER_MEMORY_MAX_ENTRIES`). */
  memoryMaxEntries: number;
  /** The most bytes of entries (stored JSON) one memory scope holds (`TETHER_MEMORY_MAX_BYTES`). */
  memoryMaxBytes: number;
  /** `TETHER_MCP_ALLOW_HTTP`: remote MCP servers may be `http://` (else https only). */
  mcpAllowHttp: boolean;
  /** `TETHER_MCP_ALLOW_PRIVATE`: remote MCP servers may be at loopback, private or link-local addresses (tests). */
  mcpAllowPrivate: boolean;
  /** The operator's stdio MCP servers by name (`TETHER_MCP_SERVERS`, a JSON file); none when unset. */
  mcpServers: Readonly<Record<string, StdioServerConfig>>;
  /** MCP servers a tenant may register (`TETHER_MCP_MAX_SERVERS`). */
  mcpMaxServers: number;
  /** pino level. */
  logLevel: LogLevel;
  /** `TETHER_METRICS_TENANT_LABEL=1`: per-run metrics carry a `tenant` label (unbounded with many tenants: off by default). */
  metricsTenantLabel: boolean;
  /**
   * `OTEL_EXPORTER_OTLP_ENDPOINT`: where traces go (OTLP). Set, the process
   * starts the OpenTelemetry SDK (which reads its other `OTEL_*` variables
   * itself); unset, no SDK is loaded and nothing is traced.
   */
  otlpEndpoint: string | undefined;
  /**
   * `TETHER_PUBLIC_URL`: the API's base URL as the world reaches it, for the links Tether sends out
   * (a `clarify.requested` webhook's `answer.url`). Default `http://127.0.0.1:<PORT>`, for development.
   */
  publicUrl: string;
  /** Webhooks (`TETHER_WEBHOOK_*`). */
  webhook: WebhookConfig;
  /** Schedules (`TETHER_TENANT_MAX_SCHEDULES`, `TETHER_SCHEDULE_*`). */
  schedule: ScheduleConfig;
  /**
   * The operator's budgets per tenant (`TETHER_TENANT_BUDGETS`, JSON): in force for a tenant that
   * set none of its own with `PUT /v1/budgets` (its own replace them as a whole).
   */
  tenantBudgets: Readonly<Record<string, TenantBudgets>>;
}

/** The schedule settings the API and the workers share (docs/operations.md). */
export interface ScheduleConfig {
  /** `TETHER_TENANT_MAX_SCHEDULES`: schedules one tenant may have. */
  maxSchedules: number;
  /** `TETHER_SCHEDULE_MIN_INTERVAL_MS`: the shortest time between two ticks of a schedule. */
  minIntervalMs: number;
  /** `TETHER_SCHEDULE_CATCH_UP_GRACE_MS`: how late a tick of a `catchUp: "none"` schedule may fire. */
  catchUpGraceMs: number;
}

/** The webhook settings the API and the workers share (docs/operations.md), and what URLs an endpoint may have. */
export interface WebhookConfig extends WebhookSettings {
  /** `TETHER_WEBHOOK_ALLOW_HTTP`: http URLs are accepted too. */
  allowHttp: boolean;
  /** `TETHER_WEBHOOK_ALLOW_PRIVATE`: loopback, private and link-local addresses too (tests); never metadata addresses. */
  allowPrivate: boolean;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Reads the shared settings (see docs/operations.md for each variable). */
export function readSharedConfig(reader: EnvReader, cwd = process.cwd()): SharedConfig {
  const workspaceRoot = reader.string('TETHER_WORKSPACE_ROOT', '.tether/workspaces');
  const redisClusterNodes = parseClusterNodes(reader.optional('REDIS_CLUSTER_NODES'), (problem) =>
    reader.problem(problem),
  );
  const defaultUrl = 'redis://127.0.0.1:6379';
  const queuePrefix = reader.string(
    'TETHER_QUEUE_PREFIX',
    '{tether}',
    /^[A-Za-z0-9_:{}.-]{1,64}$/,
    '1 to 64 letters, digits, _ : { } . or -',
  );
  const queueShards = reader.integer('TETHER_QUEUE_SHARDS', 1, 1, 64);
  // Several shards get tags of their own ({tether:0} …); one queue has the prefix's.
  if (redisClusterNodes && queueShards === 1 && !hasHashTag(queuePrefix)) {
    reader.problem(
      `TETHER_QUEUE_PREFIX must hold a Redis Cluster hash tag ({…}, as the default {tether}) when REDIS_CLUSTER_NODES is set: BullMQ's scripts use several keys of the queue at once, got ${JSON.stringify(queuePrefix)}`,
    );
  }
  return {
    // Ignored, so not checked, when a cluster is given.
    redisUrl: redisClusterNodes
      ? (reader.optional('REDIS_URL') ?? defaultUrl)
      : reader.string('REDIS_URL', defaultUrl, /^rediss?:\/\//, 'a redis:// or rediss:// URL'),
    redisClusterNodes,
    redisPassword: reader.optional('REDIS_PASSWORD'),
    queuePrefix,
    queueShards,
    workspaceRoot: isAbsolute(workspaceRoot) ? workspaceRoot : resolve(cwd, workspaceRoot),
    retentionSeconds: reader.integer('TETHER_RUN_RETENTION_S', 7 * 24 * 3600, 60, 365 * 24 * 3600),
    sessionTtlSeconds: reader.integer('TETHER_SESSION_TTL_S', 30 * 24 * 3600, 60, 365 * 24 * 3600),
    eventMaxLength: reader.integer('TETHER_EVENT_MAX_LEN', 10_000, 100, 1_000_000),
    skillsMaxCount: reader.integer('TETHER_SKILLS_MAX_COUNT', SKILL_DEFAULTS.maxCount, 1, 10_000),
    skillsMaxBytes: reader.integer('TETHER_SKILLS_MAX_BYTES', SKILL_DEFAULTS.maxBytes, 1_024, 1_073_741_824),
    maxAttempts: reader.integer('TETHER_MAX_ATTEMPTS', 3, 1, 100),
    backoffMs: reader.integer('TETHER_RETRY_BACKOFF_MS', 2_000, 1, 3_600_000),
    allowReplay: reader.boolean('TETHER_ALLOW_REPLAY', false),
    clarifyTimeoutMs: reader.integer('TETHER_CLARIFY_TIMEOUT_MS', 600_000, 1_000, 7 * 24 * 3600 * 1000),
    memoryMaxEntries: reader.integer('TETHER_MEMORY_MAX_ENTRIES', 1_000, 1, 100_000),
    memoryMaxBytes: reader.integer('TETHER_MEMORY_MAX_BYTES', 256 * 1024, 4_096, 64 * 1024 * 1024),
    mcpAllowHttp: reader.boolean('TETHER_MCP_ALLOW_HTTP', false),
    mcpAllowPrivate: reader.boolean('TETHER_MCP_ALLOW_PRIVATE', false),
    mcpServers: readOperatorMcpServers(reader, cwd),
    mcpMaxServers: reader.integer('TETHER_MCP_MAX_SERVERS', MCP_LIMITS.tenantServersDefault, 0, 1_000),
    logLevel: reader.oneOf('LOG_LEVEL', 'info', LOG_LEVELS),
    metricsTenantLabel: reader.boolean('TETHER_METRICS_TENANT_LABEL', false),
    otlpEndpoint: readOtlpEndpoint(reader),
    publicUrl: readPublicUrl(reader),
    tenantBudgets: parseTenantBudgets(reader.optional('TETHER_TENANT_BUDGETS'), (problem) =>
      reader.problem(problem),
    ),
    schedule: {
      maxSchedules: reader.integer('TETHER_TENANT_MAX_SCHEDULES', SCHEDULE_DEFAULTS.maxSchedules, 1, 10_000),
      minIntervalMs: reader.integer(
        'TETHER_SCHEDULE_MIN_INTERVAL_MS',
        SCHEDULE_DEFAULTS.minIntervalMs,
        1_000,
        86_400_000,
      ),
      catchUpGraceMs: reader.integer(
        'TETHER_SCHEDULE_CATCH_UP_GRACE_MS',
        SCHEDULE_DEFAULTS.catchUpGraceMs,
        1_000,
        86_400_000,
      ),
    },
    webhook: {
      maxEndpoints: reader.integer('TETHER_WEBHOOK_MAX_ENDPOINTS', WEBHOOK_DEFAULTS.maxEndpoints, 1, 1_000),
      backoffMs: reader.integer('TETHER_WEBHOOK_BACKOFF_MS', WEBHOOK_DEFAULTS.backoffMs, 1, 3_600_000),
      backoffMaxMs: reader.integer(
        'TETHER_WEBHOOK_BACKOFF_MAX_MS',
        WEBHOOK_DEFAULTS.backoffMaxMs,
        1,
        86_400_000,
      ),
      maxAgeMs: reader.integer(
        'TETHER_WEBHOOK_MAX_AGE_MS',
        WEBHOOK_DEFAULTS.maxAgeMs,
        1_000,
        30 * 86_400_000,
      ),
      disableAfterMs: reader.integer(
        'TETHER_WEBHOOK_DISABLE_AFTER_MS',
        WEBHOOK_DEFAULTS.disableAfterMs,
        1_000,
        365 * 86_400_000,
      ),
      logMax: reader.integer('TETHER_WEBHOOK_LOG_MAX', WEBHOOK_DEFAULTS.logMax, 1, 100_000),
      retentionSeconds: reader.integer(
        'TETHER_WEBHOOK_RETENTION_S',
        WEBHOOK_DEFAULTS.retentionSeconds,
        60,
        365 * 86_400,
      ),
      allowHttp: reader.boolean('TETHER_WEBHOOK_ALLOW_HTTP', false),
      allowPrivate: reader.boolean('TETHER_WEBHOOK_ALLOW_PRIVATE', false),
    },
  };
}

/** `TETHER_MCP_SERVERS`: the path of the operator's stdio servers file (relative to `cwd`), read now. */
function readOperatorMcpServers(reader: EnvReader, cwd: string): Readonly<Record<string, StdioServerConfig>> {
  const file = reader.optional('TETHER_MCP_SERVERS');
  if (file === undefined) return Object.freeze({});
  const servers = readMcpServersFile(isAbsolute(file) ? file : resolve(cwd, file), (problem) =>
    reader.problem(problem),
  );
  return Object.freeze(servers);
}

/** `TETHER_PUBLIC_URL`: an http(s) URL with no query or fragment; default the local API's (`PORT`). */
function readPublicUrl(reader: EnvReader): string {
  const port = reader.integer('PORT', 3000, 0, 65_535);
  const raw = reader.optional('TETHER_PUBLIC_URL');
  if (raw === undefined) return `http://127.0.0.1:${port}`;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || url.search || url.hash || url.username || url.password) {
    reader.problem(
      `TETHER_PUBLIC_URL must be an http(s) URL with no credentials, query or fragment (the API's base, e.g. https://tether.example.com), got ${JSON.stringify(raw)}`,
    );
    return `http://127.0.0.1:${port}`;
  }
  return url.href.replace(/\/+$/, '');
}

/** `OTEL_EXPORTER_OTLP_ENDPOINT`, an http(s) URL, or undefined when unset or empty. */
function readOtlpEndpoint(reader: EnvReader): string | undefined {
  const raw = reader.optional('OTEL_EXPORTER_OTLP_ENDPOINT')?.trim();
  if (!raw) return undefined;
  if (!/^https?:\/\/[^\s/]/.test(raw)) {
    reader.problem(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, got ${JSON.stringify(raw)}`);
    return undefined;
  }
  return raw;
}

/** Whether a key holds a Redis Cluster hash tag: its first `{` and the next `}`, not empty between. */
function hasHashTag(key: string): boolean {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1;
}

/** A host name, an IPv4 address, or an IPv6 address in brackets; then a port. */
const NODE = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)):(\d+)$/;

/**
 * Parses `REDIS_CLUSTER_NODES`: comma-separated `host:port` seeds
 * (`10.0.0.1:7000,10.0.0.2:7000`, `[::1]:7000` for IPv6). Undefined when
 * unset or empty; each bad entry is a `problem` naming it by position.
 */
export function parseClusterNodes(
  raw: string | undefined,
  problem: (message: string) => void,
): RedisNodeAddress[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const nodes: RedisNodeAddress[] = [];
  const seen = new Set<string>();
  for (const [index, part] of raw.split(',').entries()) {
    const entry = part.trim();
    const where = `REDIS_CLUSTER_NODES entry ${index + 1}`;
    if (entry === '') {
      problem(`${where} is empty (expected host:port,host:port,...)`);
      continue;
    }
    const match = NODE.exec(entry);
    if (!match) {
      problem(
        `${where} must be host:port (an IPv6 host in brackets: [::1]:7000), got ${JSON.stringify(entry)}`,
      );
      continue;
    }
    const port = Number(match[3]);
    if (!Number.isInteger(port) || port < 1 || port > 65_535) {
      problem(`${where} (${JSON.stringify(entry)}): the port must be from 1 to 65535`);
      continue;
    }
    const host = (match[1] ?? match[2]) as string;
    const key = `${host.toLowerCase()}:${port}`;
    if (seen.has(key)) {
      problem(`${where} (${JSON.stringify(entry)}) is listed twice`);
      continue;
    }
    seen.add(key);
    nodes.push({ host, port });
  }
  return nodes.length > 0 ? nodes : undefined;
}

/**
 * What the apps say at start about where Redis is, when it is a cluster:
 * its seed nodes, and that `REDIS_URL` is ignored. Undefined for one server.
 */
export function clusterStartNote(config: Pick<SharedConfig, 'redisClusterNodes'>): string | undefined {
  const nodes = config.redisClusterNodes;
  if (!nodes) return undefined;
  const list = nodes.map(({ host, port }) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`));
  return `Redis Cluster through the seed nodes of REDIS_CLUSTER_NODES (${list.join(', ')}); REDIS_URL is ignored`;
}
