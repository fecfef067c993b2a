/**
 * The OpenAI-compatible provider: Chat Completions through the official
 * `openai` SDK, streamed, for OpenAI and every server that speaks its wire
 * format (vLLM, Ollama, llama.cpp, LM Studio, OpenRouter, DeepSeek, DashScope).
 *
 * Retries are ours (streamed-request.ts), not the SDK's (`maxRetries: 0`): each try is one HTTP
 * request; a retryable failure (429, 408, 409, 5xx, a connection that failed
 * or dropped, a timeout, an unparsable chunk) waits `Retry-After` when the
 * server gave one, else exponential backoff with jitter, and tries again, until
 * `maxRetries` retries are spent or the next wait would take the total past
 * `maxRetryWaitMs`. The last error is then thrown, still marked retryable, for
 * the job system to retry the attempt later.
 *
 * Deltas and retries: text goes to `onDelta` as it arrives. A try that fails
 * mid-stream emits nothing more; before the next try `onRetry` is told
 * (`discardsDeltas: true`), and that try streams its answer from the start.
 * Nothing is buffered or replayed, and `ModelResponse.content` holds the
 * successful try's text only.
 *
 * Timeout: `timeoutMs` bounds the wait for the response headers and every gap
 * between two chunks, not the whole answer, so a long answer that keeps
 * streaming is never cut off while a server that stalls is.
 *
 * Without a `model`, the provider asks the server which models it serves
 * (`GET /models`, in the first try) and uses the first it lists, from then on:
 * a vLLM server serves one, Ollama lists the models it has pulled, newest
 * first. A server that lists none, or cannot list them, fails the run with
 * `ERR_MODEL_PROFILE_INVALID` saying to name the model.
 */
import { randomBytes } from 'node:crypto';
import type { Usage } from '@tether/protocol';
import type OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
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

/** Which body field carries the output token limit. */
export type MaxTokensField = 'max_tokens' | 'max_completion_tokens';

export interface OpenAIProviderOptions extends StreamingProviderOptions {
  /** The server's API root, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`. */
  baseURL: string;
  /** Left out: the first model the server lists (see the module comment). */
  model?: string | undefined;
  /** Sent as a bearer token; omitted, no `Authorization` header is sent. */
  apiKey?: string | undefined;
  /** The provider's name in logs and error messages (a profile name). Default `openai`. */
  name?: string | undefined;
  /** Default output token limit; sent only when set here or on the request. */
  maxOutputTokens?: number | undefined;
  /**
   * The body field for the token limit. Default `max_tokens`, which every
   * compatible server knows; OpenAI's reasoning models want `max_completion_tokens`.
   */
  maxTokensField?: MaxTokensField | undefined;
}

type ResolvedOptions = ResolvedStreamingOptions & { maxTokensField: MaxTokensField };

/** The SDK's module. */
type OpenAISdk = typeof import('openai');

/** The SDK, loaded on the first model turn (a worker that runs only replay runs never needs it). */
const openaiSdk = new SdkLoader('openai', () => import('openai'));

/** What a try needs of the loaded SDK: a client, and the SDK's error classes. */
interface Loaded {
  client: OpenAI;
  errors: SdkErrors;
}

/** A provider for an OpenAI-compatible Chat Completions server. */
export function createOpenAIProvider(options: OpenAIProviderOptions): ModelProvider {
  const config = resolveOptions(options);
  const load = openaiSdk.prepare(
    config.name,
    (loaded): Loaded => ({ client: newClient(loaded, config), errors: openaiErrors(loaded) }),
  );

  // The model, once known: the profile's, or the first the server lists.
  let model: Promise<ServedModel> | undefined =
    config.model === undefined ? undefined : Promise.resolve({ id: config.model });
  const modelFor = (sdk: Loaded, signal: AbortSignal): Promise<ServedModel> => {
    if (model === undefined) {
      const lookup = firstListedModel(sdk, config, signal);
      // A failed look-up is made again by the next try.
      lookup.catch(() => {
        if (model === lookup) model = undefined;
      });
      model = lookup;
    }
    return model;
  };

  return {
    name: config.name,
    model: config.model,
    async complete(request) {
      const loaded = await load();
      return completeWithRetries(config, request, () => tryOnce(loaded, config, request, modelFor));
    },
  };
}

/** The SDK's client for a profile. */
function newClient(loaded: OpenAISdk, config: ResolvedOptions): OpenAI {
  return new loaded.default({
    baseURL: config.baseURL,
    // The SDK fills every credential left undefined from process.env, and would
    // send the worker's own OPENAI_API_KEY to whatever server a profile names.
    apiKey: config.apiKey ?? 'no-key',
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    ...(config.apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
    maxRetries: 0,
    timeout: config.timeoutMs,
    logLevel: 'off',
  });
}

/** The fields of a `GET /models` entry that give its context window, in the order they are read. */
const WINDOW_FIELDS = [
  'context_length',
  'max_model_len',
  'max_context_length',
  'max_input_tokens',
  'context_window',
] as const;

/** The model a turn asks for, and its context window when the server listed it with one. */
interface ServedModel {
  id: string;
  contextWindow?: number | undefined;
}

/**
 * The context window a `GET /models` entry gives, by the field each server uses: OpenRouter's
 * `context_length`, vLLM's `max_model_len`, LM Studio's `max_context_length`, the Anthropic
 * Models API's `max_input_tokens` (which compatible servers copy), `context_window`.
 */
function listedContextWindow(entry: object): number | undefined {
  const listed = entry as Record<string, unknown>;
  for (const field of WINDOW_FIELDS) {
    const value = listed[field];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  }
  return undefined;
}

/** The first model `GET /models` lists; a server that cannot list any is a profile to fix. */
async function firstListedModel(
  { client, errors }: Loaded,
  config: ResolvedOptions,
  signal: AbortSignal,
): Promise<ServedModel> {
  const fix = 'name one in the profile (TETHER_MODEL for the default profile)';
  let listed: { id: string; contextWindow?: number | undefined } | undefined;
  try {
    const page = await client.models.list({ signal, maxRetries: 0, timeout: config.timeoutMs });
    const entry = page.data.find((each) => typeof each.id === 'string' && each.id !== '');
    if (entry) listed = { id: entry.id, contextWindow: listedContextWindow(entry) };
  } catch (error) {
    // A server without the route (404, 405, 501) will never list one; anything else may pass.
    if (error instanceof errors.APIError && [404, 405, 501].includes(error.status ?? 0)) {
      throw new AgentError(
        'ERR_MODEL_PROFILE_INVALID',
        `${config.name}: the profile names no model and the server does not list its models (GET /models answered ${error.status}): ${fix}`,
        { cause: error },
      );
    }
    throw error;
  }
  if (listed === undefined) {
    throw new AgentError(
      'ERR_MODEL_PROFILE_INVALID',
      `${config.name}: the profile names no model and the server lists none (GET /models): ${fix}`,
    );
  }
  return listed;
}

/**
 * One HTTP request, streamed to its end (the model asked of the server first
 * when the profile names none).
 */
function tryOnce(
  loaded: Loaded,
  config: ResolvedOptions,
  request: ModelRequest,
  modelFor: (loaded: Loaded, signal: AbortSignal) => Promise<ServedModel>,
): Promise<TryOutcome> {
  const turn = new StreamedTurn();
  let asked: ServedModel | undefined;
  const open = async (signal: AbortSignal) => {
    asked = await modelFor(loaded, signal);
    turn.startedAt = performance.now();
    return loaded.client.chat.completions.create(buildBody(config, asked.id, request), {
      signal,
      maxRetries: 0,
      timeout: config.timeoutMs,
    });
  };
  const outcome = streamOnce(config, request, open, turn, (...failure) =>
    classifyFailure(loaded.errors, ...failure),
  );
  // The model the server was asked for: a profile that names none learns it from the server's list.
  return outcome.then((done) => {
    if (!done.ok) return done;
    const window = asked?.contextWindow;
    return {
      ok: true,
      response: {
        ...done.response,
        model: asked?.id,
        ...(window === undefined ? {} : { contextWindow: window }),
      },
    };
  });
}

/** The SDK's error classes, as the streamed request's failure classification takes them. */
function openaiErrors(loaded: OpenAISdk): SdkErrors {
  return sdkErrors(loaded, (error) => statusInBody((error as InstanceType<OpenAISdk['APIError']>).error));
}

/** An error object sent inside a stream may carry an HTTP-like `code` (OpenRouter does). */
function statusInBody(body: unknown): number | undefined {
  if (typeof body !== 'object' || body === null || !('code' in body)) return undefined;
  const code = Number(body.code);
  return Number.isInteger(code) && code >= 400 && code < 600 ? code : undefined;
}

/** The request body; parameters the caller left unset are not sent at all. */
function buildBody(
  config: ResolvedOptions,
  model: string,
  request: ModelRequest,
): ChatCompletionCreateParamsStreaming {
  const body: ChatCompletionCreateParamsStreaming = {
    model,
    messages: request.messages.map(toWireMessage),
    stream: true,
    stream_options: { include_usage: true },
  };
  // OpenAI rejects an empty `tools` array.
  if (request.tools.length > 0) body.tools = request.tools.map(toWireTool);
  if (config.temperature !== undefined) body.temperature = config.temperature;
  const maxTokens = request.maxOutputTokens ?? config.maxOutputTokens;
  if (maxTokens !== undefined) {
    if (config.maxTokensField === 'max_completion_tokens') body.max_completion_tokens = maxTokens;
    else body.max_tokens = maxTokens;
  }
  return body;
}

function toWireMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: message.content };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      if (calls.length === 0) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        content: message.content === '' ? null : message.content,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
      };
    }
  }
}

function toWireTool(tool: ModelTool): ChatCompletionTool {
  return {
    type: 'function',
    function: {
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters as Record<string, unknown>,
    },
  };
}

interface PartialToolCall {
  id: string | undefined;
  name: string;
  arguments: string;
}

/**
 * One turn assembled from stream chunks. Tool calls arrive in fragments keyed
 * by `index` (parallel calls interleave); the first fragment of a call carries
 * its id and name, later ones pieces of `arguments`, which are kept exactly as
 * sent: malformed JSON is the tool executor's to report to the model.
 */
class StreamedTurn implements StreamedAnswer<ChatCompletionChunk> {
  readonly incomplete = 'the stream ended before the model finished (no finish_reason)';
  private content = '';
  private readonly calls: PartialToolCall[] = [];
  private readonly byIndex = new Map<number, PartialToolCall>();
  private finishReason: string | undefined;
  private usage: Usage | undefined;
  /** When the request was sent, and when the first piece of the answer came (performance.now()). */
  startedAt = 0;
  private firstTokenAt: number | undefined;

  get finished(): boolean {
    // The usage chunk comes last, after the finish reason; either shows the answer is whole.
    return this.finishReason !== undefined || this.usage !== undefined;
  }

  add(chunk: ChatCompletionChunk, emit: (text: string) => void): void {
    if (chunk.usage) {
      const input = chunk.usage.prompt_tokens ?? 0;
      const output = chunk.usage.completion_tokens ?? 0;
      // OpenAI counts the cached tokens in prompt_tokens, and says how many were cached.
      const cached = chunk.usage.prompt_tokens_details?.cached_tokens;
      this.usage = {
        inputTokens: input,
        outputTokens: output,
        totalTokens: chunk.usage.total_tokens ?? input + output,
        ...(typeof cached === 'number' ? { cacheReadTokens: cached } : {}),
      };
    }
    // `choices` is empty on the usage chunk, and absent on some servers' chunks.
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta;
      if (this.firstTokenAt === undefined && (delta?.content || delta?.tool_calls?.length)) {
        this.firstTokenAt = performance.now();
      }
      if (delta?.content) {
        this.content += delta.content;
        emit(delta.content);
      }
      for (const [position, fragment] of (delta?.tool_calls ?? []).entries()) {
        this.addToolCallFragment(fragment.index ?? position, fragment);
      }
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
    }
  }

  private addToolCallFragment(
    index: number,
    fragment: { id?: string; function?: { name?: string; arguments?: string } },
  ): void {
    let call = this.byIndex.get(index);
    // A new id at a known index is a new call (servers that number every call 0).
    if (!call || (fragment.id && call.id && fragment.id !== call.id)) {
      call = { id: fragment.id, name: '', arguments: '' };
      this.byIndex.set(index, call);
      this.calls.push(call);
    }
    call.id ??= fragment.id || undefined;
    const name = fragment.function?.name;
    // Most servers send the name once; some repeat it in every fragment.
    if (name && name !== call.name) call.name += name;
    call.arguments += fragment.function?.arguments ?? '';
  }

  response(): ModelResponse {
    const prefix = `call_${randomBytes(6).toString('hex')}`;
    return {
      content: this.content,
      toolCalls: this.calls.map((call, i) => ({
        id: call.id ?? `${prefix}_${i}`,
        name: call.name,
        // A call without arguments means "no arguments" (some servers send none for
        // parameterless tools); anything else, even broken JSON, goes through as is.
        arguments: call.arguments.trim() === '' ? '{}' : call.arguments,
      })),
      usage: this.usage ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      finishReason: this.finishReason ?? 'stop',
      firstTokenMs: this.firstTokenAt === undefined ? undefined : this.firstTokenAt - this.startedAt,
    };
  }
}

function resolveOptions(options: OpenAIProviderOptions): ResolvedOptions {
  const problems: string[] = [];
  const merged = {
    ...resolveStreamingOptions(options, 'openai', problems, true),
    maxTokensField: options.maxTokensField ?? 'max_tokens',
  };
  if (merged.maxTokensField !== 'max_tokens' && merged.maxTokensField !== 'max_completion_tokens') {
    problems.push(`maxTokensField must be 'max_tokens' or 'max_completion_tokens'`);
  }
  if (problems.length > 0) {
    throw new AgentError('ERR_MODEL_PROFILE_INVALID', `OpenAI provider options: ${problems.join('; ')}`);
  }
  return merged;
}
