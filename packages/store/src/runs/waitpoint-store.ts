import type {
  ApprovalDecision,
  ChildResult,
  PendingApproval,
  PendingClarify,
  PendingToolCall,
  RunEventInput,
  RunEventType,
} from '@tether/protocol';
import { QueueError } from '../errors.js';
import type { RunKeys } from '../redis/keys.js';
import { luaJson } from '../redis/lua-script.js';
import { readWake, type StoreContext } from '../redis/store-context.js';
import * as scripts from './commands/scripts.js';
import type { ChildOutcome } from './crew-store.js';
import { eventArgs, eventPairs, readEventData, requestEvents } from './event-log.js';
import { parseWaitpoint, type RequestKind, type Waitpoint } from './replies.js';

/**
 * The waitpoint in Redis: what a run waits on, one at a time, held in one hash (`RunKeys.waitpoint`).
 * A question, a model turn's client tool calls and a crew parent's children are each a kind of
 * request on it; three scripts take every step of it: open (`openWaitpoint`), resolve one request
 * (`resolveRequest`: an answer, an output, a child's report) and expire (`expireWaitpoint`: the
 * worker that resumes the run past the deadline). The functions named for a kind below are the
 * same three steps with that kind's request, event and refusals.
 */

/** A new waitpoint: its id, deadline and requests (all of one kind). */
export interface NewWaitpoint {
  /** The question's request id, the first client tool call's, or the delegation's key. */
  id: string;
  deadlineMs: number;
  requests: readonly { id: string; kind: RequestKind; request: string }[];
  /** For children: how many the run may start over its life. */
  maxChildren?: number | undefined;
  /** For approvals: the decision taken at the deadline. */
  onTimeout?: 'approve' | 'reject' | undefined;
}

export type { RequestKind, StoredRequest, Waitpoint } from './replies.js';

/**
 * The keys and arguments that tell a crew child's decisions on tool calls on its tree's root run
 * too (`root`: the root's id; undefined for a run that is no crew child, whose unused key stands in).
 */
function rootArgs(ctx: StoreContext, keys: RunKeys, root: string | undefined) {
  if (root === undefined) return { rootEvents: keys.unused, rootChannel: '', rootRunId: '' };
  const rootKeys = ctx.keys.run(root);
  return { rootEvents: rootKeys.events, rootChannel: rootKeys.eventsChannel, rootRunId: root };
}

/** What resolving one request came to (see the `resolveRequest` script). */
export type ResolveResult = scripts.Replies['resolveRequest'];

/** The fate of one request, as a resuming worker learns it. */
export interface RequestOutcome {
  requestId: string;
  state: 'answered' | 'received' | 'reported' | 'decided' | 'timed_out';
  /** The answer, the output as stored (JSON), the child's result (JSON), the decision (JSON); '' when timed out. */
  result: string;
}

/** What a resuming worker finds of the waitpoint its run waits on. */
export type WaitpointState =
  | { state: 'ready'; outcomes: RequestOutcome[] }
  | { state: 'pending'; deadlineMs: number }
  | { state: 'missing' }
  | { state: 'not_owner' };

/**
 * Opens a waitpoint: records its requests and appends `events` then the requests' events; the run
 * waits. Done again for the same waitpoint: `again`, nothing recorded twice.
 * @throws QueueError `ERR_RUN_NOT_OWNER`, `ERR_RUN_CANCEL_REQUESTED`, `ERR_CREW_MAX_CHILDREN`
 */
export async function openWaitpoint(
  ctx: StoreContext,
  runId: string,
  token: string,
  waitpoint: NewWaitpoint,
  events: readonly RunEventInput[] = [],
  root?: string,
): Promise<'recorded' | 'again'> {
  if (waitpoint.requests.length === 0) throw new RangeError('a waitpoint needs at least one request');
  const keys = ctx.keys.run(runId);
  const { rootEvents, ...mirror } = rootArgs(ctx, keys, root);
  const result = await scripts.openWaitpoint.run(ctx.redis, {
    keys: { ...keys, rootEvents },
    args: {
      ...eventArgs(ctx, keys, runId),
      ...mirror,
      token,
      id: waitpoint.id,
      deadline: waitpoint.deadlineMs,
      maxChildren: waitpoint.maxChildren ?? '',
      onTimeout: waitpoint.onTimeout ?? '',
      count: waitpoint.requests.length,
      rest: [
        ...waitpoint.requests.flatMap((request) => [request.id, request.kind, request.request]),
        ...eventPairs(events),
      ],
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
        `Run ${runId} may start at most ${waitpoint.maxChildren} children over its life.`,
      );
  }
}

/** Resolves one request of the run's waitpoint, the first time only (see the `resolveRequest` script). */
export function resolveRequest(
  ctx: StoreContext,
  runId: string,
  request: {
    requestId: string;
    kind: RequestKind;
    result: string;
    event: { type: RunEventType; data: string };
    /** The waitpoint the request must be of ('' or absent: the current one). */
    waitpointId?: string;
    tokenHash?: string;
    /** A crew child's root run, told of a decision too. */
    root?: string | undefined;
  },
): Promise<ResolveResult> {
  const keys = ctx.keys.run(runId);
  const { rootEvents, ...mirror } = rootArgs(ctx, keys, request.root);
  return scripts.resolveRequest.run(ctx.redis, {
    keys: { ...keys, rootEvents },
    args: {
      ...eventArgs(ctx, keys, runId),
      ...mirror,
      waitpointId: request.waitpointId ?? '',
      requestId: request.requestId,
      kind: request.kind,
      result: request.result,
      eventType: request.event.type,
      eventData: request.event.data,
      tokenHash: request.tokenHash ?? '',
    },
  });
}

/** What a resuming worker learns of waitpoint `id` (its requests `requestIds`), timing it out past the deadline. */
export async function expireWaitpoint(
  ctx: StoreContext,
  runId: string,
  id: string,
  requestIds: readonly string[],
  token: string,
  root?: string,
): Promise<WaitpointState> {
  const keys = ctx.keys.run(runId);
  const { rootEvents, ...mirror } = rootArgs(ctx, keys, root);
  const reply = await scripts.expireWaitpoint.run(ctx.redis, {
    keys: { ...keys, rootEvents },
    args: { ...eventArgs(ctx, keys, runId), token, id, ...mirror, requestIds },
  });
  switch (reply[0]) {
    case 'pending':
      return { state: 'pending', deadlineMs: Number(reply[1]) };
    case 'not_owner':
      return { state: 'not_owner' };
    case 'missing':
      return { state: 'missing' };
    default: {
      const outcomes: RequestOutcome[] = [];
      for (let i = 1; i + 2 < reply.length; i += 3) {
        outcomes.push({
          requestId: reply[i] as string,
          state: reply[i + 1] as RequestOutcome['state'],
          result: reply[i + 2] as string,
        });
      }
      return { state: 'ready', outcomes };
    }
  }
}

/** The waitpoint the run waits on, if any (a run that ended keeps none). */
export async function readWaitpoint(ctx: StoreContext, runId: string): Promise<Waitpoint | undefined> {
  const keys = ctx.keys.run(runId);
  const replies = await ctx.redis.pipeline().hgetall(keys.waitpoint).hgetall(keys.waitpointResults).exec();
  const [hash, results] = (replies ?? []).map(([error, reply]) => {
    if (error) throw error;
    return reply as Record<string, string>;
  });
  if (!hash?.id) return undefined;
  const bodies = await readEventData(ctx, requestEvents(runId, hash));
  return parseWaitpoint(hash, bodies.get(runId), results);
}

/**
 * Why a run that just went to sleep on its waitpoint should not have: every request was resolved,
 * or a cancel was requested, while the worker was still moving its job to delayed (neither could
 * wake a job that was still active). One round trip; the keys share the run's slot.
 */
export async function wakeReason(
  ctx: StoreContext,
  runId: string,
): Promise<'resolved' | 'cancel' | undefined> {
  const { value: pending, cancel } = await readWake(ctx, runId, ctx.keys.run(runId).waitpoint, 'pending');
  if (cancel) return 'cancel';
  if (pending !== null && Number(pending) <= 0) return 'resolved';
  return undefined;
}

// A question.

/** What an answer came to. */
export type AnswerResult = Exclude<ResolveResult, 'last' | 'received' | 'reported' | 'decided'>;

/** Records a clarify question and appends `events` then `clarify.requested`; throws as `openWaitpoint` does. */
export async function suspend(
  ctx: StoreContext,
  runId: string,
  token: string,
  pending: PendingClarify,
  events: readonly RunEventInput[] = [],
): Promise<'recorded' | 'again'> {
  const request = { id: pending.requestId, kind: 'question' as const, request: JSON.stringify(pending) };
  const deadlineMs = Date.parse(pending.expiresAt);
  return openWaitpoint(ctx, runId, token, { id: pending.requestId, deadlineMs, requests: [request] }, events);
}

/**
 * The first answer wins. With `tokenHash` (the SHA-256, hex, of a webhook's answer token), only
 * when that token is one of this question's and was not used.
 */
export async function answer(
  ctx: StoreContext,
  runId: string,
  requestId: string,
  text: string,
  tokenHash = '',
): Promise<AnswerResult> {
  const result = await resolveRequest(ctx, runId, {
    requestId,
    kind: 'question',
    result: text,
    event: { type: 'clarify.answered', data: JSON.stringify({ requestId, answer: text }) },
    tokenHash,
  });
  if (result === 'last') return 'ok';
  // A request id of another kind is no question of the run's.
  if (result === 'received' || result === 'reported' || result === 'decided') return 'no_request';
  return result;
}

// Client tool calls.

/** What posting an output did. */
export type ToolOutputResult = Exclude<
  ResolveResult,
  'answered' | 'reported' | 'decided' | 'bad_token' | 'token_used'
>;

/** The fate of one client tool call, as a resuming worker learns it. */
export type ToolCallOutcome =
  | { requestId: string; output: string; isError: boolean }
  | { requestId: string; timedOut: true };

/**
 * Records the calls as pending requests (they share the earliest `expiresAt` as their deadline)
 * and appends `events`, then `tool.requested` per call: the run waits for input. Done again for
 * the same calls: `again`, nothing recorded twice.
 * @throws QueueError `ERR_RUN_NOT_OWNER`, `ERR_RUN_CANCEL_REQUESTED`
 */
export function requestToolCalls(
  ctx: StoreContext,
  runId: string,
  token: string,
  calls: readonly PendingToolCall[],
  events: readonly RunEventInput[] = [],
): Promise<'recorded' | 'again'> {
  const first = calls[0];
  if (!first) throw new RangeError('requestToolCalls needs at least one call');
  const deadlineMs = Math.min(...calls.map((call) => Date.parse(call.expiresAt)));
  const requests = calls.map((call) => ({
    id: call.requestId,
    kind: 'tool_output' as const,
    request: JSON.stringify(call),
  }));
  return openWaitpoint(ctx, runId, token, { id: first.requestId, deadlineMs, requests }, events);
}

/** A client's output for a pending call: the first wins; the last one queues a run asleep on them. */
export async function postToolOutput(
  ctx: StoreContext,
  runId: string,
  requestId: string,
  output: string,
  isError: boolean,
): Promise<ToolOutputResult> {
  const result = await resolveRequest(ctx, runId, {
    requestId,
    kind: 'tool_output',
    result: JSON.stringify({ output, isError }),
    event: { type: 'tool.output_received', data: JSON.stringify({ requestId, isError }) },
  });
  if (
    result === 'answered' ||
    result === 'reported' ||
    result === 'decided' ||
    result === 'bad_token' ||
    result === 'token_used'
  ) {
    return 'no_request';
  }
  return result;
}

/** A client tool call's fate from its request's outcome. */
export function toolCallOutcome(outcome: RequestOutcome): ToolCallOutcome {
  if (outcome.state !== 'received') return { requestId: outcome.requestId, timedOut: true };
  const { output, isError } = JSON.parse(outcome.result) as { output: string; isError: boolean };
  return { requestId: outcome.requestId, output, isError };
}

// Decisions on tool calls (approvals).

/** What posting a decision did. */
export type DecisionResult = Exclude<ResolveResult, 'answered' | 'received' | 'reported'>;

/**
 * Records the calls that wait for a decision (they share the deadline and the policy's
 * `onTimeout`) and appends `events`, then `approval.requested` per call: the run waits for input.
 * Done again for the same calls: `again`, nothing recorded twice.
 * @throws QueueError `ERR_RUN_NOT_OWNER`, `ERR_RUN_CANCEL_REQUESTED`
 */
export function requestApprovals(
  ctx: StoreContext,
  runId: string,
  token: string,
  approvals: readonly PendingApproval[],
  events: readonly RunEventInput[] = [],
  root?: string,
): Promise<'recorded' | 'again'> {
  const first = approvals[0];
  if (!first) throw new RangeError('requestApprovals needs at least one call');
  const deadlineMs = Math.min(...approvals.map((approval) => Date.parse(approval.expiresAt)));
  const requests = approvals.map((approval) => ({
    id: approval.requestId,
    kind: 'approval' as const,
    request: JSON.stringify(approval),
  }));
  const { onTimeout } = first;
  return openWaitpoint(
    ctx,
    runId,
    token,
    { id: first.requestId, deadlineMs, onTimeout, requests },
    events,
    root,
  );
}

/**
 * A decision on a call that waits for one: the first wins (`approval.resolved` names who took
 * it); the last one queues a run asleep on them. With `tokenHash`, only by that answer token.
 */
export async function decide(
  ctx: StoreContext,
  runId: string,
  requestId: string,
  decision: ApprovalDecision,
  tokenHash = '',
  root?: string,
): Promise<DecisionResult> {
  const result = await resolveRequest(ctx, runId, {
    requestId,
    kind: 'approval',
    result: JSON.stringify(decision),
    event: { type: 'approval.resolved', data: JSON.stringify({ requestId, ...decision }) },
    tokenHash,
    root,
  });
  if (result === 'answered' || result === 'received' || result === 'reported') return 'no_request';
  return result;
}

/** A decision from its request's outcome (undefined: it timed out). */
export function decisionOf(outcome: RequestOutcome): ApprovalDecision | undefined {
  return outcome.state === 'decided' ? (JSON.parse(outcome.result) as ApprovalDecision) : undefined;
}

// A crew parent's children.

/** What a parent delegates: its tool call, the children's deadline, the life limit and the children. */
export interface NewDelegation {
  call: string;
  deadlineMs: number;
  maxChildren: number;
  children: readonly { id: string; index: number; goal: string }[];
}

/** The delegation a crew parent waits on. */
export interface Delegation {
  /** The tool call that delegated (the waitpoint's id). */
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

/**
 * Records a delegation (its children already created) and appends `events` then `child.started`
 * for each child: the run waits for its children. Done again for the same call, nothing changes
 * (`again`).
 * @throws QueueError `ERR_RUN_NOT_OWNER`, `ERR_RUN_CANCEL_REQUESTED`, `ERR_CREW_MAX_CHILDREN`
 */
export function delegate(
  ctx: StoreContext,
  runId: string,
  token: string,
  delegation: NewDelegation,
  events: readonly RunEventInput[] = [],
): Promise<'recorded' | 'again'> {
  const requests = delegation.children.map((child) => ({
    id: child.id,
    kind: 'child' as const,
    request: luaJson({ childRunId: child.id, index: child.index, goal: child.goal }),
  }));
  const { call: id, deadlineMs, maxChildren } = delegation;
  return openWaitpoint(ctx, runId, token, { id, deadlineMs, maxChildren, requests }, events);
}

/** The delegation the run waits on, if it waits on children. */
export async function readDelegation(ctx: StoreContext, runId: string): Promise<Delegation | undefined> {
  const waitpoint = await readWaitpoint(ctx, runId);
  if (waitpoint?.kind !== 'child') return undefined;
  const children = new Map<string, number>();
  const results = new Map<string, ChildResult>();
  for (const [childId, request] of waitpoint.requests) {
    children.set(childId, Number(request.request.index));
    if (request.result !== undefined) results.set(childId, JSON.parse(request.result) as ChildResult);
  }
  return {
    call: waitpoint.id,
    size: waitpoint.requests.size,
    pending: waitpoint.pending,
    deadlineMs: waitpoint.deadlineMs,
    children,
    results,
  };
}

/**
 * Records a child's result in its parent's delegation `call`, once (with `child.finished` in the
 * parent's log). True when it was the last to report.
 */
export async function reportChild(
  ctx: StoreContext,
  parentRunId: string,
  child: { id: string; call: string; index: number; durationMs: number },
  outcome: ChildOutcome,
): Promise<boolean> {
  if (!child.call) return false;
  const { status, summary, usage } = outcome;
  const durationMs = Math.max(0, Math.round(child.durationMs));
  const result: ChildResult = { index: child.index, runId: child.id, status, summary, usage, durationMs };
  const finished = { childRunId: child.id, index: child.index, status, summary };
  const reply = await resolveRequest(ctx, parentRunId, {
    waitpointId: child.call,
    requestId: child.id,
    kind: 'child',
    result: luaJson(result),
    event: { type: 'child.finished', data: luaJson(finished) },
  });
  return reply === 'last';
}
