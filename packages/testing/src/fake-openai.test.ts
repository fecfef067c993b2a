import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeOpenAIServer, startFakeOpenAI, streamText, streamToolCalls } from './fake-openai.js';

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await startFakeOpenAI();
});

afterEach(async () => {
  await server.close();
});

function post(body: unknown, path = '/chat/completions'): Promise<Response> {
  return fetch(`${server.baseURL}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify(body),
  });
}

describe('fake OpenAI server', () => {
  it('streams SSE chunks, the usage chunk when asked for, then [DONE]', async () => {
    server.enqueue(streamText('Hi there', { pieces: 2 }));
    const response = await post({ model: 'm', stream: true, stream_options: { include_usage: true } });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const events = (await response.text()).split('\n\n').filter(Boolean);

    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event.replace(/^data: /, '')));
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === 'm')).toBe(
      true,
    );
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Hi there');
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 11, total_tokens: 18 } });
  });

  it('answers a non-streaming request with the completion the chunks add up to', async () => {
    server.enqueue(
      streamToolCalls([{ id: 'c1', name: 'bash', arguments: '{"command":"ls"}' }], { fragments: 3 }),
    );
    const completion = await (await post({ model: 'm' })).json();
    expect(completion).toMatchObject({
      object: 'chat.completion',
      choices: [
        {
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 11, completion_tokens: 7 },
    });
  });

  it('records requests and answers 418 when nothing is queued, 404 off the route', async () => {
    const unqueued = await post({ model: 'm', messages: [] });
    expect(unqueued.status).toBe(418);
    expect(await unqueued.text()).toMatch(/no behaviour queued for request #0/);
    expect((await post({}, '/models')).status).toBe(404);

    expect(server.requests.map((r) => [r.index, r.path])).toEqual([
      [0, '/v1/chat/completions'],
      [1, '/v1/models'],
    ]);
    expect(server.requests[0]?.body).toEqual({ model: 'm', messages: [] });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-test');
  });

  it('lists its models at GET /v1/models, or answers 404 there when told to have none', async () => {
    const listed = await (await fetch(`${server.baseURL}/models`)).json();
    expect(listed).toMatchObject({ object: 'list', data: [{ id: 'fake-model', object: 'model' }] });
    const bare = await startFakeOpenAI({ models: null });
    try {
      expect((await fetch(`${bare.baseURL}/models`)).status).toBe(404);
    } finally {
      await bare.close();
    }
  });

  it('answers a queued status with its headers and body', async () => {
    server.enqueue({
      kind: 'status',
      status: 429,
      headers: { 'retry-after': '1' },
      body: { error: { message: 'slow' } },
    });
    const response = await post({ model: 'm' });
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.json()).toEqual({ error: { message: 'slow' } });
    expect(server.pending).toBe(0);
  });
});
