/**
 * A session's transcript as the history a new run starts from, within a token
 * budget.
 *
 * Strategy, in order, only as far as needed to fit the budget:
 * 1. the whole transcript, as it is;
 * 2. old tool results shortened (`shortenToolResult`: head, tail and a note),
 *    the oldest first;
 * 3. whole turns dropped from the oldest end, and then as few old tool results
 *    shortened as step 2 would (the fewest turns are dropped: those that would
 *    not fit even with every old tool result shortened).
 *
 * Invariants: a turn is a `user` entry and what follows it up to the next one;
 * the most recent turn is never dropped and its tool results never shortened,
 * so the result can stay over budget when that turn alone is. Every assistant
 * tool call is followed by exactly one result (a stored one, or a synthetic
 * one saying the call was interrupted) and no result appears without its call.
 *
 * With the counts stored in the entries (`tokens`, `shortenedTokens`) this is
 * arithmetic: only the results actually shortened are cut, and nothing is
 * tokenized. Entries without them are counted here.
 */
import type { ToolCall } from '@tether/protocol';
import type { ChatMessage } from '../providers/model-provider.js';
import { messageTokens } from './tokens.js';
import {
  INTERRUPTED_TOOL_RESULT,
  SHORTENED_TOOL_RESULT_CHARS,
  shortenToolResult,
  type TranscriptEntry,
} from './transcript.js';

/** The history budget of a session run when none is configured (`TETHER_SESSION_HISTORY_TOKENS`). */
export const DEFAULT_SESSION_HISTORY_TOKENS = 64_000;

/** What windowing left out, for the run's `session.truncated` event. */
export interface HistoryTruncation {
  /** Whole turns dropped from the oldest end. */
  droppedTurns: number;
  /** The stored entries of those turns. */
  droppedEntries: number;
  /** Tool results of the turns kept that were shortened. */
  shortenedToolResults: number;
  /** Tokens of the whole transcript. */
  tokensBefore: number;
  /** Tokens of `messages`. */
  tokensAfter: number;
  budget: number;
}

export interface HistoryWindow {
  /** The history, oldest first, tool calls paired with their results. */
  messages: ChatMessage[];
  /** Present when the transcript did not fit the budget as it is. */
  truncated?: HistoryTruncation;
}

interface Item {
  message: ChatMessage;
  tokens: number;
  /** Tool results longer than `SHORTENED_TOOL_RESULT_CHARS`: the entry they came from. */
  long?: TranscriptEntry;
  /** Tokens once shortened; counted when first needed for an entry that lacks them. */
  shortenedTokens?: number;
}

interface Turn {
  items: Item[];
  tokens: number;
  /** Stored entries the turn holds (synthetic results not included, orphan results included). */
  entries: number;
}

/**
 * The transcript's messages for a new run's history, windowed to
 * `budgetTokens` (see the module's strategy). `truncated` says what was
 * shortened or dropped, when anything was.
 */
export function historyMessages(entries: TranscriptEntry[], budgetTokens: number): HistoryWindow {
  if (!Number.isFinite(budgetTokens) || budgetTokens < 0) {
    throw new RangeError(`budgetTokens must be a number of tokens >= 0, got ${budgetTokens}.`);
  }
  const turns = pairedTurns(entries);
  let total = 0;
  for (const turn of turns) total += turn.tokens;
  if (total <= budgetTokens) return { messages: flatten(turns, 0) };

  const tokensBefore = total;
  const last = turns.length - 1;

  // Drop the oldest turns that would not fit even with every old tool result shortened.
  let floor = total;
  for (let t = 0; t < last; t++) floor -= savings(turns[t] as Turn);
  let first = 0;
  let droppedEntries = 0;
  while (first < last && floor > budgetTokens) {
    const turn = turns[first] as Turn;
    floor -= turn.tokens - savings(turn);
    total -= turn.tokens;
    droppedEntries += turn.entries;
    first++;
  }

  // Shorten the kept old turns' tool results, oldest first, until the rest fits.
  let shortened = 0;
  for (let t = first; t < last && total > budgetTokens; t++) {
    for (const item of (turns[t] as Turn).items) {
      if (total <= budgetTokens) break;
      const saved = itemSavings(item);
      const entry = item.long;
      if (saved <= 0 || entry === undefined) continue;
      item.message = {
        role: 'tool',
        toolCallId: entry.toolCallId as string,
        content: shortenToolResult(entry.content),
      };
      item.tokens -= saved;
      total -= saved;
      shortened++;
    }
  }

  return {
    messages: flatten(turns, first),
    truncated: {
      droppedTurns: first,
      droppedEntries,
      shortenedToolResults: shortened,
      tokensBefore,
      tokensAfter: total,
      budget: budgetTokens,
    },
  };
}

/** Tokens that shortening a tool result saves (0 for any other item or a result short enough already). */
function itemSavings(item: Item): number {
  const entry = item.long;
  if (entry === undefined) return 0;
  item.shortenedTokens ??=
    entry.shortenedTokens ??
    messageTokens({ role: 'tool', content: shortenToolResult(entry.content), toolCallId: entry.toolCallId });
  return Math.max(0, item.tokens - item.shortenedTokens);
}

/** Tokens that shortening all of a turn's long tool results saves. */
function savings(turn: Turn): number {
  let saved = 0;
  for (const item of turn.items) saved += itemSavings(item);
  return saved;
}

/**
 * The entries as turns of messages, with tool calls and results paired: a
 * result is kept only right after the assistant entry that made its call
 * (once), and each call left without one gets the interrupted result, after
 * the results its turn does have.
 */
function pairedTurns(entries: TranscriptEntry[]): Turn[] {
  const turns: Turn[] = [];
  let turn: Turn | undefined;
  let open: ToolCall[] = [];
  const closeOpen = () => {
    if (turn === undefined) return;
    for (const call of open) {
      const message: ChatMessage = { role: 'tool', toolCallId: call.id, content: INTERRUPTED_TOOL_RESULT };
      const tokens = messageTokens(message);
      turn.items.push({ message, tokens });
      turn.tokens += tokens;
    }
    open = [];
  };
  const add = (item: Item) => {
    if (turn === undefined) {
      turn = { items: [], tokens: 0, entries: 0 };
      turns.push(turn);
    }
    turn.items.push(item);
    turn.tokens += item.tokens;
  };

  for (const entry of entries) {
    if (entry.role === 'user') {
      closeOpen();
      turn = { items: [], tokens: 0, entries: 0 };
      turns.push(turn);
      add({ message: { role: 'user', content: entry.content }, tokens: tokensOf(entry) });
    } else if (entry.role === 'assistant') {
      closeOpen();
      const calls = entry.toolCalls ?? [];
      const message: ChatMessage =
        calls.length > 0
          ? { role: 'assistant', content: entry.content, toolCalls: calls }
          : { role: 'assistant', content: entry.content };
      add({ message, tokens: tokensOf(entry) });
      open = calls.length > 0 ? [...calls] : [];
    } else {
      const index =
        entry.toolCallId === undefined ? -1 : open.findIndex((call) => call.id === entry.toolCallId);
      if (index !== -1) {
        open.splice(index, 1);
        add({
          message: { role: 'tool', toolCallId: entry.toolCallId as string, content: entry.content },
          tokens: tokensOf(entry),
          ...(entry.content.length > SHORTENED_TOOL_RESULT_CHARS ? { long: entry } : {}),
        });
      }
    }
    // An orphan result (no call before it) is left out, but still counts as one of the turn's entries.
    if (turn !== undefined) turn.entries++;
  }
  closeOpen();
  return turns;
}

function tokensOf(entry: TranscriptEntry): number {
  return entry.tokens ?? messageTokens(entry);
}

/** The messages of `turns` from `first` on. */
function flatten(turns: Turn[], first: number): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (let t = first; t < turns.length; t++) {
    for (const item of (turns[t] as Turn).items) messages.push(item.message);
  }
  return messages;
}
