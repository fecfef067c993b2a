import type { PendingToolCall, TodoItem, Usage } from '@tether/protocol';
import { AgentError } from '../errors.js';
import type { ChatMessage } from '../providers/model-provider.js';

/** A clarify question the run is waiting on. */
export interface PendingClarifyState {
  requestId: string;
  /** The tool call that asked it; its result will be the answer. */
  callId: string;
  question: string;
  choices: string[];
  /** ISO time after which the run resumes with the timeout message. */
  expiresAt: string;
}

/**
 * A delegation the run is waiting on: the `delegate_task` or
 * `delegate_parallel` call, and its tasks in order, each with the id of the
 * child run that carries it out. Its result is the children's results.
 */
export interface PendingDelegation {
  /** The tool call that delegated; its result will be the children's results. */
  callId: string;
  name: 'delegate_task' | 'delegate_parallel';
  tasks: { goal: string; context?: string; toolsets?: string[]; childRunId: string }[];
}

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
  pendingClarify?: PendingClarifyState | undefined;
  /** The delegation whose children the run waits on (see {@link PendingDelegation}). */
  pendingDelegation?: PendingDelegation | undefined;
  /**
   * The client tool calls of the last model turn that the run waits on, in
   * call order: the client posts their outputs; each becomes its call's result.
   */
  pendingToolCalls?: PendingToolCall[] | undefined;
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
  if (!checkpoint.historyRef || !checkpoint.history) return JSON.stringify(checkpoint);
  const [system, ...rest] = checkpoint.messages;
  return JSON.stringify({ ...checkpoint, messages: [system, ...rest.slice(checkpoint.history)] });
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
  return cp as Checkpoint;
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
