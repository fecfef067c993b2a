import { join } from 'node:path';
import { TetherError } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { EnvReader, readSharedConfig } from './config.js';
import { ConfigError } from './errors.js';

function failure(run: () => void): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('EnvReader', () => {
  it('returns the fallback for a missing or empty variable, and the value otherwise', () => {
    const reader = new EnvReader({ EMPTY: '', NAME: 'x', COUNT: '7', FLAG: 'yes', LEVEL: 'debug' });
    expect(reader.string('MISSING', 'fb')).toBe('fb');
    expect(reader.string('EMPTY', 'fb')).toBe('fb');
    expect(reader.string('NAME', 'fb')).toBe('x');
    expect(reader.optional('EMPTY')).toBeUndefined();
    expect(reader.optional('NAME')).toBe('x');
    expect(reader.integer('COUNT', 1, 0, 10)).toBe(7);
    expect(reader.boolean('FLAG', false)).toBe(true);
    expect(reader.oneOf('LEVEL', 'info', ['info', 'debug'] as const)).toBe('debug');
    expect(reader.problems).toEqual([]);
    expect(() => reader.done()).not.toThrow();
  });

  it('throws one ERR_CONFIG naming every bad variable and its bound', () => {
    const reader = new EnvReader({
      URL: 'http://x',
      COUNT: '11',
      FRACTION: '1.5',
      FLAG: 'maybe',
      LEVEL: 'loud',
    });
    reader.string('URL', 'redis://', /^rediss?:\/\//);
    reader.integer('COUNT', 1, 0, 10);
    reader.integer('FRACTION', 1, 0, 10);
    reader.boolean('FLAG', false);
    reader.oneOf('LEVEL', 'info', ['info', 'debug'] as const);
    reader.problem('OTHER is wrong');
    const error = failure(() => reader.done());
    expect(error).toBeInstanceOf(TetherError);
    expect(error.code).toBe('ERR_CONFIG');
    expect(error.statusCode).toBe(500);
    expect(error.message.split('\n')).toEqual([
      'Invalid configuration:',
      '- URL must match /^rediss?:\\/\\//, got "http://x"',
      '- COUNT must be an integer from 0 to 10, got "11"',
      '- FRACTION must be an integer from 0 to 10, got "1.5"',
      '- FLAG must be true or false (1/0, yes/no, on/off), got "maybe"',
      '- LEVEL must be one of info, debug, got "loud"',
      '- OTHER is wrong',
    ]);
  });
});

describe('readSharedConfig', () => {
  it('has the documented defaults, the workspace root resolved against the given directory', () => {
    const reader = new EnvReader({});
    const config = readSharedConfig(reader, '/srv/tether');
    reader.done();
    expect(config).toEqual({
      redisUrl: 'redis://127.0.0.1:6379',
      queuePrefix: '{tether}',
      queueShards: 1,
      workspaceRoot: join('/srv/tether', '.tether/workspaces'),
      retentionSeconds: 604_800,
      eventMaxLength: 10_000,
      maxAttempts: 3,
      backoffMs: 2_000,
      allowReplay: false,
      clarifyTimeoutMs: 20_000,
      logLevel: 'info',
    });
  });

  it('keeps an absolute workspace root and refuses a bad Redis URL and prefix', () => {
    const reader = new EnvReader({
      TETHER_WORKSPACE_ROOT: '/data/ws',
      REDIS_URL: 'localhost:6379',
      TETHER_QUEUE_PREFIX: 'has space',
    });
    const config = readSharedConfig(reader, '/srv/tether');
    expect(config.workspaceRoot).toBe('/data/ws');
    const error = failure(() => reader.done());
    expect(error.message).toContain('REDIS_URL');
    expect(error.message).toContain('TETHER_QUEUE_PREFIX');
  });
});
