/**
 * A session's transcript: each run's messages as entries, stored in order and
 * served as they are. Entries keep tool calls paired with their results, so a
 * later run can be given them as history: every call of an assistant entry is
 * followed, before the next user or assistant entry, by one `tool` entry
 * answering it; a call the run never answered gets a synthetic result saying
 * it was interrupted.
 */
import type { ToolCall } from '@tether/protocol';
import { truncateMiddle } from '../attempt/run-attempt.js';
import type { ChatMessage } from '../providers/model-provider.js';
import { cachedMessageTokens, messageTokens } from './tokens.js';

/** One transcript entry, as stored (JSON, one Redis list element each) and as served by GET /v1/sessions/:id/messages. */
export interface TranscriptEntry {
  role: 'user' | 'assistant' | 'tool';
  content: string;
  runId: string;
  /** ISO 8601. */
  at: string;
  /** Assistant only, when it called tools. */
  toolCalls?: ToolCall[];
  /** Tool only: the call it answers. */
  toolCallId?: string;
  /** Tool only: the tool's name (for display). */
  name?: string;
  /** Tokens of this entry for the model (gpt-tokenizer, o200k_base encoding), counted once when written. */
  tokens?: number;
  /**
   * Tool only, when `content` is longer than `SHORTENED_TOOL_RESULT_CHARS`:
   * the tokens of this entry with its content shortened as an old turn's is in
   * a windowed history (`shortenToolResult`), counted once when written so
   * that windowing never has to tokenize.
   */
  shortenedTokens?: number;
}

/** Characters an old turn's tool result keeps when a history over budget shortens it (head and tail, and a note). */
export const SHORTENED_TOOL_RESULT_CHARS = 500;

/** A tool result as an old turn shows it in a history over budget: its head and tail, with a note of the cut. */
export function shortenToolResult(content: string): string {
  return truncateMiddle(content, SHORTENED_TOOL_RESULT_CHARS);
}

export interface TurnEntriesOptions {
  runId: string;
  /** ISO 8601: the time every entry of the turn carries. */
  at: string;
  /**
   * The run was stopped (cancelled, or interrupted by a newer message of its
   * session): the results made up for its unanswered calls say so.
   */
  interrupted?: boolean;
}

/** The result given to a tool call that a run ended without answering. */
export const INTERRUPTED_TOOL_RESULT = '[interrupted: the run ended before this tool call returned a result]';

/** The result given to a tool call of a run that was stopped before the call answered. */
export const CANCELLED_TOOL_RESULT =
  '[interrupted: the run was stopped before this tool call returned a result]';

interface Counts {
  tokens: number;
  shortenedTokens?: number;
}

// Shortened counts, once per message object (see `cachedMessageTokens`): a run's messages are
// counted after every checkpoint save, and only the new ones cost anything.
const counted = new WeakMap<ChatMessage, Counts>();

function countsOf(message: ChatMessage): Counts {
  let counts = counted.get(message);
  if (counts === undefined) {
    counts = { tokens: cachedMessageTokens(message) };
    if (message.role === 'tool' && message.content.length > SHORTENED_TOOL_RESULT_CHARS) {
      counts.shortenedTokens = messageTokens({ ...message, content: shortenToolResult(message.content) });
    }
    counted.set(message, counts);
  }
  return counts;
}

/**
 * A run's own messages as transcript entries, each with its `tokens`: from
 * the first `user` message on (what comes before it, the system prompt, is
 * left out, and so is any later `system` message). A run that started from a
 * session's history passes its messages after that history: a slice keeps
 * the message objects, and so their cached counts. Every tool call without a
 * result gets a synthetic one, placed after the results its turn does have.
 *
 * Counts are cached per message object, so calling this after every
 * checkpoint save costs only the messages added since.
 */
export function turnEntries(messages: ChatMessage[], opts: TurnEntriesOptions): TranscriptEntry[] {
  const { runId, at } = opts;
  const missing = opts.interrupted ? CANCELLED_TOOL_RESULT : INTERRUPTED_TOOL_RESULT;
  const entries: TranscriptEntry[] = [];
  // The calls of the last assistant message that have no result yet.
  let open: ToolCall[] = [];
  const closeOpen = () => {
    for (const call of open) {
      entries.push({
        role: 'tool',
        content: missing,
        runId,
        at,
        toolCallId: call.id,
        name: call.name,
        tokens: messageTokens({ role: 'tool', content: missing, toolCallId: call.id }),
      });
    }
    open = [];
  };

  const start = messages.findIndex((message) => message.role === 'user');
  if (start === -1) return entries;
  for (let i = start; i < messages.length; i++) {
    const message = messages[i] as ChatMessage;
    switch (message.role) {
      case 'system':
        break;
      case 'user':
        closeOpen();
        entries.push({ role: 'user', content: message.content, runId, at, ...countsOf(message) });
        break;
      case 'assistant': {
        closeOpen();
        const calls = message.toolCalls ?? [];
        entries.push({
          role: 'assistant',
          content: message.content,
          runId,
          at,
          ...(calls.length > 0 ? { toolCalls: calls } : {}),
          ...countsOf(message),
        });
        open = [...calls];
        break;
      }
      case 'tool': {
        const index = open.findIndex((call) => call.id === message.toolCallId);
        const call = index === -1 ? undefined : open[index];
        if (index !== -1) open.splice(index, 1);
        entries.push({
          role: 'tool',
          content: message.content,
          runId,
          at,
          toolCallId: message.toolCallId,
          ...(call ? { name: call.name } : {}),
          ...countsOf(message),
        });
        break;
      }
    }
  }
  closeOpen();
  return entries;
}
