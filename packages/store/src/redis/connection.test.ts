import { describe, expect, it } from 'vitest';
import {
  clusterOptions,
  isRedisConnectionError,
  RECONNECT_MAX_DELAY_MS,
  reconnectDelay,
  redisOptions,
} from './connection.js';

describe('reconnectDelay', () => {
  it('starts at 50 ms, doubles, and never waits more than 500 ms, jitter included', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => reconnectDelay(attempt, () => 0))).toEqual([
      50, 100, 200, 400, 400,
    ]);
    for (let attempt = 1; attempt < 1_000; attempt++) {
      expect(reconnectDelay(attempt, () => 0.999_999)).toBeLessThanOrEqual(RECONNECT_MAX_DELAY_MS);
    }
    expect(RECONNECT_MAX_DELAY_MS).toBe(500);
  });
});

describe('redisOptions', () => {
  it('fail-fast: no offline queue, no retry of a command, a command timeout, quick reconnects', () => {
    const options = redisOptions('fail-fast', 'tether-api:a');
    expect(options).toMatchObject({
      connectionName: 'tether-api:a',
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 2_000,
      connectTimeout: 2_000,
      maxLoadingRetryTime: 100,
    });
    expect(options.retryStrategy?.(50)).toBeLessThanOrEqual(500);
  });

  it('wait: commands wait for Redis (BullMQ workers need maxRetriesPerRequest null), quick reconnects', () => {
    const options = redisOptions('wait', 'tether-worker:w');
    expect(options).toMatchObject({
      connectionName: 'tether-worker:w',
      maxRetriesPerRequest: null,
      maxLoadingRetryTime: 100,
    });
    expect(options.enableOfflineQueue).toBeUndefined();
    expect(options.commandTimeout).toBeUndefined();
    expect(options.retryStrategy?.(50)).toBeLessThanOrEqual(500);
  });
});

describe('clusterOptions', () => {
  it("fail-fast: no offline queue, no retry after a node's connection closed or a CLUSTERDOWN, no ready check of its own; each node fails fast", () => {
    const options = clusterOptions('fail-fast', 'tether-api:a', 'secret');
    expect(options).toMatchObject({
      enableOfflineQueue: false,
      enableReadyCheck: false,
      retryDelayOnFailover: 0,
      retryDelayOnClusterDown: 0,
      redisOptions: {
        connectionName: 'tether-api:a',
        password: 'secret',
        maxRetriesPerRequest: 0,
        commandTimeout: 2_000,
        connectTimeout: 2_000,
      },
    });
    // ioredis takes these at the top level only (it refuses them in redisOptions).
    expect(options.redisOptions).not.toHaveProperty('retryStrategy');
    expect(options.redisOptions).not.toHaveProperty('enableOfflineQueue');
    expect(options.clusterRetryStrategy?.(50)).toBeLessThanOrEqual(500);
    expect(options.clusterNodeRetryStrategy?.(50)).toBeLessThanOrEqual(500);
  });

  it('wait: commands wait for their node, or for the cluster to be ok again, without a limit; BullMQ gets maxRetriesPerRequest null', () => {
    const options = clusterOptions('wait', 'tether-worker:w');
    expect(options).toMatchObject({
      enableOfflineQueue: true,
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      retryDelayOnMoved: 10,
      maxRedirections: Number.POSITIVE_INFINITY,
      redisOptions: { connectionName: 'tether-worker:w', maxRetriesPerRequest: null },
    });
    expect(options.redisOptions).not.toHaveProperty('password');
    expect(options.clusterNodeRetryStrategy?.(3)).toBeLessThanOrEqual(500);
  });
});

describe('isRedisConnectionError', () => {
  const named = (name: string, message: string) => Object.assign(new Error(message), { name });
  const coded = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:6379`), { code });

  it.each([
    ['offline, no queue', new Error("Stream isn't writeable and enableOfflineQueue options is false")],
    ['closed', new Error('Connection is closed.')],
    ['timed out', new Error('Command timed out')],
    [
      'flushed at a reconnect',
      named('MaxRetriesPerRequestError', 'Reached the max retries per request limit'),
    ],
    ['BullMQ closed', named('ConnectionClosedError', 'Connection is closed.')],
    ['refused', coded('ECONNREFUSED')],
    ['reset', coded('ECONNRESET')],
    ['cluster not ready', new Error("Cluster isn't ready and enableOfflineQueue options is false")],
    ['cluster: no seed answers', new Error('None of startup nodes is available')],
    ['cluster: a master is missing', new Error('CLUSTERDOWN The cluster is down')],
    [
      'cluster: redirected while a node was down',
      new Error('Too many Cluster redirections. Last error: Error: Connection is closed.'),
    ],
    ['cluster: slot map unreadable', named('ClusterAllFailedError', 'Failed to refresh slots cache.')],
  ])('%s: unreachable', (_name, error) => {
    expect(isRedisConnectionError(error)).toBe(true);
  });

  it.each([
    ['a script error', new Error('ERR Error running script (call to f_1234): wrong number of arguments')],
    ['wrong type', new Error('WRONGTYPE Operation against a key holding the wrong kind of value')],
    ['cross slot', new Error("CROSSSLOT Keys in request don't hash to the same slot")],
    ['not an error', 'Connection is closed.'],
  ])('%s: not', (_name, error) => {
    expect(isRedisConnectionError(error)).toBe(false);
  });
});
