import { performance } from 'node:perf_hooks';
import {
  type FakeOpenAIServer,
  startFakeOpenAI,
  streamText,
  streamToolCalls,
  textChunks,
  toolCallChunks,
} from '@tether/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentError } from '../errors.js';
import type { ChatMessage, ModelRequest, ModelRetryEvent } from './model-provider.js';
import { createOpenAIProvider, type OpenAIProviderOptions } from './openai-provider.js';

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await startFakeOpenAI();
});

afterEach(async () => {
  await server.close();
  vi.unstubAllEnvs();
});

function provider(options: Partial<OpenAIProviderOptions> = {}) {
  return createOpenAIProvider({
    baseURL: server.baseURL,
    apiKey: 'sk-test',
    model: 'test-model',
    timeoutMs: 5_000,
    maxRetries: 3,
    retryBaseDelayMs: 1,
    retryMaxDelayMs: 5,
    ...options,
  });
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages: [{ role: 'user', content: 'Say hello.' }],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  };
}

/** What a rejected promise rejected with, asserted to be an AgentError. */
async function rejection(promise: Promise<unknown>): Promise<AgentError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(AgentError);
  return error as AgentError;
}

function body(index: number): Record<string, unknown> {
  return server.requests[index]?.body as Record<string, unknown>;
}

describe('OpenAI provider: streaming', () => {
  it('streams text to onDelta and returns the text, usage and finish reason', async () => {
    server.enqueue(streamText('Hello there, world.', { pieces: 4 }));
    const deltas: string[] = [];
    const response = await provider().complete(request({ onDelta: (text) => deltas.push(text) }));

    expect(response).toEqual({
      content: 'Hello there, world.',
      toolCalls: [],
      usage: { inputTokens: 11, outputTokens: 7, totalTokens: 18 },
      finishReason: 'stop',
      firstTokenMs: expect.any(Number),
      model: 'test-model',
    });
    expect(deltas.length).toBe(4);
    expect(deltas.join('')).toBe('Hello there, world.');
  });

  it('measures the time to the first token of the answer, text or tool call, apart from the whole answer', async () => {
    // A role chunk, two pieces and the end, 80 ms apart: the first text comes with the second chunk.
    server.enqueue(
      streamText('Hello there.', { pieces: 2, chunkDelayMs: 80 }),
      streamToolCalls([{ id: 'c1', name: 'todo', arguments: '{}' }], { chunkDelayMs: 80 }),
    );
    for (let i = 0; i < 2; i++) {
      const started = performance.now();
      const response = await provider().complete(request());
      const total = performance.now() - started;
      expect(response.firstTokenMs).toBeGreaterThanOrEqual(150);
      expect(response.firstTokenMs).toBeLessThan(total - 70);
    }
  });

  it('sends a streaming request with usage, and no parameter that was not set', async () => {
    server.enqueue(streamText('ok'));
    await provider().complete(request());

    expect(body(0)).toEqual({
      model: 'test-model',
      messages: [{ role: 'user', content: 'Say hello.' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-test');
  });

  it('sends tools, the history in wire form, temperature and the token limit when set', async () => {
    server.enqueue(streamText('ok'), streamText('ok'));
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Read a.txt' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"a.txt"}' }],
      },
      { role: 'tool', toolCallId: 'c1', content: '1|hello' },
    ];
    const parameters = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
    const tools = [{ name: 'read_file', description: 'Reads a file.', parameters }];

    await provider({ temperature: 0.2, maxOutputTokens: 512 }).complete(request({ messages, tools }));
    await provider({ maxTokensField: 'max_completion_tokens' }).complete(
      request({ messages, tools, maxOutputTokens: 64 }),
    );

    expect(body(0)).toMatchObject({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Read a.txt' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: '1|hello' },
      ],
      tools: [
        { type: 'function', function: { name: 'read_file', description: 'Reads a file.', parameters } },
      ],
      temperature: 0.2,
      max_tokens: 512,
    });
    expect(body(1)).toMatchObject({ max_completion_tokens: 64 });
    expect(body(1)).not.toHaveProperty('max_tokens');
    expect(body(1)).not.toHaveProperty('temperature');
  });

  it('sends no credentials of its own process when the profile has no key', async () => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-worker-secret');
    vi.stubEnv('OPENAI_ADMIN_KEY', 'sk-admin-secret');
    vi.stubEnv('OPENAI_ORG_ID', 'org-secret');
    vi.stubEnv('OPENAI_BASE_URL', 'http://127.0.0.1:1/v1');
    server.enqueue(streamText('ok'));

    const response = await provider({ apiKey: undefined }).complete(request());

    expect(response.content).toBe('ok');
    const headers = server.requests[0]?.headers ?? {};
    expect(headers.authorization).toBeUndefined();
    expect(headers['openai-organization']).toBeUndefined();
    expect(JSON.stringify(headers)).not.toMatch(/secret/);
  });

  it('assembles a tool call whose name and arguments arrive in fragments', async () => {
    const args = '{"path":"src/index.ts","offset":10,"limit":40}';
    server.enqueue(streamToolCalls([{ id: 'call_a', name: 'read_file', arguments: args }], { fragments: 6 }));

    const response = await provider().complete(request());

    expect(response.toolCalls).toEqual([{ id: 'call_a', name: 'read_file', arguments: args }]);
    expect(response.finishReason).toBe('tool_calls');
    expect(response.content).toBe('');
  });

  it('assembles parallel tool calls by index, even when their fragments interleave', async () => {
    const calls = [
      { id: 'call_1', name: 'read_file', arguments: '{"path":"a.txt"}' },
      { id: 'call_2', name: 'list_dir', arguments: '{"path":".","depth":2}' },
      { id: 'call_3', name: 'bash', arguments: '{"command":"ls -la"}' },
    ];
    server.enqueue({
      kind: 'stream',
      chunks: toolCallChunks(calls, { fragments: 4, interleave: true, content: 'Let me look.' }),
    });
    const deltas: string[] = [];

    const response = await provider().complete(request({ onDelta: (text) => deltas.push(text) }));

    expect(response.toolCalls).toEqual(calls);
    expect(response.content).toBe('Let me look.');
    expect(deltas.join('')).toBe('Let me look.');
  });

  it('passes malformed tool-call JSON through exactly as the model wrote it', async () => {
    const broken = '{"path": "a.txt", "content": "unterminated';
    server.enqueue(streamToolCalls([{ id: 'call_x', name: 'write_file', arguments: broken }]));

    const response = await provider().complete(request());

    expect(response.toolCalls).toEqual([{ id: 'call_x', name: 'write_file', arguments: broken }]);
  });

  it('reports the cached prompt tokens OpenAI counted in prompt_tokens as cacheReadTokens', async () => {
    server.enqueue(
      streamText('ok', {
        usage: {
          prompt_tokens: 2_000,
          completion_tokens: 3,
          prompt_tokens_details: { cached_tokens: 1_536 },
        },
      }),
    );
    const response = await provider().complete(request());
    expect(response.usage).toEqual({
      inputTokens: 2_000,
      outputTokens: 3,
      totalTokens: 2_003,
      cacheReadTokens: 1_536,
    });
  });

  it('reports zero usage when the server sends none', async () => {
    server.enqueue(streamText('ok', { usage: null }));
    const response = await provider().complete(request());
    expect(response.usage).toEqual({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });
  });
});

describe('OpenAI provider: without a model', () => {
  it('asks the server for its models once and uses the first it lists', async () => {
    const listing = await startFakeOpenAI({ models: ['qwen2.5-coder:7b', 'llama3.2'] });
    try {
      listing.enqueue(streamText('one'), streamText('two'));
      const own = createOpenAIProvider({ baseURL: listing.baseURL, retryBaseDelayMs: 1 });
      const first = await own.complete(request());
      expect(first).toMatchObject({ content: 'one', model: 'qwen2.5-coder:7b' });
      expect((await own.complete(request())).content).toBe('two');
      expect(listing.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
        'GET /v1/models',
        'POST /v1/chat/completions',
        'POST /v1/chat/completions',
      ]);
      expect(listing.requests.slice(1).map((r) => (r.body as { model: string }).model)).toEqual([
        'qwen2.5-coder:7b',
        'qwen2.5-coder:7b',
      ]);
    } finally {
      await listing.close();
    }
  });

  for (const [label, models, message] of [
    ['lists none', [], /the server lists none/],
    ['cannot list them', null, /does not list its models \(GET \/models answered 404\)/],
  ] as const) {
    it(`fails with ERR_MODEL_PROFILE_INVALID, not retried, when the server ${label}`, async () => {
      const listing = await startFakeOpenAI({ models });
      try {
        const own = createOpenAIProvider({ baseURL: listing.baseURL, name: 'local' });
        const error = await rejection(own.complete(request()));
        expect(error.code).toBe('ERR_MODEL_PROFILE_INVALID');
        expect(error.retryable).toBe(false);
        expect(error.message).toMatch(message);
        expect(error.message).toMatch(/^local: .*TETHER_MODEL/);
        expect(listing.requests).toHaveLength(1);
      } finally {
        await listing.close();
      }
    });
  }
});

describe('OpenAI provider: retries', () => {
  for (const [header, value, waitMs] of [
    ['retry-after', '0.2', 200],
    ['retry-after-ms', '150', 150],
  ] as const) {
    it(`retries a 429 after the ${header} the server asked for`, async () => {
      server.enqueue(
        {
          kind: 'status',
          status: 429,
          headers: { [header]: value },
          body: { error: { message: 'slow down' } },
        },
        streamText('finally'),
      );
      const retries: ModelRetryEvent[] = [];

      const response = await provider().complete(request({ onRetry: (event) => retries.push(event) }));

      expect(response.content).toBe('finally');
      expect(server.requests).toHaveLength(2);
      const [first, second] = server.requests;
      expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(waitMs);
      expect(retries).toHaveLength(1);
      expect(retries[0]).toMatchObject({ attempt: 1, delayMs: waitMs, discardsDeltas: false });
      expect(retries[0]?.error.code).toBe('ERR_MODEL_RATE_LIMITED');
    });
  }

  it('gives up on a 500 storm with a retryable ERR_MODEL_UNAVAILABLE', async () => {
    for (let i = 0; i < 3; i++) server.enqueue({ kind: 'status', status: 500 });
    const warn = vi.fn();

    const error = await rejection(provider({ maxRetries: 2, logger: { warn } }).complete(request()));

    expect(error.code).toBe('ERR_MODEL_UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/after 3 tries/);
    expect(server.requests).toHaveLength(3);
    expect(warn).toHaveBeenCalledTimes(2);
  });

  it('stops retrying when the next wait would pass the total wait cap', async () => {
    server.enqueue({ kind: 'status', status: 429, headers: { 'retry-after': '30' } });

    const started = performance.now();
    const error = await rejection(provider({ maxRetryWaitMs: 1_000 }).complete(request()));

    expect(performance.now() - started).toBeLessThan(1_000);
    expect(error.code).toBe('ERR_MODEL_RATE_LIMITED');
    expect(error.retryable).toBe(true);
    expect(error.retryAfterMs).toBe(30_000);
    expect(server.requests).toHaveLength(1);
  });

  for (const [status, code] of [
    [400, 'ERR_MODEL_BAD_REQUEST'],
    [404, 'ERR_MODEL_BAD_REQUEST'],
    [401, 'ERR_MODEL_AUTH'],
    [403, 'ERR_MODEL_AUTH'],
  ] as const) {
    it(`does not retry a ${status}: ${code}, not retryable`, async () => {
      server.enqueue({ kind: 'status', status, body: { error: { message: 'no such model' } } });
      const error = await rejection(provider().complete(request()));
      expect(error.code).toBe(code);
      expect(error.retryable).toBe(false);
      expect(error.message).toMatch(/no such model/);
      expect(server.requests).toHaveLength(1);
    });
  }

  it('retries a connection dropped mid-stream; the failed try streams nothing more', async () => {
    const partial = textChunks('Hello wor', { pieces: 3 }).slice(0, -1);
    server.enqueue({ kind: 'drop-after', chunks: partial }, streamText('Hello world!', { pieces: 2 }));
    const log: string[] = [];

    const response = await provider().complete(
      request({
        onDelta: (text) => log.push(text),
        onRetry: (event) => log.push(`<retry ${event.error.code} discards=${event.discardsDeltas}>`),
      }),
    );

    expect(response.content).toBe('Hello world!');
    expect(log).toEqual([
      'Hel',
      'lo ',
      'wor',
      '<retry ERR_MODEL_CONNECTION discards=true>',
      'Hello ',
      'world!',
    ]);
    expect(server.requests).toHaveLength(2);
  });

  it('fails with a retryable ERR_MODEL_CONNECTION when every try is dropped', async () => {
    const partial = textChunks('Hello', { pieces: 2 }).slice(0, -1);
    server.enqueue({ kind: 'drop-after', chunks: partial }, { kind: 'drop-after', chunks: [] });

    const error = await rejection(provider({ maxRetries: 1 }).complete(request()));

    expect(error.code).toBe('ERR_MODEL_CONNECTION');
    expect(error.retryable).toBe(true);
    expect(server.requests).toHaveLength(2);
  });

  it('retries an error the server reports inside the stream', async () => {
    server.enqueue(
      {
        kind: 'stream',
        chunks: [{ raw: JSON.stringify({ error: { message: 'provider overloaded', code: 502 } }) }],
      },
      streamText('recovered'),
    );
    const codes: string[] = [];

    const response = await provider().complete(request({ onRetry: (event) => codes.push(event.error.code) }));

    expect(response.content).toBe('recovered');
    expect(codes).toEqual(['ERR_MODEL_UNAVAILABLE']);
  });

  it('treats an unparsable chunk as a retryable ERR_MODEL_BAD_RESPONSE', async () => {
    server.enqueue({ kind: 'stream', chunks: [{ raw: '{"choices": [' }] });
    const error = await rejection(provider({ maxRetries: 0 }).complete(request()));
    expect(error.code).toBe('ERR_MODEL_BAD_RESPONSE');
    expect(error.retryable).toBe(true);
  });
});

describe('OpenAI provider: timeout and abort', () => {
  it('times out a server that stops sending, before or during the stream', async () => {
    server.enqueue({ kind: 'hang', chunks: textChunks('partial').slice(0, 2) }, { kind: 'hang' });

    const error = await rejection(provider({ timeoutMs: 150, maxRetries: 1 }).complete(request()));

    expect(error.code).toBe('ERR_MODEL_TIMEOUT');
    expect(error.retryable).toBe(true);
    expect(server.requests).toHaveLength(2);
    await Promise.all(server.requests.map((r) => r.closed));
  });

  it('aborts a hanging stream promptly, closes the connection and does not retry', async () => {
    server.enqueue({ kind: 'hang', chunks: textChunks('Thinking about it').slice(0, 2) });
    const controller = new AbortController();
    let firstDelta: () => void = () => {};
    const streaming = new Promise<void>((resolve) => {
      firstDelta = resolve;
    });

    const pending = provider().complete(request({ signal: controller.signal, onDelta: () => firstDelta() }));
    await streaming;
    const abortedAt = performance.now();
    controller.abort(new Error('run cancelled'));
    const error = await rejection(pending);

    expect(performance.now() - abortedAt).toBeLessThan(500);
    expect(error.code).toBe('ERR_MODEL_ABORTED');
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(/run cancelled/);
    await server.requests[0]?.closed;
    expect(server.requests).toHaveLength(1);
  });

  it('aborts while waiting to retry', async () => {
    server.enqueue({ kind: 'status', status: 503, headers: { 'retry-after': '20' } });
    const controller = new AbortController();

    const error = await rejection(
      provider().complete(request({ signal: controller.signal, onRetry: () => controller.abort() })),
    );

    expect(error.code).toBe('ERR_MODEL_ABORTED');
    expect(server.requests).toHaveLength(1);
  });

  it('does not send a request when the signal is already aborted', async () => {
    const error = await rejection(provider().complete(request({ signal: AbortSignal.abort() })));
    expect(error.code).toBe('ERR_MODEL_ABORTED');
    expect(server.requests).toHaveLength(0);
  });
});

describe('OpenAI provider: options', () => {
  it('refuses invalid options, naming each field and its bound', () => {
    expect(() =>
      createOpenAIProvider({
        baseURL: 'ftp://example.com',
        model: '',
        timeoutMs: 0,
        maxRetries: -1,
        temperature: 3,
      }),
    ).toThrow(
      expect.objectContaining({
        code: 'ERR_MODEL_PROFILE_INVALID',
        message: expect.stringMatching(
          /baseURL must be an http\(s\) URL.*model must be a non-empty string.*timeoutMs must be an integer from 1 to 3600000 \(got 0\).*maxRetries must be an integer from 0 to 20 \(got -1\).*temperature must be between 0 and 2 \(got 3\)/,
        ),
      }),
    );
  });
});
