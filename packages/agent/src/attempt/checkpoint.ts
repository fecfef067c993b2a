import { createHash } from 'node:crypto';
import type { ApprovalDecision, PendingToolCall, TodoItem, Usage } from '@tether/protocol';
import { AgentError } from '../errors.js';
import type { ChatMessage } from '../providers/model-provider.js';
import type { ChildrenRequest, QuestionRequest, Waitpoint, WaitRequest } from './waitpoint.js';

/** A clarify question the run is waiting on (its waitpoint's `question` request, without the kind). */
export type PendingClarifyState = Omit<QuestionRequest, 'kind'>;

/**
 * A delegation the run is waiting on: the `delegate_task` or
 * `delegate_parallel` call, and its tasks in order, each with the id of the
 * child run that carries it out (its waitpoint's `children` request, without
 * the kind and the request id, which is the call's id).
 */
export type PendingDelegation = Omit<ChildrenRequest, 'kind' | 'requestId'>;

/**
 * The whole state of a run's conversation, saved after every model turn and
 * every tool result, so an attempt can stop anywhere and continue elsewhere
 * without repeating finished work. JSON-safe.
 *
 * Which tool calls are still to run is not stored: it is the last assistant
 * message's calls that have no `tool` message yet.
 */
export interface Checkpoint {
  /** 1, or 2 as stored with a shared part of the system prompt (read back as either). */
  version: 1 | 2;
  messages: ChatMessage[];
  todos: TodoItem[];
  /** Model turns taken so far. */
  step: number;
  usage: Usage;
  /**
   * The model that answered the latest turn: its profile (`replay` for a replay script) and the
   * model's name as the server was asked for it. Absent before the first turn.
   */
  model?: { profile: string; name: string } | undefined;
  /** Time spent in attempts (waiting for a human excluded), for the wall-clock limit. */
  activeMs: number;
  /**
   * What the run waits on from outside, if it waits (see waitpoint.ts): a
   * question, the client tool calls of its last turn, or the children of a
   * delegation. Each request's call is answered from its resolution on resume.
   */
  waitpoint?: Waitpoint | undefined;
  /**
   * The decisions on the last turn's calls that waited for one (by call id), taken when the run
   * resumed from their waitpoint and kept until the next model turn: each call runs (with the
   * edited arguments) or is refused when the turn's calls reach it, so results stay in call order.
   */
  decisions?: Record<string, ApprovalDecision & { timedOut?: boolean }> | undefined;
  /**
   * A run with `output`: its failed attempts at a result so far (`submit_result` calls with invalid
   * arguments, final answers in plain text), kept across attempts so a resumed run goes on counting.
   */
  outputAttempts?: number | undefined;
  /**
   * A session run's history: how many messages after the system prompt are
   * the session's earlier turns (the run's own start with its input after them).
   */
  history?: number | undefined;
  /**
   * Where a session run's history came from: the first `entries` entries of
   * the session's transcript, windowed to `budget` tokens. The stored
   * checkpoint leaves the history out and keeps this instead (see
   * {@link storedCheckpoint}): the transcript only grows, and windowing is
   * deterministic, so the same history is built again on resume.
   */
  historyRef?: { entries: number; budget: number } | undefined;
  /**
   * Where the system prompt's shared part is (its tool-use rules and behaviour blocks, the same
   * for every run with the same tools): stored once for every run by its hash, and left out of
   * the stored checkpoint (see {@link storedCheckpoint}).
   */
  shared?: SharedPrompt | undefined;
}

/** A part of the system prompt that many runs share: at `at` in its text, `text` (whose hash is `ref`). */
export interface SharedPrompt {
  ref: string;
  at: number;
  text: string;
}

/** The name a shared prompt part is stored under: its SHA-256, base64url (43 characters). */
export function sharedPromptRef(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

/**
 * Shared parts shorter than this stay in the checkpoint: a reference and a key of its own would
 * cost about as much.
 */
const SHARED_PROMPT_MIN_CHARS = 512;

export interface InitialCheckpointOptions {
  systemPrompt: string;
  input: string;
  /** A session run's history (earlier turns), between the system prompt and the input. */
  history?: ChatMessage[] | undefined;
  /** Where the history came from (see {@link Checkpoint.historyRef}). */
  historyRef?: { entries: number; budget: number } | undefined;
  /**
   * The part of `systemPrompt` many runs share, and where it is (see `composeSystemPrompt`):
   * stored once, by its hash, when it is long enough to be worth it.
   */
  shared?: { at: number; text: string } | undefined;
}

/** The checkpoint of a run that has not started: the system prompt, its history if any, and the user's input. */
export function initialCheckpoint({
  systemPrompt,
  input,
  history = [],
  historyRef,
  shared,
}: InitialCheckpointOptions): Checkpoint {
  const sharing =
    shared && shared.text.length >= SHARED_PROMPT_MIN_CHARS && systemPrompt.startsWith(shared.text, shared.at)
      ? { ref: sharedPromptRef(shared.text), at: shared.at, text: shared.text }
      : undefined;
  return {
    version: 1,
    messages: [{ role: 'system', content: systemPrompt }, ...history, { role: 'user', content: input }],
    ...(history.length > 0 ? { history: history.length, ...(historyRef ? { historyRef } : {}) } : {}),
    ...(sharing ? { shared: sharing } : {}),
    todos: [],
    step: 0,
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    activeMs: 0,
  };
}

/**
 * The checkpoint as stored (JSON): a session run's history is left out (its `historyRef` says how
 * to build it again), so a save writes the run's own messages only, not the whole conversation
 * every time; and so is the system prompt's shared part (its `shared.ref` names where it is kept
 * once for every run), which makes such a checkpoint version 2.
 */
export function storedCheckpoint(checkpoint: Checkpoint): string {
  const { shared, ...fields } = checkpoint;
  const [system, ...rest] = checkpoint.messages;
  const own = checkpoint.historyRef && checkpoint.history ? rest.slice(checkpoint.history) : rest;
  const content = system?.role === 'system' ? system.content : undefined;
  // Only while the system prompt still holds the part where it was (no step rewrites it today).
  if (shared && content?.startsWith(shared.text, shared.at)) {
    const left = content.slice(0, shared.at) + content.slice(shared.at + shared.text.length);
    return JSON.stringify({
      ...fields,
      version: 2,
      messages: [{ role: 'system', content: left }, ...own],
      shared: { ref: shared.ref, at: shared.at },
    });
  }
  if (own === rest) return JSON.stringify(fields);
  return JSON.stringify({ ...fields, messages: [system, ...own] });
}

/**
 * The fields that held a waitpoint's requests before there was a waitpoint
 * (`pendingClarify`, `pendingToolCalls`, `pendingDelegation`): read back only
 * when the waitpoint is missing ({@link parseCheckpoint}), from a checkpoint
 * an earlier release stored.
 */
interface LegacyWaitFields {
  pendingClarify?: PendingClarifyState;
  pendingToolCalls?: PendingToolCall[];
  pendingDelegation?: PendingDelegation;
}

/** The waitpoint of a checkpoint stored with the legacy fields alone (before the waitpoint). */
function waitpointOfLegacy(legacy: LegacyWaitFields): Waitpoint | undefined {
  const requests: WaitRequest[] = [
    // The order the attempt loop resumed them in (at most one of the three is ever set).
    ...(legacy.pendingToolCalls ?? []).map((call) => ({ kind: 'tool_output' as const, ...call })),
    ...(legacy.pendingClarify ? [{ kind: 'question' as const, ...legacy.pendingClarify }] : []),
    ...(legacy.pendingDelegation
      ? [
          {
            kind: 'children' as const,
            requestId: legacy.pendingDelegation.callId,
            ...legacy.pendingDelegation,
          },
        ]
      : []),
  ];
  return requests.length > 0 ? { requests } : undefined;
}

/** A stored checkpoint whose history was left out gets it back (`history` must be what `historyRef` builds). */
export function restoreHistory(checkpoint: Checkpoint, history: ChatMessage[]): Checkpoint {
  if (history.length !== checkpoint.history) {
    throw new AgentError(
      'ERR_AGENT_CHECKPOINT_INVALID',
      `The stored checkpoint's history had ${checkpoint.history ?? 0} messages; the session's transcript now gives ${history.length}.`,
    );
  }
  const [system, ...own] = checkpoint.messages;
  checkpoint.messages = [system as ChatMessage, ...history, ...own];
  return checkpoint;
}

/**
 * Reads a stored checkpoint back, refusing one of another version or shape. A checkpoint stored
 * with a shared part of its system prompt (version 2) needs that part: see {@link readCheckpoint}.
 */
export function parseCheckpoint(json: string): Checkpoint {
  const { checkpoint, shared } = decodeCheckpoint(json);
  if (shared) {
    throw new AgentError(
      'ERR_AGENT_CHECKPOINT_INVALID',
      `The stored checkpoint's system prompt refers to the shared part ${shared.ref}: read it with readCheckpoint.`,
    );
  }
  return checkpoint;
}

/**
 * Reads a stored checkpoint back (see {@link parseCheckpoint}), with the shared part of its system
 * prompt, if it has one, from `lookup` (by its reference; the caller answers for the text being
 * the one the reference names). No text for it: `ERR_AGENT_CHECKPOINT_INVALID`.
 */
export async function readCheckpoint(
  json: string,
  lookup: (ref: string) => Promise<string | undefined>,
): Promise<Checkpoint> {
  const { checkpoint, shared } = decodeCheckpoint(json);
  if (!shared) return checkpoint;
  const text = await lookup(shared.ref);
  const system = checkpoint.messages[0];
  if (text === undefined || system?.role !== 'system' || shared.at > system.content.length) {
    throw new AgentError(
      'ERR_AGENT_CHECKPOINT_INVALID',
      `The stored checkpoint's system prompt refers to the shared part ${shared.ref}, which is not there.`,
    );
  }
  system.content = system.content.slice(0, shared.at) + text + system.content.slice(shared.at);
  checkpoint.version = 1;
  checkpoint.shared = { ref: shared.ref, at: shared.at, text };
  return checkpoint;
}

function decodeCheckpoint(json: string): {
  checkpoint: Checkpoint;
  shared?: { ref: string; at: number } | undefined;
} {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new AgentError('ERR_AGENT_CHECKPOINT_INVALID', 'The stored checkpoint is not valid JSON.', {
      cause: error,
    });
  }
  const cp = value as (Omit<Partial<Checkpoint>, 'shared'> & { shared?: unknown }) | null;
  const shared = cp?.shared as { ref?: unknown; at?: unknown } | undefined;
  const sharedOk =
    cp?.version === 1
      ? shared === undefined
      : typeof shared?.ref === 'string' && Number.isSafeInteger(shared.at) && (shared.at as number) >= 0;
  if (
    (cp?.version !== 1 && cp?.version !== 2) ||
    !sharedOk ||
    !Array.isArray(cp.messages) ||
    !Array.isArray(cp.todos) ||
    typeof cp.step !== 'number' ||
    typeof cp.activeMs !== 'number' ||
    !cp.usage
  ) {
    throw new AgentError(
      'ERR_AGENT_CHECKPOINT_INVALID',
      'The stored checkpoint is not a version 1 or 2 checkpoint.',
    );
  }
  // Read as it is now: the waitpoint, from the legacy fields when it has none (stored before it).
  const {
    pendingClarify,
    pendingToolCalls,
    pendingDelegation,
    shared: _shared,
    ...checkpoint
  } = cp as Checkpoint & LegacyWaitFields;
  if (!checkpoint.waitpoint) {
    const waitpoint = waitpointOfLegacy({ pendingClarify, pendingToolCalls, pendingDelegation });
    if (waitpoint) checkpoint.waitpoint = waitpoint;
  }
  return {
    checkpoint: checkpoint as Checkpoint,
    ...(cp.version === 2 ? { shared: shared as { ref: string; at: number } } : {}),
  };
}

/** The run's own messages: from its input on (a session run's history and the system prompt left out). */
export function ownMessages(checkpoint: Checkpoint): ChatMessage[] {
  return checkpoint.messages.slice(1 + (checkpoint.history ?? 0));
}

/** The tool calls of the last assistant turn that have no result yet, in order. */
export function unansweredToolCalls(checkpoint: Checkpoint) {
  const messages = checkpoint.messages;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as ChatMessage;
    if (message.role !== 'assistant') continue;
    const answered = new Set<string>();
    for (let j = i + 1; j < messages.length; j++) {
      const later = messages[j] as ChatMessage;
      if (later.role === 'tool') answered.add(later.toolCallId);
    }
    return (message.toolCalls ?? []).filter((call) => !answered.has(call.id));
  }
  return [];
}
