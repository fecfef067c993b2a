import { storedCheckpoint } from '@tether/agent';
import { type RunEventInput, TERMINAL_STATUSES, TetherError } from '@tether/protocol';
import { baseDelay, promoteJob, RetryLater, retryDelayMs } from '@tether/queue';
import { DelayedError, WaitingError } from 'bullmq';
import type { HookAttempt } from '../worker-hooks.js';
import type { AttemptContext, Settlement } from './context.js';
import { delegationKey } from './crew.js';

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
 * | tool_calls | `tool.requested` each (waiting_for_input) | delayed until their deadline, woken when the last output comes (`DelayedError`) |
 * | tools_sleep (woken early) | waiting_for_input again | delayed until their deadline (`DelayedError`) |
 * | released (shutdown) | queued | waiting, for another worker (`WaitingError`) |
 * | blocked (a session's run ahead) | nothing | delayed 60 s, woken when the run ahead ends (`DelayedError`) |
 * | delegating | children created, `child.started` each (waiting_for_children), children queued | delayed until the children's deadline, woken when the last reports (`DelayedError`) |
 * | awaiting (woken early) | waiting_for_children again | delayed until the children's deadline (`DelayedError`) |
 * | capped (over its tenant's cap) | nothing | delayed a few seconds, woken when a slot is handed to it or a cancel is asked for (`DelayedError`) |
 * | lost, the lock still held (not renewed in time) | nothing | waiting, for a new attempt to take the run over (`WaitingError`) |
 * | lost, the lock gone | nothing | left to BullMQ, whose stalled check hands it on (another owner carries on) |
 * | nothing | nothing | completed (another owner, or none, carries on) |
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
  if (ctx.observer) {
    const retried =
      settlement.kind === 'failed' && settlement.retryable && ctx.attempt < (ctx.job.opts.attempts ?? 1);
    ctx.observer.settled(retried ? 'retried' : settlement.kind);
  }
  try {
    return await settle(ctx, settlement, events, turn);
  } finally {
    const ended =
      settlement.kind === 'completed' || settlement.kind === 'failed' || settlement.kind === 'cancelled';
    // A session's run that ended lets the next run of its session go (it waits, delayed, until then).
    if (sessionId && ended) {
      await ctx
        .wakeSession(sessionId)
        .catch((error: unknown) =>
          ctx.log.warn({ err: error }, "could not wake the session's next run; its own delay will"),
        );
    }
    // A crew child's end reaches its parent even when the worker that ended it died before it could
    // wake the parent (its job, left active, comes back to nothing here), or when the child is gone.
    if ((settlement.kind === 'nothing' || settlement.kind === 'lost') && ctx.parentRunId) {
      await repairChild(ctx, ctx.parentRunId);
    }
    // A crew parent that ended leaves no child behind (their claims check it too).
    if (ended && settlement.kind !== 'failed') await cancelLiveChildren(ctx);
    if (
      settlement.kind === 'failed' &&
      !(settlement.retryable && ctx.attempt < (ctx.job.opts.attempts ?? 1))
    ) {
      await cancelLiveChildren(ctx);
    }
  }
}

/**
 * Turns the events the attempt appended into webhook deliveries (its run's, and a crew child's
 * parent's `child.finished`). Called before the job moves, so a worker that dies first leaves the
 * job to come back, and the next attempt dispatches them; a failure here is only logged for the
 * same reason.
 */
export async function dispatchEvents(ctx: AttemptContext, why: string, parent = false): Promise<void> {
  if (!ctx.webhooks) return;
  try {
    await ctx.webhooks.dispatch(ctx.runId, ctx.tenant);
    if (parent && ctx.parentRunId) await ctx.webhooks.dispatch(ctx.parentRunId, ctx.tenant);
  } catch (error) {
    ctx.log.warn({ err: error, why }, "could not record the run's webhook deliveries; its next claim will");
  }
}

async function repairChild(ctx: AttemptContext, parentRunId: string): Promise<void> {
  try {
    const record = await ctx.store.get(ctx.runId);
    if (!record) await ctx.store.reportGone(parentRunId, ctx.runId);
    else if (TERMINAL_STATUSES.includes(record.status)) await ctx.crew.repairChild(ctx.runId, parentRunId);
  } catch (error) {
    ctx.log.warn({ err: error }, "could not make sure the child's end reached its parent");
  }
}

async function cancelLiveChildren(ctx: AttemptContext): Promise<void> {
  if (ctx.delegates === false || (await ctx.store.childCount(ctx.runId)) === 0) return;
  await ctx.crew
    .cancelChildren(ctx.runId)
    .catch((error: unknown) => ctx.log.warn({ err: error }, "could not cancel the run's crew children"));
}

/** What a hook is told of the attempt it is called in. */
function hookAttempt(ctx: AttemptContext): HookAttempt {
  return { runId: ctx.runId, attempt: ctx.attempt, log: ctx.log };
}

/** A parent wakes this long after its children's deadline, to end the ones still out as timed out. */
const CHILDREN_GRACE_MS = 1_000;

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
      // Stopped because the lock could not be renewed in time (a busy host, a slow Redis), the lock
      // may still be this worker's: completing the job would strand the run, running with no job.
      // Back to waiting instead, where the next attempt takes the run over. When the lock is gone,
      // this fails (the lock is checked), and whoever holds the job now carries on.
      try {
        await job.moveToWait(token);
      } catch (error) {
        log.debug({ err: error }, 'the job is no longer held by this worker');
        return undefined;
      }
      throw new WaitingError();
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
          escalated: settlement.escalated,
        },
        fence,
        events,
        turn,
        ctx.parentRunId,
      );
      if (!ended) {
        log.warn('the run had ended, or another worker owns it: this answer was not recorded');
        return undefined;
      }
      await dispatchEvents(ctx, 'completed', true);
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
        await dispatchEvents(ctx, 'retrying');
        log.warn({ err: error, delayMs }, 'attempt failed; it will be retried');
        throw new RetryLater(`${error.code}: ${error.message}`, delayMs, { cause: settlement.cause });
      }
      await store.finalize(runId, { status: 'failed', error, usage }, fence, events, turn, ctx.parentRunId);
      await dispatchEvents(ctx, 'failed', true);
      log.warn({ err: error }, 'run failed');
      return undefined;
    }
    case 'cancelled':
      // Whoever owns the run: a cancel ends it from any attempt.
      await store.finalize(
        runId,
        { status: 'cancelled', reason: 'cancelled by request' },
        '',
        events,
        turn,
        ctx.parentRunId,
      );
      await dispatchEvents(ctx, 'cancelled', true);
      log.info('run cancelled');
      return undefined;
    case 'suspended': {
      const { pending } = settlement;
      await store.suspend(runId, fence, pending, events);
      await dispatchEvents(ctx, 'suspended');
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
    case 'tool_calls': {
      const { calls } = settlement;
      const untilMs = Math.min(...calls.map((call) => Date.parse(call.expiresAt)));
      await ctx.hooks.beforeToolRequest(hookAttempt(ctx), calls);
      await store.requestToolCalls(runId, fence, calls, events);
      await dispatchEvents(ctx, 'tool_calls');
      await job.moveToDelayed(untilMs, token);
      // Outputs (or a cancel) that arrived before the job was delayed could not wake it: do it now.
      if ((await store.toolCallsWakeReason(runId)) !== undefined) await promoteJob(job);
      log.info(
        { calls: calls.length, expiresAt: new Date(untilMs).toISOString() },
        'run waits for client tool outputs',
      );
      throw new DelayedError();
    }
    case 'tools_sleep':
      // Woken while some calls still wait: back to sleep until their deadline.
      await store.setStatus(runId, fence, 'waiting_for_input');
      await job.moveToDelayed(settlement.untilMs, token);
      if ((await store.toolCallsWakeReason(runId)) !== undefined) await promoteJob(job);
      throw new DelayedError();
    case 'delegating': {
      // The children first (idempotent: their ids are in the checkpoint), then the delegation that
      // makes the run wait for them, then their jobs: a crash anywhere in between is redone by the
      // worker that takes the run over (see resolveDelegation).
      const { delegation, children } = settlement;
      const deadlineMs = Math.max(...children.map((child) => child.crew?.deadlineMs ?? 0));
      await store.createMany(children);
      try {
        await store.delegate(
          runId,
          fence,
          {
            call: delegationKey(delegation),
            deadlineMs,
            maxChildren: ctx.config.crewMaxChildren,
            children: children.map((child, index) => ({ id: child.id, index, goal: child.spec.input })),
          },
          events,
        );
      } catch (error) {
        const code = error instanceof TetherError ? error.code : undefined;
        // Another worker owns the run now: it delegates these same children (their ids are in the
        // checkpoint), so they are its to start; this attempt stops as one that lost its lock.
        if (code === 'ERR_RUN_NOT_OWNER') return settle(ctx, { kind: 'lost' }, [], []);
        // Refused for good (a cancel asked for, the life limit): the children never start, and end
        // here, before any job of theirs exists. Any other error is retried, which delegates again.
        if (code === 'ERR_RUN_CANCEL_REQUESTED' || code === 'ERR_CREW_MAX_CHILDREN') {
          for (const child of children) {
            await store.finalize(child.id, {
              status: 'cancelled',
              reason: 'its parent run could not delegate',
            });
            await ctx.webhooks?.dispatch(child.id, ctx.tenant).catch(() => 0);
          }
        }
        if (code === 'ERR_RUN_CANCEL_REQUESTED') return settle(ctx, { kind: 'cancelled' }, events, turn);
        throw error;
      }
      await ctx.crew.queueChildren(children, job.data.requestId);
      await dispatchEvents(ctx, 'delegating');
      await job.moveToDelayed(deadlineMs + CHILDREN_GRACE_MS, token);
      // Children that ended (or a cancel that came) before the job was delayed could not wake it: look again.
      if ((await store.childrenWakeReason(runId)) !== undefined) await promoteJob(job);
      log.info({ children: children.length }, 'run waits for its crew children');
      throw new DelayedError();
    }
    case 'awaiting':
      await store.setStatus(runId, fence, 'waiting_for_children');
      await job.moveToDelayed(settlement.untilMs + CHILDREN_GRACE_MS, token);
      if ((await store.childrenWakeReason(runId)) !== undefined) await promoteJob(job);
      throw new DelayedError();
    case 'blocked':
      // Another run of the session is ahead: wait, without a slot, until it ends (its end wakes this one).
      await job.moveToDelayed(Date.now() + SESSION_WAIT_MS, token);
      // The run ahead may have ended before this job was delayed, and could not wake it: look again.
      if ((await store.sessionHead(runId)) === runId) await promoteJob(job);
      log.info({ ahead: settlement.ahead }, "waiting for the session's run ahead");
      throw new DelayedError();
    case 'capped': {
      // Over its tenant's cap on running runs: wait, without a slot, until a release hands it one and wakes it.
      await ctx.hooks.beforeCappedDelay(hookAttempt(ctx), {
        tenant: settlement.tenant,
        ahead: settlement.ahead,
      });
      await job.moveToDelayed(settlement.untilMs, token);
      // A slot handed over, or a cancel asked for, before the job was delayed could not wake it (nor
      // take it off the queue): look again. A cancelled run then ends at its next take, out of line.
      const [handed, cancel] = await Promise.all([
        ctx.tenantSlots?.hasSlot(settlement.tenant, runId),
        store.cancelRequested(runId),
      ]);
      if (handed || cancel) await promoteJob(job);
      log.debug(
        { tenant: settlement.tenant, ahead: settlement.ahead },
        "waiting for a slot of the run's tenant",
      );
      throw new DelayedError();
    }
    case 'released':
      // Shutdown: hand the run back to the queue; another worker continues from the checkpoint.
      await store.appendEvents(runId, events, fence);
      await store.setStatus(runId, fence, 'queued');
      await dispatchEvents(ctx, 'released');
      await job.moveToWait(token);
      log.info('run released for another worker (shutdown)');
      throw new WaitingError();
  }
}
