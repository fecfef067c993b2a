import type { PendingClarify, RunEventInput } from '@tether/protocol';
import { QueueError } from './errors.js';
import { eventArgs, eventPairs } from './event-log.js';
import * as scripts from './scripts.js';
import { readWake, type StoreContext } from './store-context.js';

/** What an answer came to: `answerClarify`'s reply. */
export type AnswerResult = scripts.Replies['answerClarify'];
export type ClarifyState =
  | { state: 'answered'; answer: string }
  | { state: 'timed_out' }
  | { state: 'pending'; expiresAtMs: number }
  | { state: 'missing' }
  | { state: 'not_owner' };

/** Records a clarify question and appends `events` then `clarify.requested`; throws as `saveCheckpoint` does. */
export async function suspend(
  ctx: StoreContext,
  runId: string,
  token: string,
  pending: PendingClarify,
  events: readonly RunEventInput[] = [],
): Promise<string> {
  const keys = ctx.keys.run(runId);
  const expiresAtMs = Date.parse(pending.expiresAt);
  const ttl = Math.ceil(Math.max(0, expiresAtMs - Date.now()) / 1000) + ctx.retentionSeconds;
  const result = await scripts.suspendRun.run(ctx.redis, {
    keys: { ...keys, clarify: keys.clarify(pending.requestId) },
    args: {
      ...eventArgs(ctx, keys, runId),
      token,
      requestId: pending.requestId,
      expiresAt: expiresAtMs,
      pending: JSON.stringify(pending),
      clarifyTtl: ttl,
      events: eventPairs(events),
    },
  });
  if (result === 0) throw new QueueError('ERR_RUN_NOT_OWNER', `Run ${runId} is owned by another worker now.`);
  if (result === -1)
    throw new QueueError('ERR_RUN_CANCEL_REQUESTED', `Run ${runId} was cancelled or has ended.`);
  return result;
}

/**
 * Why a run that just suspended on `requestId` should not sleep until the
 * deadline: its question was answered, or a cancel was requested, while the
 * worker was still moving its job to delayed (neither could wake a job that
 * was still active). One round trip; the two keys share the run's slot.
 */
export async function wakeReason(
  ctx: StoreContext,
  runId: string,
  requestId: string,
): Promise<'answered' | 'cancel' | undefined> {
  const { value: status, cancel } = await readWake(
    ctx,
    runId,
    ctx.keys.run(runId).clarify(requestId),
    'status',
  );
  if (cancel) return 'cancel';
  if (status === 'answered') return 'answered';
  return undefined;
}

/**
 * The first answer wins (see the `answerClarify` script). With `tokenHash` (the SHA-256, hex, of
 * a webhook's answer token), only when that token is one of this question's and was not used.
 */
export async function answer(
  ctx: StoreContext,
  runId: string,
  requestId: string,
  text: string,
  tokenHash = '',
): Promise<AnswerResult> {
  const keys = ctx.keys.run(runId);
  return scripts.answerClarify.run(ctx.redis, {
    keys: { ...keys, clarify: keys.clarify(requestId) },
    args: {
      ...eventArgs(ctx, keys, runId),
      requestId,
      answer: text,
      tokenHash,
    },
  });
}

/** What a resuming worker learns of its question, timing it out once past the deadline. */
export async function resolveClarify(
  ctx: StoreContext,
  runId: string,
  requestId: string,
  token: string,
): Promise<ClarifyState> {
  const keys = ctx.keys.run(runId);
  const reply = await scripts.resolveClarify.run(ctx.redis, {
    keys: { ...keys, clarify: keys.clarify(requestId) },
    args: {
      ...eventArgs(ctx, keys, runId),
      requestId,
      token,
    },
  });
  switch (reply[0]) {
    case 'answered':
      return { state: 'answered', answer: reply[1] ?? '' };
    case 'timed_out':
      return { state: 'timed_out' };
    case 'pending':
      return { state: 'pending', expiresAtMs: Number(reply[1]) };
    case 'not_owner':
      return { state: 'not_owner' };
    default:
      return { state: 'missing' };
  }
}
