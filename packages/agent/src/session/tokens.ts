/**
 * Token counts of conversation text for the session history's budget, with
 * gpt-tokenizer's o200k_base encoding (the GPT-4o and later models' own). For
 * other models the count is an estimate of the same order, which is all a
 * history budget needs.
 */
import { createRequire } from 'node:module';
import type { ToolCall } from '@tether/protocol';

type O200k = typeof import('gpt-tokenizer/encoding/o200k_base');

/**
 * Tokens the chat format adds to each message besides its text: the start
 * marker, the role, the separator and the end marker (OpenAI's counting guide
 * gives 3 per message plus the role).
 */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/** Tokens each tool call of an assistant message adds besides its id, name and arguments (type and wrapper). */
export const TOOL_CALL_OVERHEAD_TOKENS = 3;

// Text that looks like a special token (`<|endoftext|>`) is counted as the
// plain text it is, as the model servers treat it in a message: never refused.
const AS_TEXT = { disallowedSpecial: new Set<string>() };

let encoding: O200k | undefined;

/**
 * The encoding, loaded on first use: its ranks take about 0.4 s and 35 MB to
 * load, which processes that never count (the API, the CLI) should not pay.
 * Loaded through `require` because counting is synchronous.
 */
function o200k(): O200k {
  encoding ??= createRequire(import.meta.url)('gpt-tokenizer/encoding/o200k_base') as O200k;
  return encoding;
}

/**
 * Tokens of `text` in the o200k_base encoding, without any per-message
 * overhead. The first call loads the encoding (about 0.4 s): a worker may call
 * `countTokens('')` at start to pay that before its first session run.
 */
export function countTokens(text: string): number {
  if (text.length === 0) {
    o200k();
    return 0;
  }
  return o200k().countTokens(text, AS_TEXT);
}

/** The fields of a message (a `ChatMessage` or a transcript entry) that the model is sent. */
export interface CountableMessage {
  role: string;
  content: string;
  toolCalls?: ToolCall[] | undefined;
  toolCallId?: string | undefined;
}

/** Tokens of one message for the model: its text, its tool calls or the id of the call it answers, and the format's overhead. */
export function messageTokens(message: CountableMessage): number {
  let tokens = MESSAGE_OVERHEAD_TOKENS + countTokens(message.content);
  if (message.toolCallId !== undefined) tokens += countTokens(message.toolCallId);
  for (const call of message.toolCalls ?? []) {
    tokens +=
      TOOL_CALL_OVERHEAD_TOKENS + countTokens(call.id) + countTokens(call.name) + countTokens(call.arguments);
  }
  return tokens;
}

// Counted once per message object: the loop's messages are never changed in place (compaction puts
// new objects in), so a count stays true for as long as its object lives.
const counted = new WeakMap<CountableMessage, number>();

/**
 * {@link messageTokens}, counted once per message object: counting a run's whole request before
 * every model turn then costs only the messages added since the last count.
 */
export function cachedMessageTokens(message: CountableMessage): number {
  let tokens = counted.get(message);
  if (tokens === undefined) {
    tokens = messageTokens(message);
    counted.set(message, tokens);
  }
  return tokens;
}
