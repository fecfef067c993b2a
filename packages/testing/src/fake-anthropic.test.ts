import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  anthropicError,
  anthropicText,
  anthropicToolUse,
  type FakeAnthropicServer,
  startFakeAnthropic,
} from './fake-anthropic.js';

let server: FakeAnthropicServer;

beforeEach(async () => {
  server = await startFakeAnthropic();
});

afterEach(async () => {
  await server.close();
});

function post(body: unknown, path = '/v1/messages'): Promise<Response> {
  return fetch(`${server.baseURL}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-test' },
    body: JSON.stringify(body),
  });
}

/** The named events of an SSE body. */
function events(text: string): Array<{ event: string; data: Record<string, unknown> }> {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => {
      const [name = '', data = ''] = block.split('\n');
      return { event: name.replace(/^event: /, ''), data: JSON.parse(data.replace(/^data: /, '')) };
    });
}

describe('fake Anthropic server', () => {
  it('streams a message as named events: start, ping, each block, delta with the stop reason, stop', async () => {
    server.enqueue(
      anthropicToolUse([{ id: 'toolu_1', name: 'bash', input: '{"command":"ls"}' }], {
        text: 'Looking.',
        pieces: 2,
        usage: { input_tokens: 5, output_tokens: 9, cache_read_input_tokens: 100 },
      }),
    );
    const response = await post({ model: 'claude-x', max_tokens: 10, messages: [], stream: true });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const stream = events(await response.text());

    expect(stream.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(stream.every((e) => e.data.type === e.event)).toBe(true);
    expect(stream[0]?.data.message).toMatchObject({
      model: 'claude-x',
      role: 'assistant',
      usage: {
        input_tokens: 5,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 0,
        output_tokens: 1,
      },
    });
    expect(stream[6]?.data.content_block).toEqual({
      type: 'tool_use',
      id: 'toolu_1',
      name: 'bash',
      input: {},
    });
    const json = stream
      .filter((e) => e.data.index === 1 && e.event === 'content_block_delta')
      .map((e) => (e.data.delta as { partial_json: string }).partial_json);
    expect(json.join('')).toBe('{"command":"ls"}');
    expect(stream.at(-2)?.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { output_tokens: 9 },
    });
  });

  it('answers a request without stream with the message the same blocks make', async () => {
    server.enqueue(anthropicText('Hi there'));
    const message = await (await post({ model: 'claude-x', max_tokens: 10, messages: [] })).json();
    expect(message).toMatchObject({
      type: 'message',
      model: 'claude-x',
      content: [{ type: 'text', text: 'Hi there' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 11, output_tokens: 7 },
    });
  });

  it('answers an error status with its headers and the Messages error body', async () => {
    server.enqueue(anthropicError(529, 'overloaded_error', 'Overloaded', { 'retry-after': '2' }));
    const response = await post({ model: 'm', stream: true });
    expect(response.status).toBe(529);
    expect(response.headers.get('retry-after')).toBe('2');
    expect(await response.json()).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
  });

  it('records requests and answers 418 when nothing is queued, 404 off the route', async () => {
    const unqueued = await post({ model: 'm', messages: [] });
    expect(unqueued.status).toBe(418);
    expect(await unqueued.text()).toMatch(/no behaviour queued for request #0/);
    expect((await post({}, '/v1/complete')).status).toBe(404);
    expect(server.requests.map((r) => [r.index, r.path])).toEqual([
      [0, '/v1/messages'],
      [1, '/v1/complete'],
    ]);
    expect(server.requests[0]?.headers['x-api-key']).toBe('sk-ant-test');
  });
});
