import { Redis, type RedisOptions } from 'ioredis';

/**
 * How a connection's commands behave while Redis is unreachable:
 * - `fail-fast`: the API's connections, on request paths;
 * - `wait`: the worker's connections (BullMQ's blocking connections need
 *   `maxRetriesPerRequest: null`).
 */
export type RedisMode = 'fail-fast' | 'wait';

export interface RedisConnectionOptions {
  /** `redis://` or `rediss://` URL. */
  url: string;
  /** The connection's name in `CLIENT LIST`. */
  name: string;
  mode: RedisMode;
}

/** The options of each mode; every Redis connection of Tether is made by {@link createRedisConnection}. */
export function redisOptions(mode: RedisMode, name: string): RedisOptions {
  if (mode === 'fail-fast') {
    // A command fails after a few reconnect attempts instead of hanging the request.
    return { connectionName: name, maxRetriesPerRequest: 2, connectTimeout: 5_000 };
  }
  return { connectionName: name, maxRetriesPerRequest: null };
}

/** A Redis connection with the options of its mode: the one place Tether's processes create one. */
export function createRedisConnection(options: RedisConnectionOptions): Redis {
  return new Redis(options.url, redisOptions(options.mode, options.name));
}
