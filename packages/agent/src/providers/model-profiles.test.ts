import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { parseModelProfiles, profilesFromEnv } from './model-profiles.js';

const local = {
  name: 'local',
  provider: 'openai',
  baseURL: 'http://127.0.0.1:11434/v1',
  model: 'qwen2.5-coder',
};

function failure(action: () => unknown): AgentError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(AgentError);
    return error as AgentError;
  }
  throw new Error('expected a throw');
}

describe('parseModelProfiles', () => {
  it('applies the defaults and freezes the result', () => {
    const profiles = parseModelProfiles([
      local,
      { ...local, name: 'fast', timeoutMs: 30_000, maxRetries: 0 },
    ]);
    expect(profiles).toEqual([
      { ...local, timeoutMs: 120_000, maxRetries: 4 },
      { ...local, name: 'fast', timeoutMs: 30_000, maxRetries: 0 },
    ]);
    expect(Object.isFrozen(profiles)).toBe(true);
    expect(Object.isFrozen(profiles[0])).toBe(true);
  });

  it('does not change its input', () => {
    const input = [{ ...local }];
    parseModelProfiles(input);
    expect(input[0]).not.toHaveProperty('timeoutMs');
  });

  const cases: Array<[string, unknown, RegExp]> = [
    ['a non-array', local, /expected a JSON array/],
    [
      'a timeout below its bound',
      [{ ...local, timeoutMs: 5 }],
      /profile 0 \("local"\): timeoutMs: .*greater or equal to 1000 \(got 5\)/,
    ],
    ['too many retries', [{ ...local, maxRetries: 99 }], /maxRetries: .*less or equal to 20 \(got 99\)/],
    [
      'a temperature out of range',
      [{ ...local, temperature: 2.5 }],
      /temperature: .*less or equal to 2 \(got 2.5\)/,
    ],
    ['a provider other than openai', [{ ...local, provider: 'anthropic' }], /provider: Expected 'openai'/],
    ['a base URL that is not http(s)', [{ ...local, baseURL: 'file:///etc/passwd' }], /baseURL: /],
    [
      'a missing model',
      [{ name: 'x', provider: 'openai', baseURL: 'http://h/v1' }],
      /model: Expected required property$/,
    ],
    ['an unknown field', [{ ...local, headers: {} }], /headers: Unexpected property/],
    ['a name with spaces', [{ ...local, name: 'my model' }], /profile 0 \("my model"\): name: /],
    ['a duplicate name', [local, local], /profile 1 \("local"\): the name "local" is used twice/],
    ['a profile that is not an object', [local, 'gpt-4o'], /profile 1: expected an object/],
  ];
  for (const [label, input, message] of cases) {
    it(`refuses ${label}, naming the profile, field and bound`, () => {
      const error = failure(() => parseModelProfiles(input));
      expect(error.code).toBe('ERR_MODEL_PROFILE_INVALID');
      expect(error.message).toMatch(message);
    });
  }

  it('never echoes an API key', () => {
    const error = failure(() => parseModelProfiles([{ ...local, apiKey: 12345678 }]));
    expect(error.message).toMatch(/apiKey/);
    expect(error.message).not.toMatch(/12345678/);
  });
});

describe('profilesFromEnv', () => {
  it('has no profiles in an empty environment', () => {
    expect(profilesFromEnv({})).toEqual({ profiles: [], defaultProfile: undefined });
  });

  it('builds the default profile from TETHER_MODEL and the OPENAI_* variables', () => {
    expect(
      profilesFromEnv({ TETHER_MODEL: 'gpt-4.1-mini', OPENAI_API_KEY: 'sk-1', OPENAI_BASE_URL: '' }),
    ).toEqual({
      profiles: [
        {
          name: 'default',
          provider: 'openai',
          baseURL: 'https://api.openai.com/v1',
          apiKey: 'sk-1',
          model: 'gpt-4.1-mini',
          timeoutMs: 120_000,
          maxRetries: 4,
        },
      ],
      defaultProfile: 'default',
    });
    const [profile] = profilesFromEnv({
      TETHER_MODEL: 'llama3',
      OPENAI_BASE_URL: 'http://ollama:11434/v1',
    }).profiles;
    expect(profile).toMatchObject({ baseURL: 'http://ollama:11434/v1', model: 'llama3' });
    expect(profile).not.toHaveProperty('apiKey');
  });

  it('adds TETHER_MODEL_PROFILES, and the first of them is the default when nothing else is', () => {
    const env = {
      TETHER_MODEL_PROFILES: JSON.stringify([local, { ...local, name: 'big', model: 'qwen3-coder' }]),
    };
    expect(profilesFromEnv(env).defaultProfile).toBe('local');
    expect(profilesFromEnv({ ...env, TETHER_MODEL: 'gpt-4.1' }).profiles.map((p) => p.name)).toEqual([
      'local',
      'big',
      'default',
    ]);
    expect(profilesFromEnv({ ...env, TETHER_MODEL: 'gpt-4.1' }).defaultProfile).toBe('default');
    expect(profilesFromEnv({ ...env, TETHER_DEFAULT_MODEL_PROFILE: 'big' }).defaultProfile).toBe('big');
  });

  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['unparsable JSON', { TETHER_MODEL_PROFILES: '[{' }, /TETHER_MODEL_PROFILES is not valid JSON/],
    [
      'an invalid listed profile',
      { TETHER_MODEL_PROFILES: JSON.stringify([{ ...local, maxRetries: -1 }]) },
      /TETHER_MODEL_PROFILES: profile 0 \("local"\): maxRetries/,
    ],
    ['a key without a model', { OPENAI_API_KEY: 'sk-1' }, /TETHER_MODEL is not/],
    [
      'a listed profile that takes the default name',
      { TETHER_MODEL: 'm', TETHER_MODEL_PROFILES: JSON.stringify([{ ...local, name: 'default' }]) },
      /already has one/,
    ],
    [
      'a default that is not a profile',
      { TETHER_MODEL: 'm', TETHER_DEFAULT_MODEL_PROFILE: 'nope' },
      /"nope".*known: default/,
    ],
    ['a bad base URL', { TETHER_MODEL: 'm', OPENAI_BASE_URL: 'localhost:8000' }, /OPENAI_BASE_URL.*baseURL/],
  ];
  for (const [label, env, message] of cases) {
    it(`refuses ${label}`, () => {
      const error = failure(() => profilesFromEnv(env));
      expect(error.code).toBe('ERR_MODEL_PROFILE_INVALID');
      expect(error.message).toMatch(message);
    });
  }
});
