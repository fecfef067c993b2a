import type { PendingToolCall, RunEventInput } from '@tether/protocol';
import { QueueError } from './errors.js';
import { eventArgs, eventPairs } from './event-log.js';
import * as scripts from './scripts.js';
import { readWake, type StoreContext } from './store-context.js';

/**
 * Client-executed tool calls in Redis: the calls of one model turn that a
 * run waits on (`toolCalls` of its keys) and the outputs clients post
 * (`toolOutputs`). They wait as a clarify question does (status
 * `waiting_for_input`, no slot held), several at once: the run is queued
 * again when the last one has its output, or resumed at their deadline.
 */

/** What posting an output did (see the `postToolOutput` script). */
export type ToolOutputResult =
  | 'ok'
  | 'last'
  | 'no_run'
  | 'no_request'
  | 'received'
  | 'timed_out'
  | 'expired'
  | 'ended';

/** The fate of one call, as a resuming worker learns it. */
export type ToolCallOutcome =
  | { requestId: string; output: string; isError: boolean }
  | { requestId: string; timedOut: true };

/** What a resuming worker finds of the calls its run waits on. */
export type ToolCallsState =
  | { state: 'ready'; outcomes: ToolCallOutcome[] }
  | { state: 'pending'; deadlineMs: number }
  | { state: 'missing' }
  | { state: 'not_owner' };

/**
 * Records the calls as pending requests (they share `calls[0].expiresAt` as
 * their deadline) and appends `events`, then `tool.requested` per call: the
 * run waits for input. Done again for the same calls: `again`, nothing
 * recorded twice.
 * @throws QueueError `ERR_RUN_NOT_OWNER`, `ERR_RUN_CANCEL_REQUESTED`
 */
export async function requestToolCalls(
  ctx: StoreContext,
  runId: string,
  token: string,
  calls: readonly PendingToolCall[],
  events: readonly RunEventInput[] = [],
): Promise<'recorded' | 'again'> {
  if (calls.length === 0) throw new RangeError('requestToolCalls needs at least one call');
  const keys = ctx.keys.run(runId);
  const deadlineMs = Math.min(...calls.map((call) => Date.parse(call.expiresAt)));
  const ttl = Math.ceil(Math.max(0, deadlineMs - Date.now()) / 1000) + ctx.retentionSeconds;
  const result = await scripts.requestToolCalls.run(ctx.redis, {
    keys,
    args: {
      ...eventArgs(ctx, keys, runId),
      token,
      deadline: deadlineMs,
      ttl,
      callCount: calls.length,
      rest: [...calls.flatMap((call) => [call.requestId, JSON.stringify(call)]), ...eventPairs(events)],
    },
  });
  if (result === 0) throw new QueueError('ERR_RUN_NOT_OWNER', `Run ${runId} is owned by another worker now.`);
  if (result === -1)
    throw new QueueError('ERR_RUN_CANCEL_REQUESTED', `Run ${runId} was cancelled or has ended.`);
  return result === 1 ? 'recorded' : 'again';
}

/** A client's output for a pending call: the first wins (see the `postToolOutput` script). */
export function postToolOutput(
  ctx: StoreContext,
  runId: string,
  requestId: string,
  output: string,
  isError: boolean,
): Promise<ToolOutputResult> {
  const keys = ctx.keys.run(runId);
  return scripts.postToolOutput.run(ctx.redis, {
    keys,
    args: {
      ...eventArgs(ctx, keys, runId),
      requestId,
      output: JSON.stringify({ output, isError }),
      isError: isError ? '1' : '0',
    },
  });
}

/** What a resuming worker learns of the calls `requestIds`, timing out those still waiting past the deadline. */
export async function resolveToolCalls(
  ctx: StoreContext,
  runId: string,
  requestIds: readonly string[],
  token: string,
): Promise<ToolCallsState> {
  const keys = ctx.keys.run(runId);
  const reply = await scripts.resolveToolCalls.run(ctx.redis, {
    keys,
    args: { ...eventArgs(ctx, keys, runId), token, requestIds },
  });
  switch (reply[0]) {
    case 'pending':
      return { state: 'pending', deadlineMs: Number(reply[1]) };
    case 'not_owner':
      return { state: 'not_owner' };
    case 'missing':
      return { state: 'missing' };
    default: {
      const outcomes: ToolCallOutcome[] = [];
      for (let i = 1; i + 2 < reply.length; i += 3) {
        const requestId = reply[i] as string;
        const stored = reply[i + 2] as string;
        if (reply[i + 1] === 'received') {
          const { output, isError } = JSON.parse(stored) as { output: string; isError: boolean };
          outcomes.push({ requestId, output, isError });
        } else outcomes.push({ requestId, timedOut: true });
      }
      return { state: 'ready', outcomes };
    }
  }
}

/**
 * Why a run that just went to sleep on its tool calls should not: every call
 * got its output, or a cancel was requested, while the worker was still
 * moving its job to delayed (neither could wake a job that was still
 * active). One round trip; the two keys share the run's slot.
 */
export async function toolCallsWakeReason(
  ctx: StoreContext,
  runId: string,
): Promise<'received' | 'cancel' | undefined> {
  const { value: pending, cancel } = await readWake(ctx, runId, ctx.keys.run(runId).toolCalls, 'pending');
  if (cancel) return 'cancel';
  if (pending !== null && Number(pending) <= 0) return 'received';
  return undefined;
}
