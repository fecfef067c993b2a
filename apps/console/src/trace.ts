/**
 * A run as a trace: its events folded into spans on a time axis, grouped by
 * attempt, as the run page draws them (a pure fold, like `foldEvents`, so the
 * unit tests check it without a browser).
 *
 * Spans: the time in the queue; each model turn (from the event that let it
 * start, the attempt's start or the last tool result, to its `usage` or
 * `message`); each tool call (its `tool.call` to its `tool.result`); and each
 * wait, drawn as a wait (a question, a client tool's output, crew children, a
 * call held for approval: one wait per held call, ended by its decision).
 * Invariants: an event is folded at most once (ids only grow); a span without
 * an end is open and is drawn to "now"; when the run ends, or a new attempt
 * starts, nothing of before stays open: a call cut off says why (`stopped`).
 */

import { compareEventIds } from '@tether/client';
import type { ChildResultStatus, RunEvent } from '@tether/protocol';
import { argumentsText, decisionText } from './approval.js';
import type { ToolStop } from './timeline.js';
import { callDetail } from './tool-args.js';

export type SpanKind = 'queue' | 'turn' | 'tool' | 'wait';

/** A crew child started by a delegation, drawn under its call. */
export interface ChildSpan {
  runId: string;
  goal: string;
  startMs: number;
  endMs?: number;
  status?: ChildResultStatus;
}

export interface Span {
  /** The id of the event that opened it. */
  key: string;
  kind: SpanKind;
  /** What it is: "Model", a tool's name, "Waiting for an answer". */
  label: string;
  /** A short line of what it did: a command, a path, a question, the tokens of a turn. */
  detail: string;
  startMs: number;
  /** Undefined while it is open. */
  endMs?: number;
  outcome: 'ok' | 'error' | 'open' | 'stopped';
  /** A tool span's call id (the timeline's item for the detail pane). */
  callId?: string;
  /** Why a call (or a turn) ended without a result. */
  stopped?: ToolStop;
  /** A model turn's text, and a wait's answer, for the detail pane. */
  text?: string;
  /** A delegation's children, in the order they started. */
  children?: ChildSpan[];
  /** An approval's wait: the request whose decision ends it (the turn's held calls wait side by side). */
  requestId?: string;
}

/** One attempt and its spans (a resumed attempt is a group of its own). */
export interface AttemptGroup {
  key: string;
  attempt: number;
  resumed: boolean;
  step: number;
  startMs: number;
  endMs?: number;
  spans: Span[];
}

export interface Trace {
  /** The time in the queue, before the first attempt. */
  queue?: Span;
  groups: AttemptGroup[];
  /** When the run was queued (the axis's start). */
  startMs?: number;
  /** When the run ended. */
  endMs?: number;
  lastEventId: string | undefined;
  /** Where the next model turn starts: the attempt's start or the last result. */
  cursorMs: number;
  /** Whether a model turn has ended since the cursor moved (the next turn starts at the cursor). */
  turnSinceCursor: boolean;
}

export const EMPTY_TRACE: Trace = { groups: [], lastEventId: undefined, cursorMs: 0, turnSinceCursor: false };

/** The trace with `events` folded in (a new object; `trace` is not changed). */
export function foldTrace(trace: Trace, events: readonly RunEvent[]): Trace {
  const next: Trace = {
    ...trace,
    groups: trace.groups.map((group) => ({ ...group, spans: [...group.spans] })),
  };
  for (const event of events) {
    if (next.lastEventId !== undefined && compareEventIds(event.id, next.lastEventId) <= 0) continue;
    next.lastEventId = event.id;
    foldOne(next, event);
  }
  return next;
}

const MAX_TEXT = 4_000;

/** The attempt the run is in: events before any `attempt.started` start a group of their own. */
function current(trace: Trace, event: RunEvent, at: number): AttemptGroup {
  let group = trace.groups.at(-1);
  if (group === undefined) {
    group = { key: event.id, attempt: 1, resumed: false, step: 0, startMs: at, spans: [] };
    trace.groups.push(group);
  }
  return group;
}

/** Replaces the last span of `group` that `match`es with `update` of it. */
function updateLast(group: AttemptGroup, match: (span: Span) => boolean, update: (span: Span) => Span): void {
  for (let i = group.spans.length - 1; i >= 0; i--) {
    const span = group.spans[i] as Span;
    if (match(span)) {
      group.spans[i] = update(span);
      return;
    }
  }
}

/** Ends every open span of every group at `at`: calls and turns as `stopped` (why), waits as they are. */
function closeAll(trace: Trace, at: number, why: ToolStop): void {
  for (const group of trace.groups) {
    group.spans = group.spans.map((span) => {
      if (span.endMs !== undefined) return span;
      if (span.kind === 'wait') return { ...span, endMs: at, outcome: 'stopped' };
      return { ...span, endMs: at, outcome: 'stopped', stopped: why };
    });
    group.endMs ??= at;
  }
}

function foldOne(trace: Trace, event: RunEvent): void {
  const at = Date.parse(event.at);
  switch (event.type) {
    case 'run.queued':
      trace.startMs ??= at;
      trace.queue = {
        key: event.id,
        kind: 'queue',
        label: 'Queued',
        detail: '',
        startMs: at,
        outcome: 'open',
      };
      return;
    case 'run.started':
      trace.startMs ??= at;
      if (trace.queue && trace.queue.endMs === undefined)
        trace.queue = { ...trace.queue, endMs: at, outcome: 'ok' };
      return;
    case 'attempt.started': {
      trace.startMs ??= at;
      const before = trace.groups.at(-1);
      if (before) {
        // What the attempt before left open: its calls were cut off (a lost worker) unless this attempt
        // resumes it under the same number; its waits end now.
        before.endMs ??= lastEnd(before) ?? at;
        const lost = event.data.attempt > before.attempt;
        before.spans = before.spans.map((span) => {
          if (span.endMs !== undefined) return span;
          if (span.kind === 'wait') return { ...span, endMs: at, outcome: 'ok' };
          if (lost) return { ...span, endMs: before.endMs, outcome: 'stopped', stopped: 'lost' };
          return span;
        });
      }
      trace.groups.push({
        key: event.id,
        attempt: event.data.attempt,
        resumed: event.data.resumed,
        step: event.data.step,
        startMs: at,
        spans: [],
      });
      trace.cursorMs = at;
      trace.turnSinceCursor = false;
      return;
    }
    case 'message.delta': {
      const group = current(trace, event, at);
      if (!group.spans.some((span) => span.kind === 'turn' && span.endMs === undefined)) {
        group.spans.push({
          key: event.id,
          kind: 'turn',
          label: 'Model',
          detail: '',
          startMs: trace.cursorMs || at,
          outcome: 'open',
          text: '',
        });
      }
      updateLast(
        group,
        (span) => span.kind === 'turn' && span.endMs === undefined,
        (span) => ({ ...span, text: `${span.text ?? ''}${event.data.text}`.slice(0, MAX_TEXT) }),
      );
      return;
    }
    case 'usage':
    case 'message':
      endTurn(trace, event, at);
      return;
    case 'tool.call':
      current(trace, event, at).spans.push({
        key: event.id,
        kind: 'tool',
        label: event.data.name,
        detail: callDetail(event.data.name, event.data.arguments),
        startMs: at,
        outcome: 'open',
        callId: event.data.callId,
      });
      return;
    case 'tool.result': {
      const { callId, ok } = event.data;
      for (let g = trace.groups.length - 1; g >= 0; g--) {
        const group = trace.groups[g] as AttemptGroup;
        const open = group.spans.findLastIndex((span) => span.callId === callId && span.endMs === undefined);
        if (open < 0) continue;
        const span = group.spans[open] as Span;
        group.spans[open] = { ...span, endMs: at, outcome: ok ? 'ok' : 'error' };
        break;
      }
      moveCursor(trace, at);
      return;
    }
    case 'clarify.requested':
      openWait(trace, event, at, { label: 'Waiting for an answer', detail: event.data.question });
      return;
    case 'clarify.answered':
    case 'clarify.timed_out':
    case 'tool.output_received':
    case 'tool.timed_out': {
      const timedOut = event.type === 'clarify.timed_out' || event.type === 'tool.timed_out';
      const text = event.type === 'clarify.answered' ? event.data.answer : timedOut ? 'Timed out' : undefined;
      // A question's or a client tool's wait: the last open one that is neither children nor an approval.
      endWait(trace, at, (span) => !span.children && span.requestId === undefined, timedOut, text);
      return;
    }
    case 'tool.requested':
      openWait(trace, event, at, { label: `Waiting for the client's ${event.data.name}`, detail: '' });
      return;
    case 'approval.requested': {
      const { tool, requestId } = event.data;
      const detail = callDetail(tool, argumentsText(event.data.arguments));
      openWait(trace, event, at, { label: `Waiting for approval of ${tool}`, detail, requestId });
      return;
    }
    case 'approval.resolved': {
      const { requestId, timedOut = false } = event.data;
      endWait(trace, at, (span) => span.requestId === requestId, timedOut, decisionText(event.data));
      return;
    }
    case 'child.started':
      startChild(trace, event, at);
      return;
    case 'child.finished': {
      const { childRunId, status } = event.data;
      for (const group of trace.groups) {
        group.spans = group.spans.map((span) =>
          span.children?.some((child) => child.runId === childRunId)
            ? {
                ...span,
                children: span.children.map((child) =>
                  child.runId === childRunId ? { ...child, endMs: at, status } : child,
                ),
              }
            : span,
        );
      }
      return;
    }
    case 'run.retrying':
      closeAll(trace, at, 'failure');
      return;
    case 'run.completed':
    case 'run.failed':
    case 'run.cancelled':
      closeAll(trace, at, event.type === 'run.cancelled' ? 'cancel' : 'failure');
      trace.endMs = at;
      closeQueue(trace, at);
      return;
    default:
      return;
  }
}

/** A wait starts: a question, a client tool's output, a held call's decision. */
function openWait(
  trace: Trace,
  event: RunEvent,
  at: number,
  what: Pick<Span, 'label' | 'detail' | 'requestId'>,
): void {
  current(trace, event, at).spans.push({
    key: event.id,
    kind: 'wait',
    startMs: at,
    outcome: 'open',
    ...what,
  });
}

/** The last open wait that `match`es (in each group) ends: answered, or timed out; `text` is what ended it. */
function endWait(
  trace: Trace,
  at: number,
  match: (span: Span) => boolean,
  timedOut: boolean,
  text: string | undefined,
): void {
  for (const group of trace.groups) {
    updateLast(
      group,
      (span) => span.kind === 'wait' && span.endMs === undefined && match(span),
      (span) => ({ ...span, endMs: at, outcome: timedOut ? 'error' : 'ok', text: text ?? span.text }),
    );
  }
}

/** A turn ends with its `usage` (or its `message`, when the provider gave no usage): one span per turn. */
function endTurn(trace: Trace, event: Extract<RunEvent, { type: 'usage' | 'message' }>, at: number): void {
  const group = current(trace, event, at);
  const open = group.spans.findLastIndex((span) => span.kind === 'turn' && span.endMs === undefined);
  const tokens =
    event.type === 'usage' ? `${event.data.inputTokens} in, ${event.data.outputTokens} out` : undefined;
  const text = event.type === 'message' ? event.data.content.slice(0, MAX_TEXT) : undefined;
  if (open >= 0) {
    const span = group.spans[open] as Span;
    group.spans[open] = {
      ...span,
      endMs: at,
      outcome: 'ok',
      detail: tokens ?? span.detail,
      text: text ?? span.text,
    };
  } else if (!trace.turnSinceCursor) {
    group.spans.push({
      key: event.id,
      kind: 'turn',
      label: 'Model',
      detail: tokens ?? '',
      startMs: trace.cursorMs || at,
      endMs: at,
      outcome: 'ok',
      ...(text ? { text } : {}),
    });
  } else {
    // The same turn's other half (its message after its usage): what it adds is kept on the turn.
    updateLast(
      group,
      (span) => span.kind === 'turn',
      (span) => ({ ...span, detail: tokens ?? span.detail, text: text || span.text }),
    );
  }
  trace.turnSinceCursor = true;
}

function moveCursor(trace: Trace, at: number): void {
  if (at >= trace.cursorMs) {
    trace.cursorMs = at;
    trace.turnSinceCursor = false;
  }
}

/** A child goes under the delegation still open (its call), and the attempt waits for the children. */
function startChild(trace: Trace, event: Extract<RunEvent, { type: 'child.started' }>, at: number): void {
  const group = current(trace, event, at);
  const child: ChildSpan = { runId: event.data.childRunId, goal: event.data.goal, startMs: at };
  const call = group.spans.findLastIndex(
    (span) => span.kind === 'tool' && span.endMs === undefined && span.label.startsWith('delegate_'),
  );
  if (call >= 0) {
    const span = group.spans[call] as Span;
    group.spans[call] = { ...span, children: [...(span.children ?? []), child] };
  }
  const waiting = group.spans.some(
    (span) => span.kind === 'wait' && span.endMs === undefined && span.children,
  );
  if (!waiting) {
    group.spans.push({
      key: event.id,
      kind: 'wait',
      label: 'Waiting for children',
      detail: '',
      startMs: at,
      outcome: 'open',
      children: [],
    });
  }
}

function closeQueue(trace: Trace, at: number): void {
  if (trace.queue && trace.queue.endMs === undefined)
    trace.queue = { ...trace.queue, endMs: at, outcome: 'stopped' };
}

/** When the last span of `group` that has ended ended. */
function lastEnd(group: AttemptGroup): number | undefined {
  let latest: number | undefined;
  for (const span of group.spans) if (span.endMs !== undefined) latest = Math.max(latest ?? 0, span.endMs);
  return latest;
}
