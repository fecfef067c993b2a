/**
 * The Anthropic provider: the Messages API through the official
 * `@anthropic-ai/sdk`, streamed, with tool use, for Anthropic's API and the
 * servers that speak its wire format.
 *
 * The conversation in Messages' form: every system message joins the
 * top-level `system`; an assistant's tool calls become `tool_use` blocks
 * (their JSON arguments parsed, since the API takes an object: a call whose
 * arguments were not a JSON object goes back as `{}`, its tool result having
 * told the model what was wrong), tool results `tool_result` blocks of a user
 * message. Consecutive messages of one role are merged into one (the API wants
 * user and assistant to alternate), and empty text is left out (the API
 * refuses it).
 *
 * Prompt caching: every request has two `cache_control` breakpoints: the end
 * of the system prompt, which with the tools (the API puts them before it) is
 * the same on every turn of a run, and the last block of the last message, so
 * each turn reads from the cache the conversation the previous turn wrote. A
 * prefix shorter than the model's minimum (about 1,024 tokens) is not cached,
 * silently.
 *
 * Usage: `inputTokens` counts every input token, as OpenAI's `prompt_tokens`
 * does: Anthropic's `input_tokens` (the part not cached), plus
 * `cache_creation_input_tokens` (`cacheWriteTokens`) and
 * `cache_read_input_tokens` (`cacheReadTokens`).
 *
 * Finish reasons in the OpenAI provider's words: `end_turn` and
 * `stop_sequence` are `stop`, `tool_use` is `tool_calls`, `max_tokens` and
 * `model_context_window_exceeded` are `length`, `refusal` is
 * `content_filter`; any other passes as it is.
 *
 * Retries, deltas and the idle timeout are the OpenAI provider's
 * (streamed-request.ts): 429, 529 (overloaded), 408, 409, 5xx, a connection
 * that failed or dropped, a timeout, an unparsable event, and an `error` event
 * inside the stream of a retryable type (`overloaded_error`,
 * `rate_limit_error`, `api_error`) are retried, honouring `Retry-After`.
 */
import { randomBytes } from 'node:crypto';
import type Anthropic from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageDeltaUsage,
  MessageParam,
  RawMessageStreamEvent,
  TextBlockParam,
  Tool,
  Usage as WireUsage,
} from '@anthropic-ai/sdk/resources/messages';
import type { Usage } from '@tether/protocol';
import { AgentError } from '../errors.js';
import type { ChatMessage, ModelProvider, ModelRequest, ModelResponse, ModelTool } from './model-provider.js';
import { SdkLoader, sdkErrors } from './sdk-loader.js';
import {
  classifyFailure,
  completeWithRetries,
  type ResolvedStreamingOptions,
  resolveStreamingOptions,
  type SdkErrors,
  type StreamedAnswer,
  type StreamingProviderOptions,
  streamOnce,
  type TryOutcome,
} from './streamed-request.js';

/** `max_tokens` when neither the profile nor the request sets one (the API needs one). */
export const ANTHROPIC_DEFAULT_MAX_OUTPUT_TOKENS = 16_384;

export interface AnthropicProviderOptions extends StreamingProviderOptions {
  /** The server's root, e.g. `https://api.anthropic.com` (the SDK adds `/v1/messages`). */
  baseURL: string;
  /** Sent as the SDK sends a key; omitted, no credential is sent. */
  apiKey?: string | undefined;
  /** The model, e.g. `claude-sonnet-5-5`. */
  model: string;
  /** The provider's name in logs and error messages (a profile name). Default `anthropic`. */
  name?: string | undefined;
  /** `max_tokens` when the request sets none. Default {@link ANTHROPIC_DEFAULT_MAX_OUTPUT_TOKENS}. */
  maxOutputTokens?: number | undefined;
  /** Refused: the Messages API has no temperature. */
  temperature?: undefined;
}

type ResolvedOptions = ResolvedStreamingOptions & { model: string };

/** The SDK's module. */
type AnthropicSdk = typeof import('@anthropic-ai/sdk');

/** The SDK, loaded on first use (a worker that never runs an Anthropic profile never needs it). */
const anthropicSdk = new SdkLoader('@anthropic-ai/sdk', () => import('@anthropic-ai/sdk'));

/** A provider for Anthropic's Messages API. */
export function createAnthropicProvider(options: AnthropicProviderOptions): ModelProvider {
  const config = resolveOptions(options);
  const load = anthropicSdk.prepare(config.name, (loaded) => {
    const client = new loaded.default({
      baseURL: config.baseURL,
      // A key given here is the client's only credential: the SDK then reads no
      // ANTHROPIC_API_KEY, token or profile of the worker's own to send to the
      // server a profile names. Without one, the header it would carry is removed.
      apiKey: config.apiKey ?? 'no-key',
      ...(config.apiKey === undefined ? { defaultHeaders: { Authorization: null, 'X-Api-Key': null } } : {}),
      maxRetries: 0,
      timeout: config.timeoutMs,
      logLevel: 'off',
    });
    return { client, errors: anthropicErrors(loaded) };
  });

  return {
    name: config.name,
    model: config.model,
    async complete(request) {
      const { client, errors } = await load();
      return completeWithRetries(config, request, () => tryOnce(client, errors, config, request));
    },
  };
}

/** One HTTP request, streamed to its end. */
function tryOnce(
  client: Anthropic,
  errors: SdkErrors,
  config: ResolvedOptions,
  request: ModelRequest,
): Promise<TryOutcome> {
  const turn = new MessageTurn();
  const open = (signal: AbortSignal) => {
    turn.startedAt = performance.now();
    return client.messages.create(buildBody(config, request), {
      signal,
      maxRetries: 0,
      timeout: config.timeoutMs,
    });
  };
  return streamOnce(config, request, open, turn, (...failure) => classifyFailure(errors, ...failure));
}

/** The HTTP status each Messages error type stands for (an `error` event inside a stream has none). */
const ERROR_TYPE_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** The SDK's error classes, and the status an `error` event inside a stream stands for. */
function anthropicErrors(loaded: AnthropicSdk): SdkErrors {
  return sdkErrors(
    loaded,
    (error) => ERROR_TYPE_STATUS[(error as InstanceType<AnthropicSdk['APIError']>).type ?? ''],
  );
}

/** The request body; parameters the caller left unset are not sent at all. */
function buildBody(config: ResolvedOptions, request: ModelRequest): MessageCreateParamsStreaming {
  const { system, messages } = toWire(request.messages);
  const body: MessageCreateParamsStreaming = {
    model: config.model,
    max_tokens: request.maxOutputTokens ?? config.maxOutputTokens ?? ANTHROPIC_DEFAULT_MAX_OUTPUT_TOKENS,
    messages,
    stream: true,
  };
  if (system.length > 0) body.system = system;
  if (request.tools.length > 0) body.tools = request.tools.map(toWireTool);
  return body;
}

type WireMessage = { role: 'user' | 'assistant'; content: ContentBlockParam[] };

/** The loop's messages in Messages' form, with the two cache breakpoints (see the module comment). */
function toWire(messages: readonly ChatMessage[]): { system: TextBlockParam[]; messages: MessageParam[] } {
  const system: TextBlockParam[] = [];
  const wire: WireMessage[] = [];
  const add = (role: WireMessage['role'], blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = wire.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else wire.push({ role, content: blocks });
  };
  const text = (content: string): TextBlockParam[] =>
    content === '' ? [] : [{ type: 'text', text: content }];

  for (const message of messages) {
    switch (message.role) {
      case 'system':
        system.push(...text(message.content));
        break;
      case 'user':
        add('user', text(message.content));
        break;
      case 'tool':
        add('user', [
          {
            type: 'tool_result',
            tool_use_id: message.toolCallId,
            ...(message.content === '' ? {} : { content: message.content }),
          },
        ]);
        break;
      case 'assistant':
        add('assistant', [
          ...text(message.content),
          ...(message.toolCalls ?? []).map(
            (call): ContentBlockParam => ({
              type: 'tool_use',
              id: call.id,
              name: call.name,
              input: toolInput(call.arguments),
            }),
          ),
        ]);
        break;
    }
  }
  const lastSystem = system.at(-1);
  if (lastSystem) lastSystem.cache_control = { type: 'ephemeral' };
  const lastBlock = wire.at(-1)?.content.at(-1);
  if (lastBlock && isCacheable(lastBlock)) lastBlock.cache_control = { type: 'ephemeral' };
  return { system, messages: wire };
}

/** The blocks this provider sends, all of which may carry a cache breakpoint. */
function isCacheable(
  block: ContentBlockParam,
): block is Extract<ContentBlockParam, { type: 'text' | 'tool_use' | 'tool_result' }> {
  return block.type === 'text' || block.type === 'tool_use' || block.type === 'tool_result';
}

/** A tool call's arguments as the object the API wants; `{}` for what is not a JSON object. */
function toolInput(args: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(args);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

function toWireTool(tool: ModelTool): Tool {
  return {
    name: tool.name,
    description: tool.description,
    input_schema: tool.parameters as Tool.InputSchema,
  };
}

interface PartialToolCall {
  id: string | undefined;
  name: string;
  /** The `input_json_delta` pieces so far. */
  json: string;
  /** The input `content_block_start` carried (`{}` when the input is streamed). */
  started: unknown;
}

/** What each stop reason is in the OpenAI provider's words. */
const FINISH_REASONS: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  refusal: 'content_filter',
};

/**
 * One turn assembled from stream events. Blocks are keyed by `index`; a
 * `tool_use` block's input arrives as `input_json_delta` pieces, kept exactly
 * as sent: malformed JSON is the tool executor's to report to the model.
 */
class MessageTurn implements StreamedAnswer<RawMessageStreamEvent> {
  readonly incomplete = 'the stream ended before the message did (no message_stop)';
  private content = '';
  private readonly calls: PartialToolCall[] = [];
  private readonly byIndex = new Map<number, PartialToolCall>();
  private stopReason: string | undefined;
  private usage: { input: number; output: number; write?: number; read?: number } | undefined;
  /** Whether `message_stop` came: the answer is whole. */
  finished = false;
  /** When the request was sent, and when the first piece of the answer came (performance.now()). */
  startedAt = 0;
  private firstTokenAt: number | undefined;

  add(event: RawMessageStreamEvent, emit: (text: string) => void): void {
    switch (event.type) {
      case 'message_start':
        this.readUsage(event.message.usage);
        break;
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'tool_use') {
          // A tool call's first piece is its start, with its name.
          this.firstTokenAt ??= performance.now();
          const call = { id: block.id || undefined, name: block.name, json: '', started: block.input };
          this.byIndex.set(event.index, call);
          this.calls.push(call);
        } else if (block.type === 'text' && block.text) {
          this.addText(block.text, emit);
        }
        break;
      }
      case 'content_block_delta': {
        const delta = event.delta;
        if (delta.type === 'text_delta') this.addText(delta.text, emit);
        else if (delta.type === 'input_json_delta') {
          const call = this.byIndex.get(event.index);
          if (call) call.json += delta.partial_json;
        }
        break;
      }
      case 'message_delta':
        if (event.delta.stop_reason) this.stopReason = event.delta.stop_reason;
        this.readUsage(event.usage);
        break;
      case 'message_stop':
        this.finished = true;
        break;
      case 'content_block_stop':
        break;
    }
  }

  private addText(text: string, emit: (text: string) => void): void {
    if (text) this.firstTokenAt ??= performance.now();
    this.content += text;
    emit(text);
  }

  /** `message_start` has the input counts; `message_delta` the output, cumulative, and input counts when it repeats them. */
  private readUsage(usage: WireUsage | MessageDeltaUsage): void {
    const current = this.usage ?? { input: 0, output: 0 };
    if (typeof usage.input_tokens === 'number') current.input = usage.input_tokens;
    if (typeof usage.output_tokens === 'number') current.output = usage.output_tokens;
    if (typeof usage.cache_creation_input_tokens === 'number')
      current.write = usage.cache_creation_input_tokens;
    if (typeof usage.cache_read_input_tokens === 'number') current.read = usage.cache_read_input_tokens;
    this.usage = current;
  }

  response(): ModelResponse {
    const prefix = `toolu_${randomBytes(6).toString('hex')}`;
    return {
      content: this.content,
      toolCalls: this.calls.map((call, i) => ({
        id: call.id ?? `${prefix}_${i}`,
        name: call.name,
        arguments: callArguments(call),
      })),
      usage: this.totalUsage(),
      finishReason:
        this.stopReason === undefined ? 'stop' : (FINISH_REASONS[this.stopReason] ?? this.stopReason),
      firstTokenMs: this.firstTokenAt === undefined ? undefined : this.firstTokenAt - this.startedAt,
    };
  }

  private totalUsage(): Usage {
    if (!this.usage) return { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
    const { input, output, write, read } = this.usage;
    const inputTokens = input + (write ?? 0) + (read ?? 0);
    return {
      inputTokens,
      outputTokens: output,
      totalTokens: inputTokens + output,
      ...(read === undefined ? {} : { cacheReadTokens: read }),
      ...(write === undefined ? {} : { cacheWriteTokens: write }),
    };
  }
}

/**
 * A call's arguments as the loop wants them, a JSON string: the streamed
 * pieces as they are; when none came, the input the block started with (a
 * server that does not stream tool input), `{}` for an empty one.
 */
function callArguments(call: PartialToolCall): string {
  if (call.json.trim() !== '') return call.json;
  const started = call.started;
  const empty =
    typeof started !== 'object' || started === null || Object.keys(started as object).length === 0;
  return empty ? '{}' : JSON.stringify(started);
}

function resolveOptions(options: AnthropicProviderOptions): ResolvedOptions {
  const problems: string[] = [];
  const merged = resolveStreamingOptions(options, 'anthropic', problems);
  if (merged.temperature !== undefined) {
    problems.push('temperature is not a parameter of the Messages API: leave it out');
  }
  if (problems.length > 0) {
    throw new AgentError('ERR_MODEL_PROFILE_INVALID', `Anthropic provider options: ${problems.join('; ')}`);
  }
  return merged;
}
