import type { ToolCall, Usage } from '@tether/protocol';
import type { AgentError } from '../errors.js';
import type { ModelPrices } from './model-profiles.js';

/** One message of a conversation, in the loop's own form (not any vendor's). */
export type ChatMessage =
  | { role: 'system'; content: string }
  /**
   * `steered`: a message sent to the live run (`POST /v1/runs/:id/messages`), not its input.
   * `reminder`: told by the attempt loop (a run with `output` answered in plain text, or the summary
   * compaction put in place of earlier turns), not its input.
   */
  | { role: 'user'; content: string; steered?: true; reminder?: true }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

/** A tool as the model is offered it. */
export interface ModelTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments (a TypeBox schema is one). */
  parameters: object;
}

/** Told to `onRetry` before a provider tries a failed request again. */
export interface ModelRetryEvent {
  /** The try that failed, from 1. */
  attempt: number;
  /** How long the provider waits before the next try. */
  delayMs: number;
  error: AgentError;
  /**
   * Whether the failed try had already passed text to `onDelta`. If so, that
   * text is void: the next try streams its answer from the start.
   */
  discardsDeltas: boolean;
}

export interface ModelRequest {
  messages: ChatMessage[];
  tools: ModelTool[];
  /** Overrides the provider's default for this request. */
  maxOutputTokens?: number | undefined;
  /** Stops the request (and any wait between retries) promptly. */
  signal: AbortSignal;
  /**
   * Streamed text, as it arrives. A preview: if a try fails mid-stream and is
   * retried, `onRetry` says so and the next try streams again from the start.
   * The returned `ModelResponse.content` is the authority.
   */
  onDelta?: ((text: string) => void) | undefined;
  /** Called before each retry of a failed try. */
  onRetry?: ((event: ModelRetryEvent) => void) | undefined;
  /** Called when the turn goes to another profile (see `createFallbackProvider`). */
  onFallback?: ((event: ModelFallbackEvent) => void) | undefined;
}

/** A turn taken from one profile to the next: `reason`, the failure (or the open breaker) that moved it. */
export interface ModelFallbackEvent {
  from: string;
  to: string;
  reason: string;
}

export interface ModelResponse {
  content: string;
  /** The tool calls of this turn, in the order the model made them; `arguments` exactly as sent. */
  toolCalls: ToolCall[];
  /** Zeros when the server reported no usage. */
  usage: Usage;
  /**
   * Why the model stopped. Some servers answer `stop` although they made tool
   * calls: look at `toolCalls`, not at this, to decide whether to run tools.
   */
  finishReason: 'stop' | 'tool_calls' | 'length' | 'content_filter' | (string & {});
  /**
   * Time to first token: ms from the start of the request that answered (the
   * successful try's) to the first piece of its answer streamed back (text or
   * a tool call's fragment). Undefined from a provider that does not stream.
   */
  firstTokenMs?: number | undefined;
  /** The profile that answered, when it may differ from the provider's (a fallback's); its prices with it. */
  profile?: string | undefined;
  prices?: ModelPrices | undefined;
  /** The model's context window, when the server said it (`GET /models` of a profile that names no model). */
  contextWindow?: number | undefined;
  /**
   * The model that answered, as the server was asked for it: the profile's, or
   * the first the server listed when the profile names none. Undefined: the
   * provider's `model`.
   */
  model?: string | undefined;
}

/** What the attempt loop talks to. One `complete` call is one model turn. */
export interface ModelProvider {
  /** The profile's name (in logs, errors and metrics), `replay` for a replay script. */
  readonly name: string;
  /** The model the server is asked for (the profile's `model`; `replay` for a replay script). */
  readonly model?: string | undefined;
  /** What its tokens cost (the profile's `prices`), when known. */
  readonly prices?: ModelPrices | undefined;
  /** Tokens the model's context holds, when known before a turn (the profile's, or its family's). */
  readonly contextWindow?: number | undefined;
  /** Share of the window past which a run compacts (the profile's `compactAt`). */
  readonly compactAt?: number | undefined;
  /**
   * Runs one model turn. Rejects with an `AgentError` only: `retryable` tells
   * the job system whether the attempt may succeed later.
   */
  complete(request: ModelRequest): Promise<ModelResponse>;
}

/** The logger a provider reports retries to (pino's shape: `logger.warn(details, message)`). */
export interface ProviderLogger {
  warn(details: Record<string, unknown>, message: string): void;
}
