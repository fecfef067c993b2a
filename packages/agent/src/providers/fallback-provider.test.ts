import {
  anthropicText,
  anthropicToolUse,
  startFakeAnthropic,
  startFakeOpenAI,
  streamText,
} from '@tether/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ProfileBreaker } from './fallback-provider.js';
import { parseModelProfiles } from './model-profiles.js';
import type { ChatMessage, ModelFallbackEvent } from './model-provider.js';
import { resolveProvider } from './resolve-provider.js';

/**
 * Model fallback against real wire protocols: an OpenAI-compatible fake that fails as a provider
 * outage does (500, 429 past its retries, a hang past the timeout), and an Anthropic-shaped fake
 * that answers the same provider-neutral transcript.
 */
const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function setUp(breaker: ProfileBreaker) {
  const openai = await startFakeOpenAI();
  const anthropic = await startFakeAnthropic();
  servers.push(openai, anthropic);
  const profiles = parseModelProfiles([
    {
      name: 'primary',
      provider: 'openai',
      baseURL: openai.baseURL,
      model: 'gpt-x',
      apiKey: 'sk-a',
      timeoutMs: 1_000,
      maxRetries: 0,
      prices: { input: 1, output: 1 },
      fallbacks: ['backup'],
    },
    {
      name: 'backup',
      provider: 'anthropic',
      baseURL: anthropic.baseURL,
      model: 'claude-x',
      apiKey: 'sk-b',
      maxRetries: 0,
      prices: { input: 3, output: 15 },
    },
  ]);
  const provider = resolveProvider({ profile: 'primary' }, { profiles, allowReplay: false, breaker });
  const moves: ModelFallbackEvent[] = [];
  const ask = (messages: ChatMessage[]) =>
    provider.complete({
      messages,
      tools: [{ name: 'todo', description: 'todos', parameters: { type: 'object' } }],
      signal: new AbortController().signal,
      onFallback: (moved) => moves.push(moved),
    });
  return { openai, anthropic, ask, moves };
}

/** A transcript with a finished tool pair in it, as the loop keeps it whatever the provider. */
const history: ChatMessage[] = [
  { role: 'system', content: 'You are a test agent.' },
  { role: 'user', content: 'plan it' },
  { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'todo', arguments: '{"todos":[]}' }] },
  { role: 'tool', toolCallId: 'call_1', content: 'ok' },
];

describe('a profile with fallbacks', () => {
  it.each([
    ['a 500', { kind: 'status', status: 500 }, 'ERR_MODEL_UNAVAILABLE'],
    ['a 429', { kind: 'status', status: 429, headers: { 'retry-after': '0' } }, 'ERR_MODEL_RATE_LIMITED'],
    ['a hang past its timeout', { kind: 'hang' }, 'ERR_MODEL_TIMEOUT'],
  ] as const)('goes to the next profile, across providers, after %s', async (_, failure, code) => {
    const { openai, anthropic, ask, moves } = await setUp(new ProfileBreaker(0));
    openai.enqueue(failure);
    anthropic.enqueue(anthropicToolUse([{ name: 'todo', input: '{"todos":[]}' }]));
    const answer = await ask(history);
    expect(answer).toMatchObject({
      profile: 'backup',
      model: 'claude-x',
      prices: { input: 3, output: 15 },
      toolCalls: [{ name: 'todo' }],
    });
    expect(moves).toEqual([{ from: 'primary', to: 'backup', reason: expect.stringMatching(`^${code}: `) }]);
    // The same history reached the other provider, its tool pair whole.
    const sent = anthropic.requests[0]?.body as { messages: { role: string; content: unknown }[] };
    expect(JSON.stringify(sent.messages)).toContain('call_1');
  });

  it('skips a profile that failed recently, saying so, and goes back to it once it is healthy', async () => {
    const breaker = new ProfileBreaker(60_000);
    const { openai, anthropic, ask, moves } = await setUp(breaker);
    openai.enqueue({ kind: 'status', status: 503 });
    anthropic.enqueue(anthropicText('first'));
    anthropic.enqueue(anthropicText('second'));
    expect((await ask(history)).content).toBe('first');
    expect((await ask(history)).content).toBe('second');
    // The second turn never asked the failing profile.
    expect(openai.requests).toHaveLength(1);
    expect(moves[1]).toEqual({
      from: 'primary',
      to: 'backup',
      reason: 'profile primary failed recently: skipped for up to 60 s',
    });
    // Its time out (as if 60 s had passed), the profile is asked first again.
    breaker.close('primary');
    openai.enqueue(streamText('back'));
    expect(await ask(history)).toMatchObject({ content: 'back', profile: 'primary' });
    expect(moves).toHaveLength(2);
  });

  it('does not go elsewhere for a request the model refused, and refuses a fallback that is no profile', async () => {
    const { openai, anthropic, ask, moves } = await setUp(new ProfileBreaker(0));
    openai.enqueue({ kind: 'status', status: 400, body: { error: { message: 'bad' } } });
    await expect(ask(history)).rejects.toMatchObject({ code: 'ERR_MODEL_BAD_REQUEST' });
    expect(anthropic.requests).toHaveLength(0);
    expect(moves).toEqual([]);
    expect(() =>
      parseModelProfiles([{ name: 'a', provider: 'openai', model: 'm', fallbacks: ['nope'] }]),
    ).toThrow(/fallbacks names no profile "nope"/);
    expect(() =>
      parseModelProfiles([{ name: 'a', provider: 'openai', model: 'm', fallbacks: ['a'] }]),
    ).toThrow(/fallbacks names the profile itself/);
  });
});
