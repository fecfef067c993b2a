import { type Cluster, Redis, type RedisOptions } from 'ioredis';

/**
 * A connection as Tether's code takes it: one Redis server, or ioredis's
 * client of a Redis Cluster. Both run the same commands, pipelines and
 * scripts; on a cluster each command, pipeline and script must keep to one
 * hash slot (see keys.ts).
 */
export type RedisClient = Redis | Cluster;

/**
 * How a connection's commands behave while Redis is unreachable:
 * - `fail-fast` (the API, on request paths): no offline queue, so a command
 *   sent while the connection is down fails at once; one sent just before it
 *   went down fails as soon as ioredis notices (`maxRetriesPerRequest: 0`);
 *   one left unanswered (a Redis that hangs) fails after
 *   {@link COMMAND_TIMEOUT_MS}.
 * - `wait` (the worker): commands wait for Redis to come back and are sent
 *   then, so an attempt in flight pauses at its next save and goes on.
 *   BullMQ's blocking connections need this (`maxRetriesPerRequest: null`).
 */
export type RedisMode = 'fail-fast' | 'wait';

export interface RedisConnectionOptions {
  /** `redis://` or `rediss://` URL. */
  url: string;
  /** The connection's name in `CLIENT LIST`. */
  name: string;
  mode: RedisMode;
  /**
   * Told of each of the connection's `error` events (ioredis reports every
   * failed reconnect attempt). Required: without a listener ioredis prints
   * `[ioredis] Unhandled error event` and a stack at every attempt.
   */
  onError: (error: Error) => void;
}

/** The longest wait between two reconnect attempts (ms): Redis is used again within this of its return. */
export const RECONNECT_MAX_DELAY_MS = 500;
/** How long a `fail-fast` command may go unanswered (ms). */
export const COMMAND_TIMEOUT_MS = 2_000;
/** How long one connection attempt may take (ms): a host that does not answer is tried again after this. */
export const CONNECT_TIMEOUT_MS = 2_000;
/** How often a connection asks a Redis that is loading its data whether it is done (ms). */
export const LOADING_RETRY_MS = 100;

/**
 * The wait before reconnect attempt `attempt` (1-based): 50, 100, 200 ms and
 * then 400 ms, each plus up to 100 ms of jitter (so that many processes do not
 * reconnect in step), never more than {@link RECONNECT_MAX_DELAY_MS}.
 */
export function reconnectDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(50 * 2 ** Math.max(0, attempt - 1), RECONNECT_MAX_DELAY_MS - 100);
  return base + Math.floor(random() * 100);
}

/** The options of each mode; every Redis connection of Tether is made by {@link createRedisConnection}. */
export function redisOptions(mode: RedisMode, name: string): RedisOptions {
  const common: RedisOptions = {
    connectionName: name,
    retryStrategy: (attempt) => reconnectDelay(attempt),
    connectTimeout: CONNECT_TIMEOUT_MS,
    // A Redis that restarts answers "loading" while it reads its data back: ioredis would check
    // again after the server's estimate (1 s at least), so a connection would lag that long.
    maxLoadingRetryTime: LOADING_RETRY_MS,
  };
  if (mode === 'fail-fast') {
    return {
      ...common,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
    };
  }
  return { ...common, maxRetriesPerRequest: null };
}

/**
 * A Redis connection with the options of its mode and an `error` listener:
 * the one place Tether's processes create one. ioredis keeps reconnecting on
 * its own; a {@link RedisBreaker} tells when it is back.
 */
export function createRedisConnection(options: RedisConnectionOptions): Redis {
  const connection = new Redis(options.url, redisOptions(options.mode, options.name));
  connection.on('error', options.onError);
  return connection;
}

const CONNECTION_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * Whether an error says Redis could not be reached (rather than that it
 * refused a command): a request that failed with it may succeed later.
 */
export function isRedisConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'ConnectionClosedError') return true;
  if ('code' in error && CONNECTION_ERROR_CODES.has(String(error.code))) return true;
  return /^(Connection is closed|Stream isn't writeable|Command timed out)/.test(error.message);
}
