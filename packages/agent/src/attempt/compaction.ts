/**
 * Context compaction: a run's transcript kept within its model's context window, so that a long
 * run finishes instead of failing on a request the provider refuses as too long.
 *
 * Before each model turn the request is counted (gpt-tokenizer, each message counted once per
 * object, scaled by what the provider reported for the last request). Past `compactAt` of the
 * window (the threshold), two steps, the second only when the first is not enough to bring the
 * request back under the threshold:
 * 1. **prune**: old tool results, oldest first, until the request is under
 *    {@link COMPACT_TARGET} of the threshold, keep their head and tail and a note of the cut
 *    (and where the whole result was saved in the workspace, when it was);
 * 2. **summarise**: everything between the system prompt and the recent turns, but the run's
 *    input, is replaced by one summary written by the run's own model with a fixed prompt.
 *
 * Invariants: the system prompt, the run's input and the last {@link KEEP_RECENT_TURNS} model
 * turns (with their tool results) stay verbatim; a tool call and its result are pruned or
 * summarised together, never split; nothing here changes a message object in place.
 */
import type { TodoItem } from '@tether/protocol';
import { AgentError } from '../errors.js';
import type { ChatMessage, ModelProvider, ModelResponse, ModelTool } from '../providers/model-provider.js';
import { cachedMessageTokens, countTokens } from '../session/tokens.js';

/** The share of the window past which a request is compacted, when the profile sets none. */
export const DEFAULT_COMPACT_AT = 0.8;

/** Compaction aims under this share of the threshold, so that it is not needed again next turn. */
export const COMPACT_TARGET = 0.75;

/** Model turns at the end of the transcript that are never pruned or summarised. */
export const KEEP_RECENT_TURNS = 3;

/** Characters a pruned tool result keeps: its head and tail. */
export const PRUNED_TOOL_RESULT_CHARS = 600;

/** The first line of the message that stands for the summarised part of the transcript. */
export const SUMMARY_HEADER =
  '[Summary of the earlier part of this conversation, written when the context was compacted. The messages it stands for are no longer shown.]';

/** What the model is asked to write when the middle of a transcript is summarised. */
export const SUMMARY_PROMPT = `You summarise part of an AI agent's working transcript so that the agent can continue its task with less context. The agent will see your summary instead of the messages, so keep everything it needs:
- Task: the task as the user gave it, and any later instructions or corrections.
- Progress: what has been done, step by step, with the important results of commands and tools.
- Decisions: what was decided and why.
- Files: every file created, changed or read (paths), and what matters in each.
- Errors: errors met, and how they were resolved or not.
- Open questions: what is still unclear.
- Next steps: what remains to do, in order.
Be concrete: names, paths, numbers, exact error messages. Never invent anything. Write notes under those headings, nothing else.`;

/** Where compaction stands for one attempt: the window and when to compact. */
export interface CompactionOptions {
  /** Tokens the model's context holds. */
  window: number;
  /** Share of the window past which a request is compacted. */
  compactAt: number;
}

/** Saves a tool result about to be pruned where the run can read it back; the path, or undefined. */
export type ArchiveToolResult = (callId: string, content: string) => Promise<string | undefined>;

/** What a compaction did, for the `context.compacted` event. */
export interface CompactionReport {
  beforeTokens: number;
  afterTokens: number;
  strategy: 'prune' | 'summarise';
  /** Model turns whose messages the summary stands for (0 when only pruned). */
  turnsSummarised: number;
  /** Tool results pruned. */
  pruned: number;
}

/**
 * Counts a request's tokens: its tools once per attempt, each message once per object, and a
 * scale learnt from the provider's own count of the last request (its tokenizer may not be
 * o200k_base).
 */
export class RequestCounter {
  #toolTokens: number | undefined;
  #scale = 1;

  /** The request's tokens as the provider would count them, as far as the last request tells. */
  count(messages: readonly ChatMessage[], tools: readonly ModelTool[]): number {
    return Math.ceil(this.raw(messages, tools) * this.#scale);
  }

  /** The request's tokens in o200k_base. */
  raw(messages: readonly ChatMessage[], tools: readonly ModelTool[]): number {
    this.#toolTokens ??= tools.length === 0 ? 0 : countTokens(JSON.stringify(tools));
    let total = this.#toolTokens;
    for (const message of messages) total += cachedMessageTokens(message);
    return total;
  }

  /**
   * What the provider said the last request took (`inputTokens`), against what it counted here:
   * the scale of the next counts (between 0.5 and 4; unchanged when the provider says nothing).
   */
  calibrate(counted: number, reported: number): void {
    if (counted <= 0 || reported <= 0) return;
    this.#scale = Math.min(4, Math.max(0.5, reported / counted));
  }
}

export interface CompactParams {
  messages: ChatMessage[];
  /** Index of the run's input (after the system prompt and a session's history). */
  inputIndex: number;
  tools: readonly ModelTool[];
  counter: RequestCounter;
  /** Tokens past which the transcript is compacted: pruning that leaves it over this summarises too. */
  threshold: number;
  /** Tokens pruning aims under (below the threshold, so that compaction is not needed again at once). */
  target: number;
  provider: ModelProvider;
  signal: AbortSignal;
  todos: readonly TodoItem[];
  archive?: ArchiveToolResult | undefined;
  /** Told each summarisation request's answer, for its usage (counted as a model turn's is). */
  onAnswer: (turn: ModelResponse) => void;
}

export interface Compacted {
  messages: ChatMessage[];
  /** The new index of the run's input. */
  inputIndex: number;
  report: CompactionReport;
}

/**
 * The transcript compacted toward `target` tokens (see the module): pruned, then summarised when
 * pruning was not enough. Undefined when there was nothing to compact.
 */
export async function compactTranscript(params: CompactParams): Promise<Compacted | undefined> {
  const { tools, counter, threshold } = params;
  const beforeTokens = counter.count(params.messages, tools);
  const recent = recentStart(params.messages, params.inputIndex);
  const pruned = await pruneToolResults(params, recent);
  let messages = pruned.messages;
  let inputIndex = params.inputIndex;
  let strategy: CompactionReport['strategy'] = 'prune';
  let turnsSummarised = 0;
  if (counter.count(messages, tools) > threshold) {
    const summarised = await summariseMiddle({ ...params, messages }, recentStart(messages, inputIndex));
    if (summarised) {
      ({ messages, inputIndex } = summarised);
      turnsSummarised = summarised.turns;
      strategy = 'summarise';
    }
  }
  if (pruned.count === 0 && strategy === 'prune') return undefined;
  return {
    messages,
    inputIndex,
    report: {
      beforeTokens,
      afterTokens: counter.count(messages, tools),
      strategy,
      turnsSummarised,
      pruned: pruned.count,
    },
  };
}

/**
 * The index where the recent turns start: the {@link KEEP_RECENT_TURNS}-th last assistant message
 * after the input (the input's own index + 1 when there are fewer).
 */
export function recentStart(messages: readonly ChatMessage[], inputIndex: number): number {
  let seen = 0;
  for (let i = messages.length - 1; i > inputIndex; i--) {
    if (messages[i]?.role === 'assistant' && ++seen === KEEP_RECENT_TURNS) return i;
  }
  return inputIndex + 1;
}

/** Old tool results (before `recent`), oldest first, pruned until the request is under the target. */
async function pruneToolResults(
  params: CompactParams,
  recent: number,
): Promise<{ messages: ChatMessage[]; count: number }> {
  const { tools, counter, target, archive } = params;
  const messages = [...params.messages];
  let count = 0;
  for (let i = 0; i < recent; i++) {
    if (counter.count(messages, tools) <= target) break;
    const message = messages[i] as ChatMessage;
    if (message.role !== 'tool' || message.content.length <= PRUNED_TOOL_RESULT_CHARS * 2) continue;
    if (message.content.startsWith(PRUNED_MARK)) continue;
    const path = await archive?.(message.toolCallId, message.content).catch(() => undefined);
    messages[i] = {
      role: 'tool',
      toolCallId: message.toolCallId,
      content: prunedResult(message.content, path),
    };
    count++;
  }
  return { messages, count };
}

const PRUNED_MARK = '[pruned:';

/** A tool result as compaction prunes it: a note first, then its head and tail around the cut. */
export function prunedResult(content: string, path: string | undefined): string {
  const keep = PRUNED_TOOL_RESULT_CHARS;
  const head = content.slice(0, Math.ceil(keep * 0.6));
  const tail = content.slice(content.length - Math.floor(keep * 0.4));
  const where =
    path === undefined
      ? ''
      : ` The whole result is saved in the workspace: read it with read_file("${path}") if you need it.`;
  return `${PRUNED_MARK} ${content.length - head.length - tail.length} of ${content.length} characters of this old tool result were cut to keep the conversation within the model's context.${where}]\n${head}\n[...]\n${tail}`;
}

/**
 * Everything between the system prompt and `recent`, but the run's input, replaced by one summary
 * placed right after the input. A session's earlier turns are part of it. Undefined when there is
 * nothing to summarise.
 */
async function summariseMiddle(
  params: CompactParams,
  recent: number,
): Promise<{ messages: ChatMessage[]; inputIndex: number; turns: number } | undefined> {
  const { messages, inputIndex } = params;
  const system = messages[0] as ChatMessage;
  const input = messages[inputIndex] as ChatMessage;
  const middle = [...messages.slice(1, inputIndex), ...messages.slice(inputIndex + 1, recent)];
  if (middle.length === 0) return undefined;
  const summary = await summarise(params, input, middle);
  const turns = middle.filter((message) => message.role === 'assistant').length;
  return {
    messages: [
      system,
      input,
      { role: 'user', content: `${SUMMARY_HEADER}\n\n${summary}`, reminder: true },
      ...messages.slice(recent),
    ],
    inputIndex: 1,
    turns,
  };
}

/**
 * The summary of `middle`, written by the run's model: in one request when it fits half the
 * target, else chunk by chunk, each request given the summary so far.
 */
async function summarise(params: CompactParams, input: ChatMessage, middle: ChatMessage[]): Promise<string> {
  const { provider, signal, todos, target } = params;
  const budget = Math.max(1_000, Math.floor(target / 2));
  let summary = '';
  for (const chunk of chunks(middle.map(renderMessage), budget)) {
    const turn = await provider.complete({
      messages: [
        { role: 'system', content: SUMMARY_PROMPT },
        { role: 'user', content: summaryRequest(input.content, todos, summary, chunk) },
      ],
      tools: [],
      maxOutputTokens: Math.max(256, Math.min(4_096, Math.floor(target / 4))),
      signal,
    });
    params.onAnswer(turn);
    summary = turn.content.trim();
    if (summary === '') {
      throw new AgentError(
        'ERR_CONTEXT_EXHAUSTED',
        'The context had to be compacted, and the model answered the summarisation request with no text.',
      );
    }
  }
  return summary;
}

/** The user message of a summarisation request. */
export function summaryRequest(
  task: string,
  todos: readonly TodoItem[],
  summarySoFar: string,
  transcript: string,
): string {
  const parts = [`The agent's task:\n${task}`];
  if (todos.length > 0) {
    parts.push(
      `The agent's todo list:\n${todos.map((todo) => `- [${todo.status}] ${todo.content}`).join('\n')}`,
    );
  }
  if (summarySoFar !== '') {
    parts.push(`The summary of the transcript before this part (fold it into yours):\n${summarySoFar}`);
  }
  parts.push(`The transcript to summarise:\n${transcript}`);
  return parts.join('\n\n');
}

/** One message as the summariser reads it. */
function renderMessage(message: ChatMessage): string {
  switch (message.role) {
    case 'system':
      return `SYSTEM: ${message.content}`;
    case 'user':
      return `USER: ${message.content}`;
    case 'assistant': {
      const calls = (message.toolCalls ?? []).map((call) => `\n-> called ${call.name}(${call.arguments})`);
      return `ASSISTANT: ${message.content}${calls.join('')}`;
    }
    case 'tool':
      return `TOOL RESULT (${message.toolCallId}): ${message.content}`;
  }
}

/** Rendered messages grouped into chunks of about `budget` tokens; a longer message is cut to fit. */
function chunks(rendered: string[], budget: number): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let tokens = 0;
  // A character is at least a quarter of a token in practice: cut by characters, count once.
  const maxChars = budget * 3;
  for (const text of rendered) {
    const piece = text.length > maxChars ? `${text.slice(0, maxChars)}\n[... cut ...]` : text;
    const pieceTokens = countTokens(piece);
    if (current.length > 0 && tokens + pieceTokens > budget) {
      out.push(current.join('\n\n'));
      current = [];
      tokens = 0;
    }
    current.push(piece);
    tokens += pieceTokens;
  }
  if (current.length > 0) out.push(current.join('\n\n'));
  return out;
}

/**
 * Whether a model server's refusal says the request was longer than the model's context (OpenAI's
 * `context_length_exceeded`, Anthropic's "prompt is too long", vLLM's and llama.cpp's wording).
 */
export function isContextOverflow(error: unknown): boolean {
  if (!(error instanceof AgentError) || error.code !== 'ERR_MODEL_BAD_REQUEST') return false;
  return /context[_ ]length|context window|maximum context|prompt is too long|too many tokens|exceeds the (?:model's )?(?:context|maximum)/i.test(
    error.message,
  );
}

/**
 * The context windows of model families, for a profile that sets no `contextWindow` and a server
 * that does not say: by the start of the model's name, the first that matches.
 */
export const CONTEXT_WINDOWS: ReadonlyArray<readonly [RegExp, number]> = [
  [/^gpt-5/, 400_000],
  [/^gpt-4\.1/, 1_047_576],
  [/^gpt-4o/, 128_000],
  [/^gpt-4-turbo/, 128_000],
  [/^gpt-4/, 8_192],
  [/^gpt-3\.5/, 16_385],
  [/^o[1-9]/, 200_000],
  [/^claude/, 200_000],
  [/^deepseek/, 128_000],
  [/^qwen/, 131_072],
  [/^gemini/, 1_048_576],
];

/** The window of a model by its family ({@link CONTEXT_WINDOWS}), if known. */
export function familyContextWindow(model: string | undefined): number | undefined {
  if (model === undefined) return undefined;
  const name = model.toLowerCase().replace(/^.*\//, '');
  return CONTEXT_WINDOWS.find(([pattern]) => pattern.test(name))?.[1];
}
