import { describe, expect, it } from 'vitest';
import { deriveTokenSecret, loadApiConfig, parseApiKeys, unauthenticatedWarning } from './config.js';
import { tenantOfKey } from './plugins/auth.js';

function keys(raw: string) {
  const problems: string[] = [];
  return { keys: parseApiKeys(raw, (problem) => problems.push(problem)), problems };
}

describe('parseApiKeys', () => {
  it('reads tenant:key pairs and the JSON form alike', () => {
    const pairs = keys('acme:sk_live_abc123, beta:sk_xyz_45678');
    const json = keys('{"sk_live_abc123":"acme","sk_xyz_45678":"beta"}');
    expect(pairs.problems).toEqual([]);
    expect(json.problems).toEqual([]);
    expect(pairs.keys.map((key) => key.tenant)).toEqual(['acme', 'beta']);
    expect(tenantOfKey(pairs.keys, 'sk_xyz_45678')).toBe('beta');
    expect(tenantOfKey(json.keys, 'sk_live_abc123')).toBe('acme');
    expect(tenantOfKey(json.keys, 'sk_live_abc12')).toBeUndefined();
  });

  it('keeps only hashes, and never names a key in a problem', () => {
    const { keys: parsed, problems } = keys(
      'acme:short,:sk_nobody_1234,bad tenant:sk_long_enough,acme:sk_dup_12345,beta:sk_dup_12345',
    );
    expect(parsed.map((key) => key.tenant)).toEqual(['acme']);
    expect(problems).toHaveLength(4);
    for (const problem of problems) {
      expect(problem).not.toContain('short');
      expect(problem).not.toContain('sk_');
    }
    expect(JSON.stringify(parsed)).not.toContain('sk_dup_12345');
  });

  it('refuses JSON that is not an object of strings', () => {
    expect(keys('{"a":1}').problems).toHaveLength(1);
    expect(keys('{not json').problems).toHaveLength(1);
  });
});

describe('loadApiConfig', () => {
  it('binds to loopback whatever HOST says when no keys are configured', () => {
    const open = loadApiConfig({ HOST: '0.0.0.0' });
    expect(open.host).toBe('127.0.0.1');
    expect(unauthenticatedWarning(open)).toContain('HOST=0.0.0.0 ignored');
    expect(loadApiConfig({ HOST: '0.0.0.0', TETHER_API_KEYS: 'acme:sk_live_abc123' }).host).toBe('0.0.0.0');
  });

  it('derives the token secret from the keys, the same in every instance, unless one is given', () => {
    const env = { TETHER_API_KEYS: 'acme:sk_live_abc123,beta:sk_xyz_45678' };
    const a = loadApiConfig(env);
    const b = loadApiConfig({ TETHER_API_KEYS: 'beta:sk_xyz_45678,acme:sk_live_abc123' });
    expect(a.tokenSecret.equals(b.tokenSecret)).toBe(true);
    expect(a.tokenSecret.equals(deriveTokenSecret([]))).toBe(false);
    const given = loadApiConfig({ ...env, TETHER_TOKEN_SECRET: 'a-long-enough-secret' });
    expect(given.tokenSecretDerived).toBe(false);
    expect(given.tokenSecret.equals(a.tokenSecret)).toBe(false);
  });

  it('names every bad variable in one error', () => {
    let message = '';
    let code = '';
    try {
      loadApiConfig({
        PORT: 'eighty',
        TETHER_BODY_LIMIT: '1',
        TETHER_API_KEYS: 'nope',
        TETHER_TOKEN_SECRET: 'short',
      });
    } catch (error) {
      message = (error as Error).message;
      code = (error as { code?: string }).code ?? '';
    }
    // A bad key is the configuration's error, not the queue's.
    expect(code).toBe('ERR_CONFIG');
    for (const name of ['PORT', 'TETHER_BODY_LIMIT', 'TETHER_API_KEYS', 'TETHER_TOKEN_SECRET']) {
      expect(message).toContain(name);
    }
  });

  it('has the documented defaults', () => {
    const config = loadApiConfig({});
    expect(config).toMatchObject({
      port: 3000,
      bodyLimit: 1_048_576,
      jsonMaxDepth: 64,
      tokenTtlSeconds: 3_600,
      rateLimitMax: 600,
      rateLimitWindowMs: 60_000,
      authFailLimit: 30,
      authFailWindowMs: 60_000,
      sseMaxPerTenant: 100,
      sseHeartbeatMs: 15_000,
      sseMaxBufferBytes: 1_048_576,
      wsMaxFrameBytes: 262_144,
      wsMaxPerTenant: 200,
      wsHeartbeatMs: 30_000,
      wsMaxFramesPerSecond: 50,
    });
  });
});
