import { storedCheckpoint } from '@tether/agent';
import type { RunEventInput } from '@tether/protocol';
import { baseDelay, promoteJob, RetryLater, retryDelayMs } from '@tether/queue';
import { DelayedError, WaitingError } from 'bullmq';
import type { AttemptContext, Settlement } from './context.js';

/**
 * Settle: the one place an attempt's end is recorded in the run (one script
 * each, `events` not yet written going first) and mapped to BullMQ:
 *
 * | settlement | the run | the job |
 * | --- | --- | --- |
 * | completed | `run.completed` (with the final checkpoint) | completed, with the output |
 * | failed, retryable, attempts left | `run.retrying` (queued) | `RetryLater`: BullMQ retries after its delay |
 * | failed otherwise | `run.failed` | completed |
 * | cancelled | `run.cancelled` | completed |
 * | suspended | `clarify.requested` (waiting_for_input) | delayed until the deadline (`DelayedError`) |
 * | sleep (woken early) | waiting_for_input again | delayed until the deadline (`DelayedError`) |
 * | released (shutdown) | queued | waiting, for another worker (`WaitingError`) |
 * | blocked (a session's run ahead) | nothing | delayed 60 s, woken when the run ahead ends (`DelayedError`) |
 * | lost, nothing | nothing | completed (another owner, or none, carries on) |
 *
 * Returns the job's result, or throws what tells BullMQ to delay, wait or retry.
 */
export async function settleOutcome(
  ctx: AttemptContext,
  settlement: Settlement,
  events: readonly RunEventInput[] = [],
  turn: readonly string[] = [],
  sessionId?: string | undefined,
): Promise<string | undefined> {
  const result = await settle(ctx, settlement, events, turn);
  // A session's run that ended lets the next run of its session go (it waits, delayed, until then).
  if (
    sessionId &&
    (settlement.kind === 'completed' || settlement.kind === 'failed' || settlement.kind === 'cancelled')
  ) {
    await ctx
      .wakeSession(sessionId)
      .catch((error: unknown) =>
        ctx.log.warn({ err: error }, "could not wake the session's next run; its own delay will"),
      );
  }
  return result;
}

/** How long a session's run waits for the run ahead of it before it looks again (it is woken when that one ends). */
export const SESSION_WAIT_MS = 60_000;

async function settle(
  ctx: AttemptContext,
  settlement: Settlement,
  events: readonly RunEventInput[],
  turn: readonly string[],
): Promise<string | undefined> {
  const { store, runId, fence, job, token, log } = ctx;
  switch (settlement.kind) {
    case 'nothing':
      log.info({ why: settlement.why }, 'nothing to do for this run');
      return undefined;
    case 'lost':
      log.warn('this worker lost its lock on the run; it stopped without writing anything more');
      return undefined;
    case 'completed': {
      const { output, checkpoint } = settlement;
      const ended = await store.finalize(
        runId,
        {
          status: 'completed',
          output,
          usage: checkpoint.usage,
          // The final turn was not saved on its own: it is stored with the end.
          checkpoint: { json: storedCheckpoint(checkpoint), todos: checkpoint.todos, step: checkpoint.step },
        },
        fence,
        events,
        turn,
      );
      if (!ended) {
        log.warn('the run had ended, or another worker owns it: this answer was not recorded');
        return undefined;
      }
      log.info({ steps: checkpoint.step }, 'run completed');
      return output;
    }
    case 'failed': {
      const { error, usage } = settlement;
      if (settlement.retryable && ctx.attempt < (job.opts.attempts ?? 1)) {
        // One delay, decided here: `run.retrying` says it, and BullMQ's backoff strategy takes it from the error.
        const delayMs = retryDelayMs(baseDelay(job.opts.backoff), ctx.attempt);
        await store.appendEvents(runId, events, fence);
        await store.markRetrying(runId, fence, ctx.attempt + 1, delayMs, error);
        log.warn({ err: error, delayMs }, 'attempt failed; it will be retried');
        throw new RetryLater(`${error.code}: ${error.message}`, delayMs, { cause: settlement.cause });
      }
      await store.finalize(runId, { status: 'failed', error, usage }, fence, events, turn);
      log.warn({ err: error }, 'run failed');
      return undefined;
    }
    case 'cancelled':
      // Whoever owns the run: a cancel ends it from any attempt.
      await store.finalize(runId, { status: 'cancelled', reason: 'cancelled by request' }, '', events, turn);
      log.info('run cancelled');
      return undefined;
    case 'suspended': {
      const { pending } = settlement;
      await store.suspend(runId, fence, pending, events);
      await job.moveToDelayed(Date.parse(pending.expiresAt), token);
      // An answer or a cancel that arrived before the job was delayed could not wake it: do it now
      // (a cancelled run then ends at its claim, instead of at the question's deadline).
      if ((await store.wakeReason(runId, pending.requestId)) !== undefined) await promoteJob(job);
      log.info(
        { requestId: pending.requestId, expiresAt: pending.expiresAt },
        'run suspended on a clarify question',
      );
      throw new DelayedError();
    }
    case 'sleep':
      // Woken before an answer or the deadline: back to sleep until the deadline.
      await store.setStatus(runId, fence, 'waiting_for_input');
      await job.moveToDelayed(settlement.untilMs, token);
      // An answer or a cancel that came while this attempt looked could not wake it: do it now.
      if ((await store.wakeReason(runId, settlement.requestId)) !== undefined) await promoteJob(job);
      throw new DelayedError();
    case 'blocked':
      // Another run of the session is ahead: wait, without a slot, until it ends (its end wakes this one).
      await job.moveToDelayed(Date.now() + SESSION_WAIT_MS, token);
      // The run ahead may have ended before this job was delayed, and could not wake it: look again.
      if ((await store.sessionHead(runId)) === runId) await promoteJob(job);
      log.info({ ahead: settlement.ahead }, "waiting for the session's run ahead");
      throw new DelayedError();
    case 'released':
      // Shutdown: hand the run back to the queue; another worker continues from the checkpoint.
      await store.appendEvents(runId, events, fence);
      await store.setStatus(runId, fence, 'queued');
      await job.moveToWait(token);
      log.info('run released for another worker (shutdown)');
      throw new WaitingError();
  }
}
