import type { ModelSpec } from '@tether/protocol';
import { anthropicText, startFakeAnthropic, startFakeOpenAI, streamText } from '@tether/testing';
import { describe, expect, it } from 'vitest';
import { AgentError } from '../errors.js';
import { parseModelProfiles } from './model-profiles.js';
import { resolveProvider } from './resolve-provider.js';

const profiles = parseModelProfiles([
  { name: 'local', provider: 'openai', baseURL: 'http://127.0.0.1:1/v1', model: 'qwen' },
  { name: 'cloud', provider: 'openai', baseURL: 'https://api.example.com/v1', model: 'gpt', apiKey: 'sk-x' },
]);

function failure(spec: unknown, options: Partial<Parameters<typeof resolveProvider>[1]> = {}): AgentError {
  try {
    resolveProvider(spec as ModelSpec, { profiles, allowReplay: false, ...options });
  } catch (error) {
    expect(error).toBeInstanceOf(AgentError);
    return error as AgentError;
  }
  throw new Error('expected a throw');
}

describe('resolveProvider', () => {
  it("gives the provider its profile's context window, its model family's, or the smallest of a fallback chain", () => {
    const own = parseModelProfiles([
      { name: 'set', provider: 'openai', model: 'local-7b', contextWindow: 32_000, compactAt: 0.6 },
      { name: 'family', provider: 'anthropic', model: 'claude-sonnet-5-5' },
      { name: 'unknown', provider: 'openai', baseURL: 'http://127.0.0.1:1/v1', model: 'local-7b' },
      { name: 'chain', provider: 'anthropic', model: 'claude-sonnet-5-5', fallbacks: ['set'] },
    ]);
    const of = (profile: string) => resolveProvider({ profile }, { profiles: own, allowReplay: false });
    expect(of('set')).toMatchObject({ contextWindow: 32_000, compactAt: 0.6 });
    expect(of('family').contextWindow).toBe(200_000);
    expect(of('unknown').contextWindow).toBeUndefined();
    expect(of('chain').contextWindow).toBe(32_000);
  });

  it('learns the window a server lists for the model it asks for', async () => {
    const server = await startFakeOpenAI({ context: { tokens: 16_384, count: () => 10 } });
    try {
      server.enqueue(streamText('hi'));
      const own = parseModelProfiles([{ name: 'listed', provider: 'openai', baseURL: server.baseURL }]);
      const provider = resolveProvider({ profile: 'listed' }, { profiles: own, allowReplay: false });
      const response = await provider.complete({
        messages: [{ role: 'user', content: 'hi' }],
        tools: [],
        signal: new AbortController().signal,
      });
      expect(response).toMatchObject({ model: 'fake-model', contextWindow: 16_384 });
    } finally {
      await server.close();
    }
  });

  it('makes the named profile, or the default one, as an OpenAI provider named after it', () => {
    expect(resolveProvider({ profile: 'cloud' }, { profiles, allowReplay: false }).name).toBe('cloud');
    expect(resolveProvider({}, { profiles, defaultProfile: 'local', allowReplay: false }).name).toBe('local');
    expect(resolveProvider(undefined, { profiles, defaultProfile: 'local', allowReplay: false }).name).toBe(
      'local',
    );
  });

  it("calls the profile's server with the profile's model and key", async () => {
    const server = await startFakeOpenAI();
    try {
      server.enqueue(streamText('hi'));
      const own = parseModelProfiles([
        { name: 'fake', provider: 'openai', baseURL: server.baseURL, model: 'fake-7b', apiKey: 'sk-fake' },
      ]);
      const provider = resolveProvider({ profile: 'fake' }, { profiles: own, allowReplay: false });
      const response = await provider.complete({
        messages: [{ role: 'user', content: 'hi' }],
        tools: [],
        signal: new AbortController().signal,
      });
      expect(response.content).toBe('hi');
      expect(server.requests[0]?.body).toMatchObject({ model: 'fake-7b' });
      expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-fake');
    } finally {
      await server.close();
    }
  });

  it("makes an Anthropic profile an Anthropic provider calling the profile's server with its model and key", async () => {
    const server = await startFakeAnthropic();
    try {
      server.enqueue(anthropicText('hi'));
      const own = parseModelProfiles([
        { name: 'claude', provider: 'anthropic', baseURL: server.baseURL, apiKey: 'sk-ant-fake' },
      ]);
      const provider = resolveProvider({}, { profiles: own, defaultProfile: 'claude', allowReplay: false });
      expect(provider.name).toBe('claude');
      const response = await provider.complete({
        messages: [{ role: 'user', content: 'hi' }],
        tools: [],
        signal: new AbortController().signal,
      });
      expect(response.content).toBe('hi');
      expect(server.requests[0]?.body).toMatchObject({ model: 'claude-sonnet-5-5' });
      expect(JSON.stringify(server.requests[0]?.headers)).toContain('sk-ant-fake');
    } finally {
      await server.close();
    }
  });

  it('refuses an unknown profile, listing the known ones', () => {
    const error = failure({ profile: 'gpt-5' });
    expect(error.code).toBe('ERR_MODEL_PROFILE_UNKNOWN');
    expect(error.statusCode).toBe(400);
    expect(error.message).toMatch(/"gpt-5".*known: local, cloud/);
  });

  it('needs a profile when there is no default, and with none at all says which variables make one', () => {
    expect(failure({}).code).toBe('ERR_MODEL_PROFILE_REQUIRED');
    const none = failure({}, { profiles: [] });
    expect(none.code).toBe('ERR_MODEL_PROFILE_REQUIRED');
    expect(none.statusCode).toBe(400);
    for (const variable of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY']) {
      expect(none.message).toContain(variable);
    }
  });

  it('never takes a URL, key or model from the run', () => {
    for (const spec of [
      { profile: 'local', baseURL: 'http://evil.example/v1' },
      { profile: 'local', apiKey: 'sk-mine' },
      { model: 'gpt-4o' },
      { provider: 'openai', baseURL: 'http://evil.example/v1' },
      { provider: 'replay', script: [{ content: 'x' }], baseURL: 'http://evil.example/v1' },
      { profile: 42 },
      'local',
    ]) {
      expect(failure(spec, { allowReplay: true }).code, JSON.stringify(spec)).toBe('ERR_MODEL_SPEC_INVALID');
    }
  });

  it('makes a replay provider only when the server allows it', async () => {
    const spec = { provider: 'replay' as const, script: [{ content: 'scripted' }] };
    const error = failure(spec);
    expect(error.code).toBe('ERR_MODEL_REPLAY_DISABLED');
    expect(error.retryable).toBe(false);

    const provider = resolveProvider(spec, { profiles, allowReplay: true });
    expect(provider.name).toBe('replay');
    const response = await provider.complete({
      messages: [],
      tools: [],
      signal: new AbortController().signal,
    });
    expect(response.content).toBe('scripted');
  });

  it('refuses an invalid replay script with the turn named', () => {
    const error = failure(
      { provider: 'replay', script: [{ content: 'a' }, { toolCalls: 'bash' }] },
      { allowReplay: true },
    );
    expect(error.code).toBe('ERR_MODEL_REPLAY_SCRIPT_INVALID');
    expect(error.message).toMatch(/turn 1/);
  });
});
