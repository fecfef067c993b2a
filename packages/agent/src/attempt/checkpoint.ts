import type { TodoItem, Usage } from '@tether/protocol';
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
}

export interface InitialCheckpointOptions {
  systemPrompt: string;
  input: string;
}

/** The checkpoint of a run that has not started: the system prompt and the user's input. */
export function initialCheckpoint({ systemPrompt, input }: InitialCheckpointOptions): Checkpoint {
  return {
    version: 1,
    messages: [
      { role: 'system', content: systemPrompt },
      { role: 'user', content: input },
    ],
    todos: [],
    step: 0,
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    activeMs: 0,
  };
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
