import { join } from 'node:path';
import { TetherError } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { clusterStartNote, configReport, EnvReader, parseClusterNodes, readSharedConfig } from './config.js';
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

describe('the report of an invalid configuration', () => {
  it('names each bad variable once, with its value and every rule it breaks, secrets masked', () => {
    const env = {
      PORT: '99999',
      REDIS_URL: 'http://app:hunter2@redis:6379',
      TETHER_API_KEYS: 'acme:sk_0123456789',
      REDIS_CLUSTER_NODES: 'h1:7000,,h2',
      REDIS_PASSWORD: 'pw',
    };
    const reader = new EnvReader(env);
    reader.integer('PORT', 3000, 0, 65_535);
    // Read twice (the API's PORT and the public URL's default): listed once.
    reader.integer('PORT', 3000, 0, 65_535);
    reader.string('REDIS_URL', 'redis://', /^rediss?:\/\//, 'a redis:// or rediss:// URL');
    reader.problem('TETHER_API_KEYS entry 1 must be tenant:key');
    parseClusterNodes(env.REDIS_CLUSTER_NODES, (problem) => reader.problem(problem));
    reader.problem('REDIS_PASSWORD is wrong');
    reader.problem('something without a variable');
    const error = failure(() => reader.done());
    expect(error.report?.split('\n')).toEqual([
      'Invalid configuration: 6 settings are wrong.',
      '  PORT = "99999"',
      '      must be an integer from 0 to 65535',
      '  REDIS_URL = "http://app:****@redis:6379"',
      '      must be a redis:// or rediss:// URL',
      '  TETHER_API_KEYS = (secret, 18 characters)',
      '      entry 1 must be tenant:key',
      '  REDIS_CLUSTER_NODES = "h1:7000,,h2"',
      '      entry 2 is empty (expected host:port,host:port,...)',
      '      entry 3 must be host:port (an IPv6 host in brackets: [::1]:7000)',
      '  REDIS_PASSWORD = (secret, 2 characters)',
      '      is wrong',
      '  something without a variable',
      'Every variable, its default and its range: docs/operations.md. Nothing was started.',
    ]);
    // The error's message (for logs and tests) says the same, masked too.
    expect(error.message).not.toContain('hunter2');
    expect(error.message).toContain(
      'REDIS_URL must be a redis:// or rediss:// URL, got "http://app:****@redis:6379"',
    );
  });

  it('masks every key, token, secret and password, and passwords in URLs anywhere', () => {
    const env = {
      OPENAI_API_KEY: 'sk-1',
      TETHER_SESSION_TOKEN: 't',
      TETHER_TOKEN_SECRET: 's',
      TETHER_SECRETS_KEY: 'k',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://u:p@collector',
    };
    const report = configReport(
      [
        'OPENAI_API_KEY must be longer, got "sk-1"',
        'TETHER_SESSION_TOKEN is wrong',
        'TETHER_TOKEN_SECRET is wrong',
        'TETHER_SECRETS_KEY is wrong',
        'OTEL_EXPORTER_OTLP_ENDPOINT is wrong',
        'TETHER_MODEL / OPENAI_API_KEY: profile 0 is wrong',
      ],
      env,
    );
    expect(report).toContain('OPENAI_API_KEY = (secret, 4 characters)\n      must be longer\n');
    expect(report).toContain('TETHER_SESSION_TOKEN = (secret, 1 characters)');
    expect(report).toContain('TETHER_TOKEN_SECRET = (secret, 1 characters)');
    expect(report).toContain('TETHER_SECRETS_KEY = (secret, 1 characters)');
    expect(report).toContain('OTEL_EXPORTER_OTLP_ENDPOINT = "https://u:****@collector"');
    expect(report).toContain(
      '  TETHER_MODEL = (unset), OPENAI_API_KEY = (secret, 4 characters)\n      profile 0 is wrong\n',
    );
    expect(report).not.toContain('sk-1');
  });

  it('throws nothing while every value is valid', () => {
    const reader = new EnvReader({ PORT: '80' });
    reader.integer('PORT', 3000, 0, 65_535);
    expect(() => reader.done()).not.toThrow();
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
      sessionTtlSeconds: 2_592_000,
      eventMaxLength: 10_000,
      skillsMaxCount: 200,
      skillsMaxBytes: 52_428_800,
      maxAttempts: 3,
      backoffMs: 2_000,
      allowReplay: false,
      clarifyTimeoutMs: 600_000,
      memoryMaxEntries: 1_000,
      memoryMaxBytes: 262_144,
      mcpAllowHttp: false,
      mcpAllowPrivate: false,
      mcpServers: {},
      mcpMaxServers: 20,
      logLevel: 'info',
      metricsTenantLabel: false,
      publicUrl: 'http://127.0.0.1:3000',
      tenantBudgets: {},
      schedule: { maxSchedules: 100, minIntervalMs: 60_000, catchUpGraceMs: 60_000 },
      webhook: {
        maxEndpoints: 20,
        backoffMs: 1_000,
        backoffMaxMs: 3_600_000,
        maxAgeMs: 86_400_000,
        disableAfterMs: 259_200_000,
        logMax: 1_000,
        retentionSeconds: 259_200,
        allowHttp: false,
        allowPrivate: false,
      },
    });
  });

  it('takes TETHER_PUBLIC_URL without its trailing slash (default: the local API at PORT), and refuses one with a query or credentials', () => {
    expect(sharedOf({ PORT: '8080' }).config.publicUrl).toBe('http://127.0.0.1:8080');
    expect(sharedOf({ TETHER_PUBLIC_URL: 'https://tether.example.com/api/' }).config.publicUrl).toBe(
      'https://tether.example.com/api',
    );
    for (const bad of [
      'tether.example.com',
      'ftp://x.example',
      'https://x.example/?a=1',
      'https://u:p@x.example',
    ]) {
      expect(sharedOf({ TETHER_PUBLIC_URL: bad }).problems).toEqual([
        expect.stringContaining('TETHER_PUBLIC_URL must be an http(s) URL'),
      ]);
    }
  });

  it('reads the tenant label switch and the OTLP endpoint (set: traces on), refusing an endpoint that is no URL', () => {
    expect(sharedOf({ TETHER_METRICS_TENANT_LABEL: '1' }).config.metricsTenantLabel).toBe(true);
    expect(sharedOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).config.otlpEndpoint).toBe(
      'http://collector:4318',
    );
    expect(sharedOf({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }).config.otlpEndpoint).toBeUndefined();
    expect(sharedOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }).problems).toEqual([
      'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, got "collector:4318"',
    ]);
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

function sharedOf(env: Record<string, string>) {
  const reader = new EnvReader(env);
  const config = readSharedConfig(reader, '/srv');
  return { config, problems: reader.problems };
}

describe('TETHER_TENANT_BUDGETS', () => {
  it("reads each tenant's budgets", () => {
    const reader = new EnvReader({
      TETHER_TENANT_BUDGETS: JSON.stringify({ acme: { day: { tokens: 1_000 }, month: { usd: 2.5 } } }),
    });
    const config = readSharedConfig(reader);
    reader.done();
    expect(config.tenantBudgets).toEqual({ acme: { day: { tokens: 1_000 }, month: { usd: 2.5 } } });
  });

  it.each([
    ['{', 'TETHER_TENANT_BUDGETS is not JSON'],
    ['[]', 'TETHER_TENANT_BUDGETS must be a JSON object of budgets by tenant'],
    ['{"a b": {"day": {"tokens": 1}}}', 'TETHER_TENANT_BUDGETS.a b: a tenant is 1 to 64'],
    ['{"acme": {}}', 'TETHER_TENANT_BUDGETS.acme must be an object with "day" and/or "month"'],
    [
      '{"acme": {"week": {"tokens": 1}}}',
      'TETHER_TENANT_BUDGETS.acme.week: unknown period (known: day, month)',
    ],
    ['{"acme": {"day": {}}}', 'TETHER_TENANT_BUDGETS.acme.day must be an object with "tokens" and/or "usd"'],
    ['{"acme": {"day": {"tokens": 0}}}', 'TETHER_TENANT_BUDGETS.acme.day.tokens: must be an integer from 1'],
    [
      '{"acme": {"day": {"tokens": 1.5}}}',
      'TETHER_TENANT_BUDGETS.acme.day.tokens: must be an integer from 1',
    ],
    [
      '{"acme": {"month": {"usd": -1}}}',
      'TETHER_TENANT_BUDGETS.acme.month.usd: must be a number of US dollars',
    ],
    [
      '{"acme": {"month": {"usd": "5"}}}',
      'TETHER_TENANT_BUDGETS.acme.month.usd: must be a number of US dollars',
    ],
    [
      '{"acme": {"month": {"eur": 5}}}',
      'TETHER_TENANT_BUDGETS.acme.month.eur: unknown limit (known: tokens, usd)',
    ],
  ])('refuses %s at start, naming the tenant and the field', (raw, message) => {
    const error = failure(() => {
      const reader = new EnvReader({ TETHER_TENANT_BUDGETS: raw });
      readSharedConfig(reader);
      reader.done();
    });
    expect(error.message).toContain(message);
  });
});

describe('REDIS_CLUSTER_NODES and REDIS_PASSWORD', () => {
  it('one server by default: REDIS_URL, no cluster, no password', () => {
    const { config, problems } = sharedOf({});
    expect(problems).toEqual([]);
    expect(config).toMatchObject({
      redisUrl: 'redis://127.0.0.1:6379',
      redisClusterNodes: undefined,
      redisPassword: undefined,
    });
    expect(clusterStartNote(config)).toBeUndefined();
  });

  it('a cluster from its seed nodes, with the password; REDIS_URL is then ignored (not even checked)', () => {
    const { config, problems } = sharedOf({
      REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis-2.internal:7001 ,[::1]:7002',
      REDIS_PASSWORD: 's3cret',
      REDIS_URL: 'not a url',
    });
    expect(problems).toEqual([]);
    expect(config.redisClusterNodes).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: 'redis-2.internal', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    expect(config.redisPassword).toBe('s3cret');
    expect(clusterStartNote(config)).toBe(
      'Redis Cluster through the seed nodes of REDIS_CLUSTER_NODES (10.0.0.1:7000, redis-2.internal:7001, [::1]:7002); REDIS_URL is ignored',
    );
  });

  it('an empty REDIS_CLUSTER_NODES is unset', () => {
    expect(sharedOf({ REDIS_CLUSTER_NODES: '  ' }).config.redisClusterNodes).toBeUndefined();
  });

  it('names each bad entry by position and what is wrong with it', () => {
    const problems: string[] = [];
    const nodes = parseClusterNodes(
      'h1:7000,,h2,h3:0,h4:65536,h1:7000,-bad:1,h5:70a,[::1]7000,h6:7001',
      (problem) => problems.push(problem),
    );
    expect(nodes).toEqual([
      { host: 'h1', port: 7000 },
      { host: 'h6', port: 7001 },
    ]);
    expect(problems).toEqual([
      'REDIS_CLUSTER_NODES entry 2 is empty (expected host:port,host:port,...)',
      'REDIS_CLUSTER_NODES entry 3 must be host:port (an IPv6 host in brackets: [::1]:7000), got "h2"',
      'REDIS_CLUSTER_NODES entry 4 ("h3:0"): the port must be from 1 to 65535',
      'REDIS_CLUSTER_NODES entry 5 ("h4:65536"): the port must be from 1 to 65535',
      'REDIS_CLUSTER_NODES entry 6 ("h1:7000") is listed twice',
      'REDIS_CLUSTER_NODES entry 7 must be host:port (an IPv6 host in brackets: [::1]:7000), got "-bad:1"',
      'REDIS_CLUSTER_NODES entry 8 must be host:port (an IPv6 host in brackets: [::1]:7000), got "h5:70a"',
      'REDIS_CLUSTER_NODES entry 9 must be host:port (an IPv6 host in brackets: [::1]:7000), got "[::1]7000"',
    ]);
  });

  it('on a cluster, a queue prefix without a hash tag is refused, unless the queue is sharded', () => {
    for (const prefix of ['tether', 'te{}ther', 'tether}{x']) {
      expect(sharedOf({ REDIS_CLUSTER_NODES: 'h:7000', TETHER_QUEUE_PREFIX: prefix }).problems).toEqual([
        `TETHER_QUEUE_PREFIX must hold a Redis Cluster hash tag ({…}, as the default {tether}) when REDIS_CLUSTER_NODES is set: BullMQ's scripts use several keys of the queue at once, got ${JSON.stringify(prefix)}`,
      ]);
    }
    expect(sharedOf({ REDIS_CLUSTER_NODES: 'h:7000', TETHER_QUEUE_PREFIX: 'app:{q}' }).problems).toEqual([]);
    expect(
      sharedOf({ REDIS_CLUSTER_NODES: 'h:7000', TETHER_QUEUE_PREFIX: 'tether', TETHER_QUEUE_SHARDS: '3' })
        .problems,
    ).toEqual([]);
    expect(sharedOf({ TETHER_QUEUE_PREFIX: 'tether' }).problems).toEqual([]);
  });

  it('a bad list makes the whole configuration refused, naming the variable', () => {
    const reader = new EnvReader({ REDIS_CLUSTER_NODES: 'localhost' });
    readSharedConfig(reader);
    expect(() => reader.done()).toThrow(/REDIS_CLUSTER_NODES entry 1 must be host:port/);
  });
});
