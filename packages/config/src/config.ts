import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from './errors.js';

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

  string(name: string, fallback: string, pattern?: RegExp): string {
    const raw = this.#env[name];
    if (raw === undefined || raw === '') return fallback;
    if (pattern && !pattern.test(raw)) {
      this.problems.push(`${name} must match ${pattern}, got ${JSON.stringify(raw)}`);
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
      this.problems.push(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
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
    this.problems.push(`${name} must be true or false (1/0, yes/no, on/off), got ${JSON.stringify(raw)}`);
    return fallback;
  }

  oneOf<T extends string>(name: string, fallback: T, values: readonly T[]): T {
    const raw = this.#env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!values.includes(raw as T)) {
      this.problems.push(`${name} must be one of ${values.join(', ')}, got ${JSON.stringify(raw)}`);
      return fallback;
    }
    return raw as T;
  }

  /** Adds a problem found by other means. */
  problem(message: string): void {
    this.problems.push(message);
  }

  /** Throws `ERR_CONFIG` listing every problem, if any. */
  done(): void {
    if (this.problems.length > 0) {
      throw new ConfigError('ERR_CONFIG', `Invalid configuration:\n- ${this.problems.join('\n- ')}`);
    }
  }
}

/** Settings the API and the worker share; they must agree across every process. */
export interface SharedConfig {
  redisUrl: string;
  /** BullMQ prefix, a Redis Cluster hash tag. */
  queuePrefix: string;
  /** How many BullMQ queues the runs are spread over (each under its own hash-tagged prefix). */
  queueShards: number;
  /** Where run workspaces live: storage shared by every worker host (and the API, for file downloads). */
  workspaceRoot: string;
  retentionSeconds: number;
  eventMaxLength: number;
  maxAttempts: number;
  backoffMs: number;
  allowReplay: boolean;
  /** Default clarify timeout (ms) when a run sets none. */
  clarifyTimeoutMs: number;
  /** pino level. */
  logLevel: LogLevel;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Reads the shared settings (see docs/operations.md for each variable). */
export function readSharedConfig(reader: EnvReader, cwd = process.cwd()): SharedConfig {
  const workspaceRoot = reader.string('TETHER_WORKSPACE_ROOT', '.tether/workspaces');
  return {
    redisUrl: reader.string('REDIS_URL', 'redis://127.0.0.1:6379', /^rediss?:\/\//),
    queuePrefix: reader.string('TETHER_QUEUE_PREFIX', '{tether}', /^[A-Za-z0-9_:{}.-]{1,64}$/),
    queueShards: reader.integer('TETHER_QUEUE_SHARDS', 1, 1, 64),
    workspaceRoot: isAbsolute(workspaceRoot) ? workspaceRoot : resolve(cwd, workspaceRoot),
    retentionSeconds: reader.integer('TETHER_RUN_RETENTION_S', 7 * 24 * 3600, 60, 365 * 24 * 3600),
    eventMaxLength: reader.integer('TETHER_EVENT_MAX_LEN', 10_000, 100, 1_000_000),
    maxAttempts: reader.integer('TETHER_MAX_ATTEMPTS', 3, 1, 100),
    backoffMs: reader.integer('TETHER_RETRY_BACKOFF_MS', 2_000, 1, 3_600_000),
    allowReplay: reader.boolean('TETHER_ALLOW_REPLAY', false),
    clarifyTimeoutMs: reader.integer('TETHER_CLARIFY_TIMEOUT_MS', 20_000, 1_000, 7 * 24 * 3600 * 1000),
    logLevel: reader.oneOf('LOG_LEVEL', 'info', LOG_LEVELS),
  };
}
