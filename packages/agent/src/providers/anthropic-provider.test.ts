import { performance } from 'node:perf_hooks';
import {
  anthropicError,
  anthropicErrorEvent,
  anthropicText,
  anthropicToolUse,
  type FakeAnthropicServer,
  messageEvents,
  startFakeAnthropic,
} from '@tether/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentError } from '../errors.js';
import { type AnthropicProviderOptions, createAnthropicProvider } from './anthropic-provider.js';
import type { ChatMessage, ModelRequest, ModelRetryEvent } from './model-provider.js';

let server: FakeAnthropicServer;

beforeEach(async () => {
  server = await startFakeAnthropic();
});

afterEach(async () => {
  await server.close();
  vi.unstubAllEnvs();
});

function provider(options: Partial<AnthropicProviderOptions> = {}) {
  return createAnthropicProvider({
    baseURL: server.baseURL,
    apiKey: 'sk-ant-test',
    model: 'claude-test',
    timeoutMs: 5_000,
    maxRetries: 3,
    retryBaseDelayMs: 1,
    retryMaxDelayMs: 5,
    ...options,
  });
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Say hello.' },
    ],
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

/** The credential a request carried, in whichever header the SDK puts it. */
function credential(index: number): string | undefined {
  const headers = server.requests[index]?.headers ?? {};
  return (headers['x-api-key'] as string | undefined) ?? headers.authorization;
}

const cache = { type: 'ephemeral' };

describe('Anthropic provider: streaming', () => {
  it('streams text to onDelta and returns the text, the usage with its cache figures, and the finish reason', async () => {
    server.enqueue(
      anthropicText('Hello there, world.', {
        pieces: 4,
        usage: {
          input_tokens: 12,
          output_tokens: 7,
          cache_creation_input_tokens: 300,
          cache_read_input_tokens: 2_000,
        },
      }),
    );
    const deltas: string[] = [];
    const response = await provider().complete(request({ onDelta: (text) => deltas.push(text) }));

    expect(response).toEqual({
      content: 'Hello there, world.',
      toolCalls: [],
      usage: {
        inputTokens: 2_312,
        outputTokens: 7,
        totalTokens: 2_319,
        cacheReadTokens: 2_000,
        cacheWriteTokens: 300,
      },
      finishReason: 'stop',
      firstTokenMs: expect.any(Number),
    });
    expect(deltas).toHaveLength(4);
    expect(deltas.join('')).toBe('Hello there, world.');
  });

  it('measures the time to the first token of the answer, text or tool call, apart from the whole answer', async () => {
    // Every event 80 ms after the last: the first text is the 4th (message_start, ping, the block's
    // start before it), a tool call's start the 3rd; four events or more follow either.
    server.enqueue(
      anthropicText('Hello there.', { pieces: 2, eventDelayMs: 80 }),
      anthropicToolUse([{ id: 'toolu_1', name: 'todo', input: '{}' }], { eventDelayMs: 80 }),
    );
    for (const first of [320, 240]) {
      const started = performance.now();
      const response = await provider().complete(request());
      const total = performance.now() - started;
      expect(response.firstTokenMs).toBeGreaterThanOrEqual(first - 10);
      expect(response.firstTokenMs).toBeLessThan(total - 240);
    }
  });

  it('sends a streaming request with the key, max_tokens, and cache breakpoints on the system prompt and the last message', async () => {
    server.enqueue(anthropicText('ok'));
    await provider().complete(request());

    expect(body(0)).toEqual({
      model: 'claude-test',
      max_tokens: 16_384,
      system: [{ type: 'text', text: 'You are terse.', cache_control: cache }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello.', cache_control: cache }] }],
      stream: true,
    });
    expect(server.requests[0]?.path).toBe('/v1/messages');
    expect(credential(0)).toMatch(/sk-ant-test$/);
    expect(server.requests[0]?.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('sends the history in Messages form: tool calls as tool_use, results merged into one user message, and the tools', async () => {
    server.enqueue(anthropicText('ok'), anthropicText('ok'));
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Read a.txt and b.txt' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'toolu_1', name: 'read_file', arguments: '{"path":"a.txt"}' },
          { id: 'toolu_2', name: 'read_file', arguments: '{"path": "b.t' },
        ],
      },
      { role: 'tool', toolCallId: 'toolu_1', content: '1|hello' },
      { role: 'tool', toolCallId: 'toolu_2', content: 'Error: the arguments are not valid JSON' },
      { role: 'assistant', content: 'a.txt says hello.' },
      { role: 'user', content: 'Thanks.' },
    ];
    const parameters = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
    const tools = [{ name: 'read_file', description: 'Reads a file.', parameters }];

    await provider({ maxOutputTokens: 512 }).complete(request({ messages, tools }));
    await provider().complete(request({ messages, tools, maxOutputTokens: 64 }));

    expect(body(0)).toMatchObject({
      max_tokens: 512,
      system: [{ type: 'text', text: 'Be brief.', cache_control: cache }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Read a.txt and b.txt' }] },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a.txt' } },
            // Malformed arguments cannot go back as an object: the tool result said what was wrong.
            { type: 'tool_use', id: 'toolu_2', name: 'read_file', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '1|hello' },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_2',
              content: 'Error: the arguments are not valid JSON',
            },
          ],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'a.txt says hello.' }] },
        { role: 'user', content: [{ type: 'text', text: 'Thanks.', cache_control: cache }] },
      ],
      tools: [{ name: 'read_file', description: 'Reads a file.', input_schema: parameters }],
    });
    expect(body(1)).toMatchObject({ max_tokens: 64 });
    expect(body(1)).not.toHaveProperty('temperature');
  });

  it('sends no credentials of its own process when the profile has no key', async () => {
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-worker-secret');
    vi.stubEnv('ANTHROPIC_AUTH_TOKEN', 'worker-token-secret');
    vi.stubEnv('ANTHROPIC_BASE_URL', 'http://127.0.0.1:1');
    server.enqueue(anthropicText('ok'));

    const response = await provider({ apiKey: undefined }).complete(request());

    expect(response.content).toBe('ok');
    const headers = server.requests[0]?.headers ?? {};
    expect(headers.authorization).toBeUndefined();
    expect(headers['x-api-key']).toBeUndefined();
    expect(JSON.stringify(headers)).not.toMatch(/secret/);
  });

  it('assembles tool calls from input_json_delta pieces, after the text before them', async () => {
    const args = '{"path":"src/index.ts","offset":10,"limit":40}';
    server.enqueue(
      anthropicToolUse(
        [
          { id: 'toolu_a', name: 'read_file', input: args },
          { id: 'toolu_b', name: 'list_dir', input: '{"path":"."}' },
        ],
        { text: 'Let me look.', pieces: 5 },
      ),
    );
    const deltas: string[] = [];

    const response = await provider().complete(request({ onDelta: (text) => deltas.push(text) }));

    expect(response.toolCalls).toEqual([
      { id: 'toolu_a', name: 'read_file', arguments: args },
      { id: 'toolu_b', name: 'list_dir', arguments: '{"path":"."}' },
    ]);
    expect(response.content).toBe('Let me look.');
    expect(deltas.join('')).toBe('Let me look.');
    expect(response.finishReason).toBe('tool_calls');
  });

  it('passes malformed tool input through exactly as the model wrote it, and an empty one as {}', async () => {
    const broken = '{"path": "a.txt", "content": "unterminated';
    server.enqueue(
      anthropicToolUse([
        { id: 'toolu_x', name: 'write_file', input: broken },
        { id: 'toolu_y', name: 'todo', input: '' },
      ]),
    );

    const response = await provider().complete(request());

    expect(response.toolCalls).toEqual([
      { id: 'toolu_x', name: 'write_file', arguments: broken },
      { id: 'toolu_y', name: 'todo', arguments: '{}' },
    ]);
  });

  for (const [stopReason, finishReason] of [
    ['max_tokens', 'length'],
    ['refusal', 'content_filter'],
    ['stop_sequence', 'stop'],
    ['pause_turn', 'pause_turn'],
  ] as const) {
    it(`reports the stop reason ${stopReason} as ${finishReason}`, async () => {
      server.enqueue(anthropicText('partial', { stopReason }));
      expect((await provider().complete(request())).finishReason).toBe(finishReason);
    });
  }
});

describe('Anthropic provider: retries', () => {
  it('retries a 429 after the retry-after the server asked for', async () => {
    server.enqueue(
      anthropicError(429, 'rate_limit_error', 'slow down', { 'retry-after': '0.2' }),
      anthropicText('finally'),
    );
    const retries: ModelRetryEvent[] = [];

    const response = await provider().complete(request({ onRetry: (event) => retries.push(event) }));

    expect(response.content).toBe('finally');
    const [first, second] = server.requests;
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(200);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1, delayMs: 200, discardsDeltas: false });
    expect(retries[0]?.error.code).toBe('ERR_MODEL_RATE_LIMITED');
    expect(retries[0]?.error.message).toMatch(/slow down/);
  });

  it('retries a 529 overloaded_error as ERR_MODEL_UNAVAILABLE, and gives up on a storm of them, retryable', async () => {
    server.enqueue(anthropicError(529, 'overloaded_error', 'Overloaded'), anthropicText('recovered'));
    const codes: string[] = [];
    const response = await provider().complete(request({ onRetry: (event) => codes.push(event.error.code) }));
    expect(response.content).toBe('recovered');
    expect(codes).toEqual(['ERR_MODEL_UNAVAILABLE']);

    for (let i = 0; i < 3; i++) server.enqueue(anthropicError(529, 'overloaded_error', 'Overloaded'));
    const warn = vi.fn();
    const error = await rejection(provider({ maxRetries: 2, logger: { warn } }).complete(request()));
    expect(error.code).toBe('ERR_MODEL_UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/HTTP 529.*Overloaded.*after 3 tries/);
    expect(server.requests).toHaveLength(5);
    expect(warn).toHaveBeenCalledTimes(2);
  });

  it('retries an overloaded_error event inside the stream; the failed try streams nothing more', async () => {
    const events = messageEvents([{ type: 'text', text: 'Hello wor' }], { pieces: 3 });
    // message_start, ping, block start, the three deltas, then the error in place of the rest.
    server.enqueue(
      {
        kind: 'events',
        events: [...events.slice(0, 6), anthropicErrorEvent('overloaded_error', 'Overloaded')],
      },
      anthropicText('Hello world!', { pieces: 2 }),
    );
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
      '<retry ERR_MODEL_UNAVAILABLE discards=true>',
      'Hello ',
      'world!',
    ]);
  });

  it('does not retry an invalid_request_error event inside the stream', async () => {
    server.enqueue({
      kind: 'events',
      events: [anthropicErrorEvent('invalid_request_error', 'prompt is too long')],
    });
    const error = await rejection(provider().complete(request()));
    expect(error.code).toBe('ERR_MODEL_BAD_REQUEST');
    expect(error.message).toMatch(/error inside the stream.*prompt is too long/);
    expect(server.requests).toHaveLength(1);
  });

  for (const [status, type, code] of [
    [400, 'invalid_request_error', 'ERR_MODEL_BAD_REQUEST'],
    [404, 'not_found_error', 'ERR_MODEL_BAD_REQUEST'],
    [401, 'authentication_error', 'ERR_MODEL_AUTH'],
    [403, 'permission_error', 'ERR_MODEL_AUTH'],
  ] as const) {
    it(`does not retry a ${status} ${type}: ${code}, not retryable`, async () => {
      server.enqueue(anthropicError(status, type, 'model: claude-nope'));
      const error = await rejection(provider().complete(request()));
      expect(error.code).toBe(code);
      expect(error.retryable).toBe(false);
      expect(error.message).toMatch(/claude-nope/);
      expect(server.requests).toHaveLength(1);
    });
  }

  it('retries a connection dropped mid-stream, and a stream that ends without message_stop', async () => {
    const events = messageEvents([{ type: 'text', text: 'partial' }]);
    server.enqueue(
      { kind: 'drop-after', events: events.slice(0, 4) },
      { kind: 'events', events: events.slice(0, -1) },
      anthropicText('whole'),
    );
    const codes: string[] = [];

    const response = await provider().complete(request({ onRetry: (event) => codes.push(event.error.code) }));

    expect(response.content).toBe('whole');
    expect(codes).toEqual(['ERR_MODEL_CONNECTION', 'ERR_MODEL_CONNECTION']);
    expect(server.requests).toHaveLength(3);
  });

  it('treats an unparsable event as a retryable ERR_MODEL_BAD_RESPONSE', async () => {
    server.enqueue({ kind: 'events', events: [{ raw: 'event: message_start\ndata: {"type": \n\n' }] });
    const error = await rejection(provider({ maxRetries: 0 }).complete(request()));
    expect(error.code).toBe('ERR_MODEL_BAD_RESPONSE');
    expect(error.retryable).toBe(true);
  });
});

describe('Anthropic provider: timeout and abort', () => {
  it('times out a server that stops sending, before or during the stream', async () => {
    const events = messageEvents([{ type: 'text', text: 'partial' }]);
    server.enqueue({ kind: 'hang', events: events.slice(0, 3) }, { kind: 'hang' });

    const error = await rejection(provider({ timeoutMs: 150, maxRetries: 1 }).complete(request()));

    expect(error.code).toBe('ERR_MODEL_TIMEOUT');
    expect(error.retryable).toBe(true);
    expect(server.requests).toHaveLength(2);
    await Promise.all(server.requests.map((r) => r.closed));
  });

  it('aborts a hanging stream promptly, closes the connection and does not retry', async () => {
    const events = messageEvents([{ type: 'text', text: 'Thinking about it' }]);
    server.enqueue({ kind: 'hang', events: events.slice(0, 4) });
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
    expect(error.message).toMatch(/run cancelled/);
    await server.requests[0]?.closed;
    expect(server.requests).toHaveLength(1);
  });
});

describe('Anthropic provider: options', () => {
  it('refuses invalid options, naming each field and its bound, and a temperature', () => {
    expect(() =>
      createAnthropicProvider({
        baseURL: 'ftp://example.com',
        model: '',
        maxRetries: -1,
        maxOutputTokens: 0,
        temperature: 0.5 as unknown as undefined,
      }),
    ).toThrow(
      expect.objectContaining({
        code: 'ERR_MODEL_PROFILE_INVALID',
        message: expect.stringMatching(
          /^Anthropic provider options: baseURL must be an http\(s\) URL.*model must be a non-empty string.*maxRetries must be an integer from 0 to 20 \(got -1\).*maxOutputTokens must be an integer from 1 to 10000000 \(got 0\).*temperature is not a parameter/,
        ),
      }),
    );
  });
});
