/**
 * The replay provider: plays a script of turns instead of asking a model, for
 * demos and tests. Enabled only by server configuration (see `resolveProvider`).
 *
 * It is stateless on purpose. A run resumes from a checkpoint, possibly in
 * another worker process, so the provider cannot count its own calls: the turn
 * it plays is the number of assistant messages already in the conversation
 * after its input (the last user message: a session run has the session's
 * earlier turns before it).
 * Turn 0 answers the first request; turn 1 answers once turn 0's tool results
 * are in; and so on.
 */
import { Value } from '@sinclair/typebox/value';
import {
  ReplayContentTurnSchema,
  type ReplayScript,
  ReplayToolCallsTurnSchema,
  RUN_LIMITS,
  type ToolCall,
} from '@tether/protocol';
import { AgentError } from '../errors.js';
import type { ModelProvider, ModelRequest, ModelResponse } from './model-provider.js';
import { abortableSleep } from './retry.js';

/**
 * Checks a script and returns it typed, or throws `ERR_MODEL_REPLAY_SCRIPT_INVALID`
 * naming the turn and the field at fault.
 */
export function parseReplayScript(input: unknown): ReplayScript {
  const fail = (message: string): never => {
    throw new AgentError('ERR_MODEL_REPLAY_SCRIPT_INVALID', `Invalid replay script: ${message}`);
  };
  if (!Array.isArray(input)) return fail('expected an array of turns');
  if (input.length < 1) return fail('it has no turns (at least 1)');
  if (input.length > RUN_LIMITS.replayMaxTurns) {
    return fail(`it has ${input.length} turns (at most ${RUN_LIMITS.replayMaxTurns})`);
  }
  input.forEach((turn: unknown, index) => {
    // Check against the variant the turn means to be, so the message says what
    // is wrong with it rather than "matches no variant".
    const schema =
      typeof turn === 'object' && turn !== null && 'toolCalls' in turn
        ? ReplayToolCallsTurnSchema
        : ReplayContentTurnSchema;
    if (Value.Check(schema, turn)) return;
    const error = Value.Errors(schema, turn).First();
    if (error) {
      const where = error.path === '' ? '' : ` at ${error.path.slice(1).replaceAll('/', '.')}`;
      fail(
        `turn ${index}${where}: ${error.message}. Each turn is { "toolCalls": [{ "name", "arguments": {} }] } or { "content": "final text" }`,
      );
    }
  });
  return input as ReplayScript;
}

export interface ReplayProviderOptions {
  /** Pause between streamed pieces of text (ms), for demos. Default 0. */
  deltaDelayMs?: number;
}

/** A provider that plays `script` (validated here; throws on an invalid one). */
export function createReplayProvider(script: unknown, options: ReplayProviderOptions = {}): ModelProvider {
  return playReplayScript(parseReplayScript(script), options);
}

/** A provider that plays a script already checked by {@link parseReplayScript}. */
export function playReplayScript(script: ReplayScript, options: ReplayProviderOptions = {}): ModelProvider {
  // A copy: the caller may reuse or change its array; the provider must not see that.
  const turns = structuredClone(script);
  const deltaDelayMs = options.deltaDelayMs ?? 0;

  return {
    name: 'replay',
    model: 'replay',
    async complete(request: ModelRequest): Promise<ModelResponse> {
      throwIfAborted(request.signal);
      const startedAt = performance.now();
      let firstTokenAt: number | undefined;
      // The run's own turns: those after its input, the last user message not sent to it while it ran
      // nor a reminder of the loop's (a session's earlier turns come before it).
      const input = request.messages.findLastIndex(
        (message) => message.role === 'user' && !message.steered && !message.reminder,
      );
      const index = request.messages
        .slice(input + 1)
        .filter((message) => message.role === 'assistant').length;
      const turn = turns[index];
      if (!turn) {
        throw new AgentError(
          'ERR_MODEL_REPLAY_EXHAUSTED',
          `The replay script has ${turns.length} turn(s) and all have been played; the conversation needs turn ${index}. End the script with a { "content": "..." } turn.`,
        );
      }

      const content = turn.content ?? '';
      for (const piece of pieces(content)) {
        if (deltaDelayMs > 0) await abortableSleep(deltaDelayMs, request.signal, abortError);
        throwIfAborted(request.signal);
        firstTokenAt ??= performance.now();
        request.onDelta?.(piece);
      }

      const toolCalls: ToolCall[] =
        'toolCalls' in turn
          ? turn.toolCalls.map((call, i) => ({
              id: `call_${index}_${i}`,
              name: call.name,
              arguments: JSON.stringify(call.arguments),
            }))
          : [];
      const inputTokens = estimateTokens(request.messages.map((message) => message.content).join('\n'));
      const outputTokens = estimateTokens(content + toolCalls.map((call) => call.arguments).join(''));
      return {
        content,
        toolCalls,
        usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
        finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
        // The whole turn is at hand: its first piece, or its tool calls, come at once.
        firstTokenMs: (firstTokenAt ?? performance.now()) - startedAt,
      };
    },
  };
}

/** Splits text into word-sized pieces (each keeps its trailing whitespace), as a model streams. */
function pieces(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/** A deterministic stand-in for a tokenizer: about four characters a token. */
function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function abortError(): AgentError {
  return new AgentError('ERR_MODEL_ABORTED', 'replay: model request aborted');
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortError();
}
