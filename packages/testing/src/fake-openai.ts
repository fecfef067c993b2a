/**
 * A fake OpenAI-compatible server on a real port, for testing model providers
 * without mocking their SDK. It answers `POST /v1/chat/completions` in the
 * real wire format (and `GET /v1/models` with the models it serves): with
 * `stream: true`, Server-Sent Events of
 * `chat.completion.chunk` objects, a usage chunk when the request asked for
 * one (`stream_options.include_usage`), then `data: [DONE]`; without, one
 * `chat.completion` object assembled from the same chunks.
 *
 * Each request takes the next behaviour from a queue (`enqueue`), so a test
 * scripts exactly what the server does: stream, answer with an error status,
 * drop the connection mid-stream, or hang. A request with nothing queued gets a
 * 418 whose message says so. Every request is recorded (headers, parsed body,
 * arrival time, and a promise of its connection closing).
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  FakeModelServer,
  isRecord,
  type RecordedRequest,
  sendJson,
  split,
  startEventStream,
  write,
} from './fake-server.js';

export type { RecordedRequest } from './fake-server.js';

/** One fragment of a tool call inside a chunk's delta. */
export interface FakeToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** What one chunk adds to the answer (`choices[0].delta`). */
export interface FakeDelta {
  role?: 'assistant';
  content?: string | null;
  tool_calls?: FakeToolCallDelta[];
}

/** One `chat.completion.chunk`, reduced to what tests vary. */
export interface FakeChunk {
  delta: FakeDelta;
  finish_reason?: string | null;
}

/** A chunk, or a raw SSE `data:` payload written verbatim (for malformed streams). */
export type FakeStreamItem = FakeChunk | { raw: string };

export interface FakeUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
  /** How many of `prompt_tokens` came from OpenAI's prompt cache. */
  prompt_tokens_details?: { cached_tokens: number };
}

/** What the server does with one request. */
export type FakeBehavior =
  | {
      kind: 'stream';
      chunks: FakeStreamItem[];
      /** The usage chunk (sent when the request asks for it); `null` never sends one. */
      usage?: FakeUsage | null;
      /** A pause before each chunk (ms), for a model that takes its time (time to first token). */
      chunkDelayMs?: number;
    }
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: unknown }
  /**
   * Sends the headers and chunks, then destroys the socket: no usage, no
   * `[DONE]`, no end of body. With no chunks, the socket is destroyed before
   * the headers (a connection reset).
   */
  | { kind: 'drop-after'; chunks: FakeStreamItem[] }
  /** Sends the headers and chunks (if any), then never another byte. */
  | { kind: 'hang'; chunks?: FakeStreamItem[] };

export const DEFAULT_FAKE_USAGE: FakeUsage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };

export interface FakeOpenAIOptions {
  /** The `model` echoed in answers when the request names none. Default `fake-model`. */
  model?: string;
  /** What `GET /v1/models` lists (default: `model`); `null`: the route answers 404, as on a server without it. */
  models?: readonly string[] | null;
  /**
   * A model with a context window of `tokens`, as `count` counts a request's body: a request past
   * it is refused as OpenAI refuses one (400 `context_length_exceeded`, before any behaviour is
   * taken); `GET /v1/models` lists the window as `context_length` (OpenRouter's field); an answer
   * with no usage of its own reports the request's count as its prompt tokens.
   */
  context?: { tokens: number; count: (body: Record<string, unknown>) => number };
  /** Chooses each request's behaviour from its body, before the queue (undefined: the queue's next). */
  answer?: (body: Record<string, unknown>) => FakeBehavior | undefined;
}

/** The fake server. `start()` it, `enqueue` behaviours, point a client at `baseURL`, `close()` it. */
export class FakeOpenAIServer extends FakeModelServer<FakeBehavior> {
  private readonly model: string;
  private readonly models: readonly string[] | null;
  private readonly context: FakeOpenAIOptions['context'];
  private readonly answer: FakeOpenAIOptions['answer'];

  constructor(options: FakeOpenAIOptions = {}) {
    super('/v1');
    this.model = options.model ?? 'fake-model';
    this.models = options.models === undefined ? [this.model] : options.models;
    this.context = options.context;
    this.answer = options.answer;
  }

  protected async respond(request: RecordedRequest, res: ServerResponse): Promise<void> {
    if (request.method === 'GET' && request.path.split('?')[0] === '/v1/models' && this.models) {
      const created = Math.floor(Date.now() / 1000);
      const window = this.context ? { context_length: this.context.tokens } : {};
      const data = this.models.map((id) => ({
        id,
        object: 'model',
        created,
        owned_by: 'fake-openai',
        ...window,
      }));
      sendJson(res, 200, { object: 'list', data });
      return;
    }
    if (request.method !== 'POST' || request.path.split('?')[0] !== '/v1/chat/completions') {
      sendJson(res, 404, errorBody(`fake-openai: no route ${request.method} ${request.path}`, 'not_found'));
      return;
    }
    const body = isRecord(request.body) ? request.body : {};
    const counted = this.context?.count(body);
    if (this.context && counted !== undefined && counted > this.context.tokens) {
      const message = `This model's maximum context length is ${this.context.tokens} tokens. However, your messages resulted in ${counted} tokens. Please reduce the length of the messages.`;
      sendJson(res, 400, {
        error: { message, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' },
      });
      return;
    }
    const chosen = this.answer?.(body) ?? this.next();
    const behavior =
      chosen?.kind === 'stream' && chosen.usage === undefined && counted !== undefined
        ? { ...chosen, usage: { prompt_tokens: counted, completion_tokens: 7, total_tokens: counted + 7 } }
        : chosen;
    if (!behavior) {
      sendJson(
        res,
        418,
        errorBody(`fake-openai: no behaviour queued for request #${request.index}`, 'test_setup'),
      );
      return;
    }
    const model = typeof body.model === 'string' ? body.model : this.model;
    const stream = body.stream === true;
    const includeUsage = isRecord(body.stream_options) && body.stream_options.include_usage === true;
    const id = `chatcmpl-${randomBytes(6).toString('hex')}`;

    switch (behavior.kind) {
      case 'status':
        res.writeHead(behavior.status, { 'content-type': 'application/json', ...behavior.headers });
        res.end(
          JSON.stringify(
            behavior.body ?? errorBody(`fake-openai: status ${behavior.status}`, 'server_error'),
          ),
        );
        return;
      case 'stream':
        if (!stream) {
          sendJson(res, 200, completion(id, model, behavior.chunks, behavior.usage ?? DEFAULT_FAKE_USAGE));
          return;
        }
        startEventStream(res);
        for (const item of behavior.chunks) {
          if (behavior.chunkDelayMs) await sleep(behavior.chunkDelayMs);
          await write(res, sse(id, model, item));
        }
        if (includeUsage && behavior.usage !== null) {
          await write(res, usageEvent(id, model, behavior.usage ?? DEFAULT_FAKE_USAGE));
        }
        await write(res, 'data: [DONE]\n\n');
        res.end();
        return;
      case 'drop-after':
        if (stream && behavior.chunks.length > 0) {
          startEventStream(res);
          for (const item of behavior.chunks) await write(res, sse(id, model, item));
        }
        res.socket?.destroy();
        return;
      case 'hang':
        if (stream) {
          startEventStream(res);
          for (const item of behavior.chunks ?? []) await write(res, sse(id, model, item));
        }
        return;
    }
  }
}

/** Starts a fake server on a free port. */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAIServer> {
  return new FakeOpenAIServer(options).start();
}

/**
 * The chunks of a streamed text answer, as OpenAI sends them: a role chunk,
 * the text in `pieces` roughly equal parts, and a final chunk with the finish
 * reason.
 */
export function textChunks(
  text: string,
  options: { pieces?: number; finishReason?: string } = {},
): FakeChunk[] {
  const pieces = split(text, options.pieces ?? 3);
  return [
    { delta: { role: 'assistant', content: '' } },
    ...pieces.map((content) => ({ delta: { content } })),
    { delta: {}, finish_reason: options.finishReason ?? 'stop' },
  ];
}

/** A tool call for {@link toolCallChunks}; `arguments` is sent exactly as given (it may be broken JSON). */
export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: string;
}

/**
 * The chunks of a turn that makes tool calls: optional text first, then each
 * call's first fragment (index, id, name) and its `arguments` split into
 * `fragments` pieces, then `finish_reason: 'tool_calls'`. With `interleave`,
 * the fragments of parallel calls alternate, as some servers send them.
 */
export function toolCallChunks(
  calls: FakeToolCall[],
  options: { fragments?: number; interleave?: boolean; content?: string; finishReason?: string } = {},
): FakeChunk[] {
  const fragments = options.fragments ?? 3;
  const perCall = calls.map((call, index): FakeChunk[] => [
    {
      delta: {
        tool_calls: [
          {
            index,
            id: call.id ?? `call_fake_${index}`,
            type: 'function',
            function: { name: call.name, arguments: '' },
          },
        ],
      },
    },
    ...split(call.arguments, fragments).map((piece) => ({
      delta: { tool_calls: [{ index, function: { arguments: piece } }] },
    })),
  ]);
  const body: FakeChunk[] = [];
  if (options.interleave) {
    const longest = Math.max(0, ...perCall.map((chunks) => chunks.length));
    for (let i = 0; i < longest; i++) {
      for (const chunks of perCall) {
        const chunk = chunks[i];
        if (chunk) body.push(chunk);
      }
    }
  } else {
    for (const chunks of perCall) body.push(...chunks);
  }
  return [
    { delta: { role: 'assistant', content: null } },
    ...(options.content ? textChunks(options.content).slice(1, -1) : []),
    ...body,
    { delta: {}, finish_reason: options.finishReason ?? 'tool_calls' },
  ];
}

/** A behaviour that streams `text`. */
export function streamText(
  text: string,
  options: { pieces?: number; usage?: FakeUsage | null; chunkDelayMs?: number } = {},
): FakeBehavior {
  const behavior: FakeBehavior = { kind: 'stream', chunks: textChunks(text, options) };
  if (options.usage !== undefined) behavior.usage = options.usage;
  if (options.chunkDelayMs !== undefined) behavior.chunkDelayMs = options.chunkDelayMs;
  return behavior;
}

/** A behaviour that streams tool calls (see {@link toolCallChunks}). */
export function streamToolCalls(
  calls: FakeToolCall[],
  options: { fragments?: number; interleave?: boolean; content?: string; chunkDelayMs?: number } = {},
): FakeBehavior {
  const behavior: FakeBehavior = { kind: 'stream', chunks: toolCallChunks(calls, options) };
  if (options.chunkDelayMs !== undefined) behavior.chunkDelayMs = options.chunkDelayMs;
  return behavior;
}

function sse(id: string, model: string, item: FakeStreamItem): string {
  if ('raw' in item) return `data: ${item.raw}\n\n`;
  const chunk = {
    id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, delta: item.delta, logprobs: null, finish_reason: item.finish_reason ?? null }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

function usageEvent(id: string, model: string, usage: FakeUsage): string {
  const chunk = {
    id,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [],
    usage: withTotal(usage),
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** The non-streamed answer the same chunks add up to. */
function completion(id: string, model: string, items: FakeStreamItem[], usage: FakeUsage | null): unknown {
  let content: string | null = null;
  let finishReason: string | null = null;
  const calls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = [];
  for (const item of items) {
    if ('raw' in item) continue;
    if (item.delta.content) content = (content ?? '') + item.delta.content;
    for (const fragment of item.delta.tool_calls ?? []) {
      let call = calls[fragment.index];
      if (!call) {
        call = { id: '', type: 'function', function: { name: '', arguments: '' } };
        calls[fragment.index] = call;
      }
      if (fragment.id) call.id = fragment.id;
      if (fragment.function?.name) call.function.name += fragment.function.name;
      call.function.arguments += fragment.function?.arguments ?? '';
    }
    if (item.finish_reason) finishReason = item.finish_reason;
  }
  return {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content,
          refusal: null,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        logprobs: null,
        finish_reason: finishReason ?? 'stop',
      },
    ],
    ...(usage ? { usage: withTotal(usage) } : {}),
  };
}

function withTotal(usage: FakeUsage): FakeUsage & { total_tokens: number } {
  return { ...usage, total_tokens: usage.total_tokens ?? usage.prompt_tokens + usage.completion_tokens };
}

function errorBody(message: string, type: string): unknown {
  return { error: { message, type, param: null, code: null } };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
