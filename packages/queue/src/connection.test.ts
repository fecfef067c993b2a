import { describe, expect, it } from 'vitest';
import {
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
  ])('%s: unreachable', (_name, error) => {
    expect(isRedisConnectionError(error)).toBe(true);
  });

  it.each([
    ['a script error', new Error('ERR Error running script (call to f_1234): wrong number of arguments')],
    ['wrong type', new Error('WRONGTYPE Operation against a key holding the wrong kind of value')],
    ['not an error', 'Connection is closed.'],
  ])('%s: not', (_name, error) => {
    expect(isRedisConnectionError(error)).toBe(false);
  });
});
