import type { PendingToolCall, TodoItem, Usage } from '@tether/protocol';
import { AgentError } from '../errors.js';
import type { ChatMessage } from '../providers/model-provider.js';
import {
  type ChildrenRequest,
  childrenOf,
  type QuestionRequest,
  questionOf,
  toolOutputsOf,
  type Waitpoint,
  type WaitRequest,
} from './waitpoint.js';

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
  version: 1;
  messages: ChatMessage[];
  todos: TodoItem[];
  /** Model turns taken so far. */
  step: number;
  usage: Usage;
  /** Time spent in attempts (waiting for a human excluded), for the wall-clock limit. */
  activeMs: number;
  /**
   * What the run waits on from outside, if it waits (see waitpoint.ts): a
   * question, the client tool calls of its last turn, or the children of a
   * delegation. Each request's call is answered from its resolution on resume.
   */
  waitpoint?: Waitpoint | undefined;
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
}

export interface InitialCheckpointOptions {
  systemPrompt: string;
  input: string;
  /** A session run's history (earlier turns), between the system prompt and the input. */
  history?: ChatMessage[] | undefined;
  /** Where the history came from (see {@link Checkpoint.historyRef}). */
  historyRef?: { entries: number; budget: number } | undefined;
}

/** The checkpoint of a run that has not started: the system prompt, its history if any, and the user's input. */
export function initialCheckpoint({
  systemPrompt,
  input,
  history = [],
  historyRef,
}: InitialCheckpointOptions): Checkpoint {
  return {
    version: 1,
    messages: [{ role: 'system', content: systemPrompt }, ...history, { role: 'user', content: input }],
    ...(history.length > 0 ? { history: history.length, ...(historyRef ? { historyRef } : {}) } : {}),
    todos: [],
    step: 0,
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    activeMs: 0,
  };
}

/**
 * The checkpoint as stored (JSON): a session run's history is left out (its
 * `historyRef` says how to build it again), so a save writes the run's own
 * messages only, not the whole conversation every time.
 */
export function storedCheckpoint(checkpoint: Checkpoint): string {
  const legacy = legacyWaitFields(checkpoint.waitpoint);
  if (!checkpoint.historyRef || !checkpoint.history) {
    return JSON.stringify(legacy ? { ...checkpoint, ...legacy } : checkpoint);
  }
  const [system, ...rest] = checkpoint.messages;
  return JSON.stringify({ ...checkpoint, ...legacy, messages: [system, ...rest.slice(checkpoint.history)] });
}

/**
 * The fields that held a waitpoint's requests before there was a waitpoint
 * (`pendingClarify`, `pendingToolCalls`, `pendingDelegation`), stored beside
 * it for one release, so that a worker of the previous release resumes a
 * run that a newer one suspended (a rolling deploy runs both). Read back only
 * when the waitpoint is missing ({@link parseCheckpoint}).
 */
interface LegacyWaitFields {
  pendingClarify?: PendingClarifyState;
  pendingToolCalls?: PendingToolCall[];
  pendingDelegation?: PendingDelegation;
}

function legacyWaitFields(waitpoint: Waitpoint | undefined): LegacyWaitFields | undefined {
  if (!waitpoint) return undefined;
  const question = questionOf(waitpoint);
  const calls = toolOutputsOf(waitpoint);
  const children = childrenOf(waitpoint);
  return {
    ...(question ? { pendingClarify: withoutKind(question) } : {}),
    ...(calls.length > 0 ? { pendingToolCalls: calls.map(withoutKind) } : {}),
    ...(children
      ? { pendingDelegation: { callId: children.callId, name: children.name, tasks: children.tasks } }
      : {}),
  };
}

function withoutKind<T extends WaitRequest>({ kind: _kind, ...rest }: T): Omit<T, 'kind'> {
  return rest;
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

/** Reads a stored checkpoint back, refusing one of another version or shape. */
export function parseCheckpoint(json: string): Checkpoint {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new AgentError('ERR_AGENT_CHECKPOINT_INVALID', 'The stored checkpoint is not valid JSON.', {
      cause: error,
    });
  }
  const cp = value as Partial<Checkpoint> | null;
  if (
    cp?.version !== 1 ||
    !Array.isArray(cp.messages) ||
    !Array.isArray(cp.todos) ||
    typeof cp.step !== 'number' ||
    typeof cp.activeMs !== 'number' ||
    !cp.usage
  ) {
    throw new AgentError(
      'ERR_AGENT_CHECKPOINT_INVALID',
      'The stored checkpoint is not a version 1 checkpoint.',
    );
  }
  // Read as it is now: the waitpoint, from the legacy fields when it has none (stored before it).
  const { pendingClarify, pendingToolCalls, pendingDelegation, ...checkpoint } = cp as Checkpoint &
    LegacyWaitFields;
  if (!checkpoint.waitpoint) {
    const waitpoint = waitpointOfLegacy({ pendingClarify, pendingToolCalls, pendingDelegation });
    if (waitpoint) checkpoint.waitpoint = waitpoint;
  }
  return checkpoint as Checkpoint;
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
