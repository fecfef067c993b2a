/**
 * A run's timeline from its events: a pure fold, so that the page only draws
 * it and the unit tests check it without a browser.
 *
 * Invariants: an event is folded at most once (its id only grows in the log,
 * so an id at or before the last one folded is a replay and is skipped);
 * streamed assistant text (`message.delta`) is one item until the `message`
 * that ends it (after the turn's `usage`), whose content replaces what was
 * streamed; each tool call is
 * one item that collects its output chunks and its result by `callId`; each
 * call held for approval is one item that takes its decision by `requestId`;
 * each message sent to the live run is one item that takes its delivery (the
 * model turn that read it, counted as the run counts its steps) or its loss
 * by `messageId`.
 */

import { compareEventIds } from '@tether/client';
import type { RunEvent, RunEventData, TodoItem, Usage } from '@tether/protocol';

/** A held call, as its `approval.requested` says it: on a crew tree's root, a child's names the child. */
export type HeldCall = RunEventData<'approval.requested'>;

/** A decision on a held call, as its `approval.resolved` says it: what, by whom, with what. */
export type ApprovalOutcome = Omit<RunEventData<'approval.resolved'>, 'requestId'>;

export type TimelineItem =
  | { kind: 'status'; key: string; at: string; text: string }
  | { kind: 'text'; key: string; at: string; text: string; streaming: boolean }
  | {
      kind: 'tool';
      key: string;
      at: string;
      callId: string;
      name: string;
      args: string;
      output: string;
      result?: { ok: boolean; content: string };
      /** The attempt that made the call. */
      attempt: number;
      /** Why a call without a result never got one: the run was cancelled, its attempt failed, or its worker was lost. */
      stopped?: ToolStop;
    }
  | { kind: 'todos'; key: string; at: string; todos: TodoItem[] }
  | {
      kind: 'question';
      key: string;
      at: string;
      requestId: string;
      question: string;
      outcome?: { answer: string } | { timedOut: true };
    }
  | {
      kind: 'approval';
      key: string;
      at: string;
      /** The held call, as its `approval.requested` asked (a crew child's, on its root, names the child). */
      approval: HeldCall;
      /** The key of the first request of its turn: a turn's held calls are requested together. */
      batch: string;
      decision?: ApprovalOutcome;
      /** A crew child's call whose child ended before it was decided: it will never be. */
      childEnded?: boolean;
    }
  | {
      kind: 'user';
      key: string;
      at: string;
      /** A message sent to the live run (`POST /v1/runs/:id/messages`), and what came of it. */
      messageId: string;
      content: string;
      delivery: MessageDelivery;
    }
  | { kind: 'retry'; key: string; at: string; attempt: number; delayMs: number; error: string }
  | { kind: 'usage'; key: string; at: string; usage: Usage };

/**
 * Where a message sent to a live run is: waiting for the run's next turn
 * boundary, put in the transcript before model turn `turn` (1 for the run's
 * first), or never read (the run ended first).
 */
export type MessageDelivery =
  | { state: 'pending' }
  | { state: 'delivered'; turn: number }
  | { state: 'undelivered' };

/** How a tool call ended without a result. */
export type ToolStop = 'cancel' | 'failure' | 'lost';

export interface Timeline {
  items: TimelineItem[];
  /** The id of the last event folded in. */
  lastEventId: string | undefined;
  /** The attempt the last events belong to. */
  attempt: number;
  /** The model turns the run has ended: its checkpoint's step (each attempt says it), then one per `message`. */
  turns: number;
}

export const EMPTY_TIMELINE: Timeline = { items: [], lastEventId: undefined, attempt: 1, turns: 0 };

/** What the fold carries from one event to the next. */
type FoldState = { items: TimelineItem[]; attempt: number; turns: number };

/** The timeline with `events` folded in (a new object; `timeline` is not changed). */
export function foldEvents(timeline: Timeline, events: readonly RunEvent[]): Timeline {
  const state: FoldState = { items: [...timeline.items], attempt: timeline.attempt, turns: timeline.turns };
  let lastEventId = timeline.lastEventId;
  for (const event of events) {
    if (lastEventId !== undefined && compareEventIds(event.id, lastEventId) <= 0) continue;
    lastEventId = event.id;
    fold(state, event);
  }
  return { items: state.items, lastEventId, attempt: state.attempt, turns: state.turns };
}

/**
 * Marks the tool calls still without a result as stopped, and why: all of
 * them (the run ended), or those of attempts before `attempt` (a new attempt
 * started, so the worker of theirs was lost: a resumed attempt keeps its
 * number, and its calls still get their results).
 */
function stopOpenCalls(items: TimelineItem[], why: ToolStop, beforeAttempt = Number.POSITIVE_INFINITY): void {
  for (const [index, item] of items.entries()) {
    if (item.kind === 'tool' && !item.result && !item.stopped && item.attempt < beforeAttempt) {
      items[index] = { ...item, stopped: why };
    }
  }
}

function replaceLast<T extends TimelineItem>(
  items: TimelineItem[],
  match: (item: TimelineItem) => item is T,
  update: (item: T) => T,
): boolean {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i] as TimelineItem;
    if (match(item)) {
      items[i] = update(item);
      return true;
    }
  }
  return false;
}

const isTool =
  (callId: string) =>
  (item: TimelineItem): item is Extract<TimelineItem, { kind: 'tool' }> =>
    item.kind === 'tool' && item.callId === callId;
const isQuestion =
  (requestId: string) =>
  (item: TimelineItem): item is Extract<TimelineItem, { kind: 'question' }> =>
    item.kind === 'question' && item.requestId === requestId;
const isMessage =
  (messageId: string) =>
  (item: TimelineItem): item is Extract<TimelineItem, { kind: 'user' }> =>
    item.kind === 'user' && item.messageId === messageId;
const isApproval =
  (requestId: string) =>
  (item: TimelineItem): item is Extract<TimelineItem, { kind: 'approval' }> =>
    item.kind === 'approval' && item.approval.requestId === requestId;

function fold(state: FoldState, event: RunEvent): void {
  const { items } = state;
  const base = { key: event.id, at: event.at };
  const last = items[items.length - 1];
  switch (event.type) {
    case 'run.queued':
      items.push({ kind: 'status', ...base, text: 'Queued' });
      return;
    case 'run.started':
      items.push({ kind: 'status', ...base, text: `Started attempt ${event.data.attempt}` });
      return;
    case 'attempt.started':
      if (event.data.attempt > state.attempt) stopOpenCalls(items, 'lost', event.data.attempt);
      state.attempt = event.data.attempt;
      state.turns = event.data.step;
      if (event.data.resumed)
        items.push({ kind: 'status', ...base, text: `Resumed at step ${event.data.step}` });
      return;
    case 'message.delta':
      if (last?.kind === 'text' && last.streaming) {
        items[items.length - 1] = { ...last, text: last.text + event.data.text };
      } else {
        items.push({ kind: 'text', ...base, text: event.data.text, streaming: true });
      }
      return;
    case 'message': {
      state.turns++;
      // The turn's usage comes between its streamed text and its message: look past it.
      let at = items.length - 1;
      while (at >= 0 && items[at]?.kind === 'usage') at--;
      const streamed = items[at];
      if (streamed?.kind === 'text' && streamed.streaming) {
        items[at] = { ...streamed, text: event.data.content, streaming: false };
      } else if (event.data.content !== '') {
        items.push({ kind: 'text', ...base, text: event.data.content, streaming: false });
      }
      return;
    }
    case 'tool.call':
      items.push({
        kind: 'tool',
        ...base,
        callId: event.data.callId,
        name: event.data.name,
        args: event.data.arguments,
        output: '',
        attempt: state.attempt,
      });
      return;
    case 'tool.output':
      replaceLast(items, isTool(event.data.callId), (item) => ({
        ...item,
        output: item.output + event.data.chunk,
      }));
      return;
    case 'tool.result':
      replaceLast(items, isTool(event.data.callId), (item) => ({
        ...item,
        result: { ok: event.data.ok, content: event.data.content },
      }));
      return;
    case 'todo.updated':
      items.push({ kind: 'todos', ...base, todos: event.data.todos });
      return;
    case 'clarify.requested':
      items.push({
        kind: 'question',
        ...base,
        requestId: event.data.requestId,
        question: event.data.question,
      });
      return;
    case 'clarify.answered': {
      const answer = event.data.answer;
      replaceLast(items, isQuestion(event.data.requestId), (item) => ({ ...item, outcome: { answer } }));
      return;
    }
    case 'clarify.timed_out':
      replaceLast(items, isQuestion(event.data.requestId), (item) => ({
        ...item,
        outcome: { timedOut: true },
      }));
      return;
    case 'approval.requested':
      // A turn's requests are appended together, so one that follows an undecided request (of the
      // same run: a crew root is told its children's) is of the same turn; decisions and the
      // resumed attempt come between two turns' requests.
      items.push({
        kind: 'approval',
        ...base,
        approval: event.data,
        batch:
          last?.kind === 'approval' &&
          last.decision === undefined &&
          last.approval.childRunId === event.data.childRunId
            ? last.batch
            : event.id,
      });
      return;
    case 'approval.resolved': {
      const { requestId, ...decision } = event.data;
      replaceLast(items, isApproval(requestId), (item) => ({ ...item, decision }));
      return;
    }
    case 'message.received':
    case 'message.delivered':
    case 'message.undelivered':
      foldSentMessage(state, event);
      return;
    case 'run.retrying':
      stopOpenCalls(items, 'failure');
      items.push({
        kind: 'retry',
        ...base,
        attempt: event.data.attempt,
        delayMs: event.data.delayMs,
        error: `${event.data.error.code}: ${event.data.error.message}`,
      });
      return;
    case 'usage':
      items.push({ kind: 'usage', ...base, usage: event.data });
      return;
    case 'context.compacted': {
      const { beforeTokens, afterTokens, strategy, turnsSummarised } = event.data;
      const how =
        strategy === 'summarise'
          ? `${turnsSummarised} earlier turn${turnsSummarised === 1 ? '' : 's'} summarised`
          : 'old tool results pruned';
      items.push({
        kind: 'status',
        ...base,
        text: `Context compacted: ${how} (${beforeTokens} → ${afterTokens} tokens)`,
      });
      return;
    }
    case 'model.fallback':
      items.push({
        kind: 'status',
        ...base,
        text: `Model fallback: ${event.data.from} → ${event.data.to} (${event.data.reason})`,
      });
      return;
    case 'child.started':
      items.push({
        kind: 'status',
        ...base,
        text: `Started child ${event.data.childRunId}: ${event.data.goal}`,
      });
      return;
    case 'child.finished': {
      const { childRunId } = event.data;
      items.push({ kind: 'status', ...base, text: `Child ${childRunId} ${event.data.status}` });
      // What the child held undecided will never be decided now.
      for (const [index, item] of items.entries()) {
        if (item.kind === 'approval' && item.approval.childRunId === childRunId && !item.decision) {
          items[index] = { ...item, childEnded: true };
        }
      }
      return;
    }
    case 'tool.requested':
      items.push({ kind: 'status', ...base, text: `Waiting for the client's ${event.data.name} tool` });
      return;
    case 'tool.output_received':
    case 'tool.timed_out':
    case 'session.truncated':
      return;
    case 'run.completed':
      items.push({ kind: 'status', ...base, text: 'Completed' });
      return;
    case 'run.failed':
      stopOpenCalls(items, 'failure');
      items.push({ kind: 'status', ...base, text: `Failed: ${event.data.error.message}` });
      return;
    case 'run.cancelled':
      stopOpenCalls(items, 'cancel');
      items.push({ kind: 'status', ...base, text: 'Cancelled' });
      return;
  }
}

/** A message sent to the live run: one item, received pending, then taken before the next model turn or lost. */
function foldSentMessage(
  state: FoldState,
  event: RunEvent<'message.received' | 'message.delivered' | 'message.undelivered'>,
): void {
  const { messageId } = event.data;
  switch (event.type) {
    case 'message.received':
      state.items.push({
        kind: 'user',
        key: event.id,
        at: event.at,
        messageId,
        content: event.data.content,
        delivery: { state: 'pending' },
      });
      return;
    case 'message.delivered': {
      // Taken just before the model turn that follows the turns ended so far.
      const delivery: MessageDelivery = { state: 'delivered', turn: state.turns + 1 };
      replaceLast(state.items, isMessage(messageId), (item) => ({ ...item, delivery }));
      return;
    }
    case 'message.undelivered':
      replaceLast(state.items, isMessage(messageId), (item) => ({
        ...item,
        delivery: { state: 'undelivered' },
      }));
      return;
  }
}
