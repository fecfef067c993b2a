/**
 * A fake Anthropic server on a real port, for testing the Anthropic provider
 * without mocking its SDK. It answers `POST /v1/messages` in the real Messages
 * wire format: with `stream: true`, Server-Sent Events, each with its `event:`
 * name: `message_start` (the message, its input usage), a `ping`, per content
 * block `content_block_start`, `content_block_delta` (`text_delta`, or
 * `input_json_delta` pieces of a tool call's input) and `content_block_stop`,
 * then `message_delta` (the stop reason and output usage) and `message_stop`;
 * without, one `message` object with the same content. Errors are
 * `{ type: 'error', error: { type, message } }`, as a status (429
 * `rate_limit_error`, 529 `overloaded_error`…, with `retry-after` when given)
 * or as an `error` event inside the stream.
 *
 * Each request takes the next behaviour from a queue (`enqueue`), so a test
 * scripts exactly what the server does: answer a message, stream hand-made
 * events, answer with an error status, drop the connection mid-stream, or
 * hang. A request with nothing queued gets a 418 whose message says so. Every
 * request is recorded (headers, parsed body, arrival time, and a promise of its
 * connection closing).
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  FakeModelServer,
  isRecord,
  type RecordedRequest,
  sendJson,
  split,
  startEventStream,
  write,
} from './fake-server.js';

/** A message's usage, as Anthropic reports it: `input_tokens` counts the input that was not cached. */
export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

export const DEFAULT_ANTHROPIC_USAGE: AnthropicUsage = {
  input_tokens: 11,
  output_tokens: 7,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};

/**
 * One content block of an answer. A tool call's `input` is the JSON text the
 * model writes, streamed in `input_json_delta` pieces exactly as given (it may
 * be broken JSON).
 */
export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id?: string; name: string; input: string };

/** One Server-Sent Event: its name and data, or a raw text written as it is (for malformed streams). */
export type AnthropicEvent = { event: string; data: unknown } | { raw: string };

/** What the server does with one request. */
export type AnthropicBehavior =
  | {
      kind: 'message';
      blocks: AnthropicBlock[];
      /** Default `tool_use` when a block is a tool call, else `end_turn`. */
      stopReason?: string;
      usage?: AnthropicUsage;
      /** How many deltas each block's text or input is streamed in. Default 3. */
      pieces?: number;
      /** A pause before each event (ms), for a model that takes its time (time to first token). */
      eventDelayMs?: number;
    }
  /** Streams exactly these events (a streaming request only). */
  | { kind: 'events'; events: AnthropicEvent[] }
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: unknown }
  /**
   * Sends the headers and events, then destroys the socket: no end of body.
   * With no events, the socket is destroyed before the headers (a connection reset).
   */
  | { kind: 'drop-after'; events: AnthropicEvent[] }
  /** Sends the headers and events (if any), then never another byte. */
  | { kind: 'hang'; events?: AnthropicEvent[] };

export interface FakeAnthropicOptions {
  /** The `model` echoed in answers when the request names none. Default `fake-claude`. */
  model?: string;
}

/**
 * The fake server. `start()` it, `enqueue` behaviours, point a client at
 * `baseURL` (the server's root, as the SDK wants it: it adds `/v1/messages`),
 * `close()` it.
 */
export class FakeAnthropicServer extends FakeModelServer<AnthropicBehavior> {
  private readonly model: string;

  constructor(options: FakeAnthropicOptions = {}) {
    super('');
    this.model = options.model ?? 'fake-claude';
  }

  protected async respond(request: RecordedRequest, res: ServerResponse): Promise<void> {
    if (request.method !== 'POST' || request.path.split('?')[0] !== '/v1/messages') {
      sendJson(
        res,
        404,
        errorBody('not_found_error', `fake-anthropic: no route ${request.method} ${request.path}`),
      );
      return;
    }
    const behavior = this.next();
    if (!behavior) {
      const message = `fake-anthropic: no behaviour queued for request #${request.index}`;
      sendJson(res, 418, errorBody('invalid_request_error', message));
      return;
    }
    const body = isRecord(request.body) ? request.body : {};
    const model = typeof body.model === 'string' ? body.model : this.model;
    const stream = body.stream === true;

    switch (behavior.kind) {
      case 'status':
        sendJson(
          res,
          behavior.status,
          behavior.body ?? errorBody('api_error', `fake-anthropic: status ${behavior.status}`),
          behavior.headers,
        );
        return;
      case 'message':
        if (!stream) {
          sendJson(res, 200, message(model, behavior));
          return;
        }
        await streamEvents(
          res,
          messageEvents(behavior.blocks, { ...behavior, model }),
          behavior.eventDelayMs,
        );
        res.end();
        return;
      case 'events':
        if (!stream) {
          sendJson(res, 400, errorBody('invalid_request_error', 'fake-anthropic: events need stream: true'));
          return;
        }
        await streamEvents(res, behavior.events);
        res.end();
        return;
      case 'drop-after':
        if (stream && behavior.events.length > 0) await streamEvents(res, behavior.events);
        res.socket?.destroy();
        return;
      case 'hang':
        if (stream) await streamEvents(res, behavior.events ?? []);
        return;
    }
  }
}

/** Starts a fake server on a free port. */
export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropicServer> {
  return new FakeAnthropicServer(options).start();
}

/**
 * The events of a streamed message, as Anthropic sends them: `message_start`
 * (with the input usage and one output token), a `ping`, each block's start,
 * deltas (in `pieces` parts) and stop, `message_delta` (stop reason, output
 * tokens) and `message_stop`.
 */
export function messageEvents(
  blocks: AnthropicBlock[],
  options: { model?: string; stopReason?: string; usage?: AnthropicUsage; pieces?: number } = {},
): AnthropicEvent[] {
  const usage = { ...DEFAULT_ANTHROPIC_USAGE, ...options.usage };
  const pieces = options.pieces ?? 3;
  const event = (name: string, data: Record<string, unknown>): AnthropicEvent => ({
    event: name,
    data: { type: name, ...data },
  });
  const events: AnthropicEvent[] = [
    event('message_start', {
      message: {
        id: `msg_${randomBytes(8).toString('hex')}`,
        type: 'message',
        role: 'assistant',
        model: options.model ?? 'fake-claude',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    }),
    event('ping', {}),
  ];
  for (const [index, block] of blocks.entries()) {
    if (block.type === 'text') {
      events.push(event('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      for (const text of split(block.text, pieces)) {
        events.push(event('content_block_delta', { index, delta: { type: 'text_delta', text } }));
      }
    } else {
      const id = block.id ?? `toolu_fake_${index}`;
      events.push(
        event('content_block_start', {
          index,
          content_block: { type: 'tool_use', id, name: block.name, input: {} },
        }),
      );
      for (const partial_json of ['', ...split(block.input, pieces)]) {
        events.push(
          event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }),
        );
      }
    }
    events.push(event('content_block_stop', { index }));
  }
  events.push(
    event('message_delta', {
      delta: { stop_reason: options.stopReason ?? stopReasonOf(blocks), stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    }),
    event('message_stop', {}),
  );
  return events;
}

/** A behaviour that answers `text`. */
export function anthropicText(
  text: string,
  options: { pieces?: number; usage?: AnthropicUsage; stopReason?: string; eventDelayMs?: number } = {},
): AnthropicBehavior {
  return { kind: 'message', blocks: [{ type: 'text', text }], ...options };
}

/** A tool call for {@link anthropicToolUse}; `input` is sent exactly as given (it may be broken JSON). */
export interface AnthropicToolCall {
  id?: string;
  name: string;
  input: string;
}

/** A behaviour that makes tool calls, after `text` when given (stop reason `tool_use`). */
export function anthropicToolUse(
  calls: AnthropicToolCall[],
  options: { text?: string; pieces?: number; usage?: AnthropicUsage; eventDelayMs?: number } = {},
): AnthropicBehavior {
  const { text, ...rest } = options;
  return {
    kind: 'message',
    blocks: [
      ...(text ? [{ type: 'text' as const, text }] : []),
      ...calls.map((call) => ({ type: 'tool_use' as const, ...call })),
    ],
    ...rest,
  };
}

/** A behaviour that answers an error status with Anthropic's error body (and headers, e.g. `retry-after`). */
export function anthropicError(
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): AnthropicBehavior {
  return { kind: 'status', status, headers, body: errorBody(type, message) };
}

/** An `error` event inside a stream, as Anthropic sends one when it is overloaded mid-answer. */
export function anthropicErrorEvent(type: string, message: string): AnthropicEvent {
  return { event: 'error', data: errorBody(type, message) };
}

function stopReasonOf(blocks: AnthropicBlock[]): string {
  return blocks.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn';
}

async function streamEvents(res: ServerResponse, events: AnthropicEvent[], delayMs = 0): Promise<void> {
  startEventStream(res);
  for (const item of events) {
    if (delayMs > 0) await sleep(delayMs);
    await write(
      res,
      'raw' in item ? item.raw : `event: ${item.event}\ndata: ${JSON.stringify(item.data)}\n\n`,
    );
  }
}

/** The non-streamed message the same blocks make. */
function message(model: string, behavior: Extract<AnthropicBehavior, { kind: 'message' }>): unknown {
  return {
    id: `msg_${randomBytes(8).toString('hex')}`,
    type: 'message',
    role: 'assistant',
    model,
    content: behavior.blocks.map((block, index) =>
      block.type === 'text'
        ? { type: 'text', text: block.text }
        : {
            type: 'tool_use',
            id: block.id ?? `toolu_fake_${index}`,
            name: block.name,
            input: parseInput(block),
          },
    ),
    stop_reason: behavior.stopReason ?? stopReasonOf(behavior.blocks),
    stop_sequence: null,
    usage: { ...DEFAULT_ANTHROPIC_USAGE, ...behavior.usage },
  };
}

function parseInput(block: { input: string }): unknown {
  try {
    return JSON.parse(block.input);
  } catch {
    return {};
  }
}

function errorBody(type: string, message: string): unknown {
  return { type: 'error', error: { type, message }, request_id: `req_${randomBytes(8).toString('hex')}` };
}
