import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { describeProfile, type ModelProfile, parseModelProfiles, profilesFromEnv } from './model-profiles.js';

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
    ['a provider it does not know', [{ ...local, provider: 'gemini' }], /provider: .*\(got "gemini"\)/],
    [
      'a temperature on an Anthropic profile',
      [{ name: 'claude', provider: 'anthropic', apiKey: 'sk-ant-1', temperature: 0.2 }],
      /profile 0 \("claude"\): temperature is for OpenAI-compatible profiles/,
    ],
    ['a base URL that is not http(s)', [{ ...local, baseURL: 'file:///etc/passwd' }], /baseURL: /],
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

  it("gives a profile without a base URL or a model its provider's, and asks an unknown server for its models", () => {
    const profiles = parseModelProfiles([
      { name: 'claude', provider: 'anthropic', apiKey: 'sk-ant-1' },
      { name: 'gpt', provider: 'openai', apiKey: 'sk-1' },
      { name: 'deepseek', provider: 'openai', baseURL: 'https://api.deepseek.com/v1', apiKey: 'sk-2' },
      { name: 'qwen', provider: 'openai', baseURL: 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1' },
      { name: 'vllm', provider: 'openai', baseURL: 'http://vllm:8000/v1' },
    ]);
    expect(profiles.map((p) => [p.name, p.baseURL, p.model])).toEqual([
      ['claude', 'https://api.anthropic.com', 'claude-sonnet-5-5'],
      ['gpt', 'https://api.openai.com/v1', 'gpt-5.4-mini'],
      ['deepseek', 'https://api.deepseek.com/v1', 'deepseek-chat'],
      ['qwen', 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1', 'qwen-plus'],
      ['vllm', 'http://vllm:8000/v1', undefined],
    ]);
    expect(profiles[4]).not.toHaveProperty('model');
  });

  it('refuses a context window or compaction threshold out of bounds, naming the field', () => {
    const parse = (extra: Record<string, unknown>) => () =>
      parseModelProfiles([{ name: 'p', provider: 'openai', model: 'm', ...extra }]);
    expect(parse({ contextWindow: 500 })).toThrow(/profile 0 \("p"\): contextWindow: .*1000/);
    expect(parse({ compactAt: 1 })).toThrow(/compactAt: .*0.95/);
    expect(parse({ contextWindow: 8_000, compactAt: 0.5 })()).toMatchObject([
      { contextWindow: 8_000, compactAt: 0.5 },
    ]);
  });

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
    [
      'a provider choice it does not know',
      { OPENAI_API_KEY: 'sk-1', TETHER_MODEL_PROVIDER: 'gemini' },
      /TETHER_MODEL_PROVIDER must be one of openai, anthropic \(got "gemini"\)/,
    ],
    [
      'a provider choice without its variables',
      { OPENAI_API_KEY: 'sk-1', TETHER_MODEL_PROVIDER: 'anthropic' },
      /TETHER_MODEL_PROVIDER is anthropic, but neither ANTHROPIC_API_KEY nor ANTHROPIC_BASE_URL is set/,
    ],
    [
      'a bad Anthropic base URL',
      { ANTHROPIC_API_KEY: 'sk-ant-secret', ANTHROPIC_BASE_URL: 'api.anthropic.com' },
      /ANTHROPIC_BASE_URL.*baseURL/,
    ],
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
      expect(error.message).not.toMatch(/secret/);
    });
  }
});

describe('profilesFromEnv: one key is enough', () => {
  const defaultOf = (env: Record<string, string>) => {
    const { profiles, defaultProfile } = profilesFromEnv(env);
    expect(defaultProfile).toBe('default');
    return profiles.find((profile) => profile.name === 'default');
  };

  it("builds OpenAI's default profile from OPENAI_API_KEY alone, with OpenAI's default model", () => {
    expect(defaultOf({ OPENAI_API_KEY: 'sk-1' })).toEqual({
      name: 'default',
      provider: 'openai',
      baseURL: 'https://api.openai.com/v1',
      apiKey: 'sk-1',
      model: 'gpt-5.4-mini',
      timeoutMs: 120_000,
      maxRetries: 4,
    });
  });

  it("builds Anthropic's from ANTHROPIC_API_KEY alone (and ANTHROPIC_BASE_URL), with Anthropic's default model", () => {
    expect(defaultOf({ ANTHROPIC_API_KEY: 'sk-ant-1' })).toEqual({
      name: 'default',
      provider: 'anthropic',
      baseURL: 'https://api.anthropic.com',
      apiKey: 'sk-ant-1',
      model: 'claude-sonnet-5-5',
      timeoutMs: 120_000,
      maxRetries: 4,
    });
    expect(
      defaultOf({ ANTHROPIC_API_KEY: 'sk-ant-1', ANTHROPIC_BASE_URL: 'http://127.0.0.1:8080' }),
    ).toMatchObject({
      provider: 'anthropic',
      baseURL: 'http://127.0.0.1:8080',
    });
  });

  it('takes the model of an OpenAI-compatible server from its host, or leaves it to the server to list', () => {
    expect(defaultOf({ OPENAI_API_KEY: 'sk-1', OPENAI_BASE_URL: 'https://api.deepseek.com' })?.model).toBe(
      'deepseek-chat',
    );
    const ollama = defaultOf({ OPENAI_BASE_URL: 'http://localhost:11434/v1' });
    expect(ollama).toMatchObject({ provider: 'openai', baseURL: 'http://localhost:11434/v1' });
    expect(ollama).not.toHaveProperty('model');
    expect(ollama).not.toHaveProperty('apiKey');
  });

  it('lets TETHER_MODEL choose the model of either provider', () => {
    expect(defaultOf({ OPENAI_BASE_URL: 'http://localhost:11434/v1', TETHER_MODEL: 'qwen3' })?.model).toBe(
      'qwen3',
    );
    expect(defaultOf({ ANTHROPIC_API_KEY: 'sk-ant-1', TETHER_MODEL: 'claude-haiku-5-5' })?.model).toBe(
      'claude-haiku-5-5',
    );
  });

  it('prefers OpenAI when both keys are set, unless TETHER_MODEL_PROVIDER chooses', () => {
    const both = { OPENAI_API_KEY: 'sk-1', ANTHROPIC_API_KEY: 'sk-ant-1' };
    expect(defaultOf(both)?.provider).toBe('openai');
    expect(defaultOf({ ...both, TETHER_MODEL_PROVIDER: 'anthropic' })).toMatchObject({
      provider: 'anthropic',
      apiKey: 'sk-ant-1',
    });
    expect(defaultOf({ ...both, TETHER_MODEL_PROVIDER: 'openai' })?.provider).toBe('openai');
  });
});

describe('describeProfile', () => {
  it('names the profile, provider, model and server, never the key or a password in the URL', () => {
    const [claude, vllm] = parseModelProfiles([
      { name: 'default', provider: 'anthropic', apiKey: 'sk-ant-secret' },
      { name: 'vllm', provider: 'openai', baseURL: 'http://user:hunter2@vllm:8000/v1/', apiKey: 'sk-secret' },
    ]);
    expect(describeProfile(claude as ModelProfile)).toBe(
      '"default": anthropic, claude-sonnet-5-5 at https://api.anthropic.com',
    );
    expect(describeProfile(vllm as ModelProfile)).toBe(
      '"vllm": openai, the first model the server lists (TETHER_MODEL to choose) at http://vllm:8000/v1',
    );
  });
});
