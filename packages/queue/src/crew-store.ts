import type {
  ChildResult,
  ChildResultStatus,
  ChildRun,
  ErrorBody,
  RunEventInput,
  Usage,
} from '@tether/protocol';
import { QueueError } from './errors.js';
import { eventArgs, eventPairs } from './event-log.js';
import { luaJson } from './lua-script.js';
import type { RunRecord } from './records.js';
import * as scripts from './scripts.js';
import { readWake, type StoreContext } from './store-context.js';

/**
 * The crew in Redis: a parent's delegation (the children it waits on and
 * their results) and the report of a child's end to its parent. A crew tree
 * keeps its keys in its root's hash slot, so a child's end and its report to
 * the parent are one script (`finalizeRun`); `reportChild` is the repair for
 * a child that ended without reporting, or is gone.
 */

/** How much of a child's output (or error, or reason) its parent gets. */
export const CHILD_SUMMARY_MAX_CHARS = 8_000;

/** The delegation a crew parent waits on. */
export interface Delegation {
  /** The tool call that delegated. */
  call: string;
  size: number;
  /** Children that have not reported yet. */
  pending: number;
  /** When the children time out (epoch ms). */
  deadlineMs: number;
  /** Its children's task indexes, by child run id. */
  children: Map<string, number>;
  /** The results reported so far, by child run id. */
  results: Map<string, ChildResult>;
}

/** How a child's end reads for its parent: status, summary and usage. */
export interface ChildOutcome {
  status: ChildResultStatus;
  summary: string;
  usage: Usage;
}

const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

/** The code of the failure a child that ran past its deadline ends with. */
export const CHILD_TIMEOUT_CODE = 'ERR_CREW_CHILD_TIMEOUT';

/** A summary capped at {@link CHILD_SUMMARY_MAX_CHARS}, with a note saying where and how much was cut. */
export function capSummary(text: string): string {
  if (text.length <= CHILD_SUMMARY_MAX_CHARS) return text;
  const note = `\n[... summary cut here: ${text.length - CHILD_SUMMARY_MAX_CHARS} more characters are in the child run's output ...]`;
  return text.slice(0, CHILD_SUMMARY_MAX_CHARS) + note;
}

/** How a run's end reads for its parent, from what ended it. */
export function childOutcome(
  end:
    | { status: 'completed'; output: string; escalated?: boolean | undefined; usage?: Usage | undefined }
    | { status: 'failed'; error: ErrorBody; usage?: Usage | undefined }
    | { status: 'cancelled'; reason?: string | undefined },
): ChildOutcome {
  const usage = ('usage' in end && end.usage) || NO_USAGE;
  if (end.status === 'completed') {
    return { status: end.escalated ? 'escalated' : 'completed', summary: capSummary(end.output), usage };
  }
  if (end.status === 'failed') {
    const status = end.error.code === CHILD_TIMEOUT_CODE ? 'timed_out' : 'failed';
    return { status, summary: capSummary(`${end.error.code}: ${end.error.message}`), usage };
  }
  return { status: 'cancelled', summary: capSummary(end.reason ?? 'cancelled'), usage };
}

/** How an ended run's record reads for its parent. */
export function outcomeOfRecord(record: RunRecord): ChildOutcome {
  switch (record.status) {
    case 'completed':
      return childOutcome({
        status: 'completed',
        output: record.output ?? '',
        escalated: record.crew?.escalated,
        usage: record.usage,
      });
    case 'failed':
      return childOutcome({
        status: 'failed',
        error: record.error ?? { code: 'ERR_INTERNAL', message: 'The child run failed.' },
        usage: record.usage,
      });
    default:
      return childOutcome({ status: 'cancelled', reason: 'cancelled' });
  }
}

/** What a parent delegates: its tool call, the children's deadline, the life limit and the children. */
export interface NewDelegation {
  call: string;
  deadlineMs: number;
  maxChildren: number;
  children: readonly { id: string; index: number; goal: string }[];
}

/**
 * Records a delegation (its children already created) and appends `events`
 * then `child.started` for each child: the run waits for its children. Done
 * again for the same call, nothing changes (`again`).
 * @throws QueueError `ERR_RUN_NOT_OWNER`, `ERR_RUN_CANCEL_REQUESTED`, `ERR_CREW_MAX_CHILDREN`
 */
export async function delegate(
  ctx: StoreContext,
  runId: string,
  token: string,
  delegation: NewDelegation,
  events: readonly RunEventInput[] = [],
): Promise<'recorded' | 'again'> {
  const keys = ctx.keys.run(runId);
  const children = delegation.children.flatMap((child) => [
    child.id,
    luaJson({ childRunId: child.id, index: child.index, goal: child.goal }),
  ]);
  const result = await scripts.delegateRun.run(ctx.redis, {
    keys,
    args: {
      ...eventArgs(ctx, keys, runId),
      token,
      call: delegation.call,
      deadline: delegation.deadlineMs,
      maxChildren: delegation.maxChildren,
      childCount: delegation.children.length,
      rest: [...children, ...eventPairs(events)],
    },
  });
  switch (result) {
    case 1:
      return 'recorded';
    case 2:
      return 'again';
    case 0:
      throw new QueueError('ERR_RUN_NOT_OWNER', `Run ${runId} is owned by another worker now.`);
    case -1:
      throw new QueueError('ERR_RUN_CANCEL_REQUESTED', `Run ${runId} was cancelled or has ended.`);
    default:
      throw new QueueError(
        'ERR_CREW_MAX_CHILDREN',
        `Run ${runId} may start at most ${delegation.maxChildren} children over its life.`,
      );
  }
}

/** The delegation the run waits on, if any. */
export async function readDelegation(ctx: StoreContext, runId: string): Promise<Delegation | undefined> {
  const hash = await ctx.redis.hgetall(ctx.keys.run(runId).delegation);
  if (!hash.call) return undefined;
  const results = new Map<string, ChildResult>();
  const children = new Map<string, number>();
  for (const [field, value] of Object.entries(hash)) {
    if (field.startsWith('r:')) results.set(field.slice(2), JSON.parse(value) as ChildResult);
    else if (field.startsWith('c:')) children.set(field.slice(2), Number(value));
  }
  return {
    call: hash.call,
    size: Number(hash.size),
    pending: Number(hash.pending),
    deadlineMs: Number(hash.deadline),
    children,
    results,
  };
}

/**
 * Why a run that just went back to waiting for its children should not sleep
 * until their deadline: every child has reported, or a cancel was requested,
 * while the worker was still moving its job to delayed (neither could wake a
 * job that was still active). One round trip; the keys share the run's slot.
 */
export async function childrenWakeReason(
  ctx: StoreContext,
  runId: string,
): Promise<'ready' | 'cancel' | undefined> {
  const { value: pending, cancel } = await readWake(ctx, runId, ctx.keys.run(runId).delegation, 'pending');
  if (cancel) return 'cancel';
  if (pending === '0') return 'ready';
  return undefined;
}

/**
 * Records a child's result in its parent's delegation `call`, once (with
 * `child.finished` in the parent's log). True when it was the last to report.
 */
export async function reportChild(
  ctx: StoreContext,
  parentRunId: string,
  child: { id: string; call: string; index: number; durationMs: number },
  outcome: ChildOutcome,
): Promise<boolean> {
  const keys = ctx.keys.run(parentRunId);
  const result = await scripts.reportChild.run(ctx.redis, {
    keys: { parentRecord: keys.record, parentEvents: keys.events, parentDelegation: keys.delegation },
    args: {
      channel: keys.eventsChannel,
      maxlen: ctx.eventMaxLength,
      parentId: parentRunId,
      childId: child.id,
      call: child.call,
      index: child.index,
      status: outcome.status,
      summary: outcome.summary,
      usage: JSON.stringify(outcome.usage),
      durationMs: Math.max(0, Math.round(child.durationMs)),
    },
  });
  return result === 1;
}

/** The crew children a run started, in order, with their status (a child that is gone is left out). */
export async function readChildren(ctx: StoreContext, runId: string): Promise<ChildRun[]> {
  const ids = await ctx.redis.lrange(ctx.keys.run(runId).children, 0, -1);
  if (ids.length === 0) return [];
  const pipeline = ctx.redis.pipeline();
  for (const id of ids) pipeline.hmget(ctx.keys.run(id).record, 'status', 'index', 'escalated', 'error');
  const replies = (await pipeline.exec()) ?? [];
  const children: ChildRun[] = [];
  ids.forEach((id, i) => {
    const [status, index, escalated, error] = (replies[i]?.[1] ?? []) as (string | null)[];
    if (!status) return;
    const child: ChildRun = { id, index: Number(index ?? 0), status: status as ChildRun['status'] };
    if (status === 'completed') child.outcome = escalated ? 'escalated' : 'completed';
    else if (status === 'cancelled') child.outcome = 'cancelled';
    else if (status === 'failed') {
      child.outcome = error?.includes(`"${CHILD_TIMEOUT_CODE}"`) ? 'timed_out' : 'failed';
    }
    children.push(child);
  });
  return children;
}
