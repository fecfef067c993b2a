import { storedCheckpoint } from '@tether/agent';
import { type RunEventInput, TERMINAL_STATUSES } from '@tether/protocol';
import { baseDelay, type Recorded, retryDelayMs, type WaitRefusal } from '@tether/store/runs';
import type { HookAttempt } from '../worker-hooks.js';
import type { AttemptContext, Lost, Released, Settlement, Waiting } from './context.js';
import { delegationKey } from './crew.js';

/**
 * Settle: the one place an attempt's end is recorded in the run (one script
 * each, `events` not yet written going first) and mapped to BullMQ. Six
 * kinds, each one step:
 *
 * | settlement | the run | the job |
 * | --- | --- | --- |
 * | completed | `run.completed` (with the final checkpoint) | completed, with the output |
 * | failed, retryable, attempts left | `run.retrying` (queued) | `RetryLater`: BullMQ retries after its delay |
 * | failed otherwise | `run.failed` | completed |
 * | cancelled | `run.cancelled` | completed |
 * | expired (never started, its deadline passed: found at the claim or `start on time`) | `run.expired` | completed |
 * | waiting, a new waitpoint | its requests recorded: `clarify.requested`, `tool.requested` each, or the children created and `child.started` each (`waiting_for_input`, `waiting_for_children`) | delayed until the deadline, woken when the waitpoint resolves |
 * | waiting again (woken early) | back to `waiting_for_…` | delayed until the deadline |
 * | released: shutdown | queued | waiting, for another worker (`WaitingError`) |
 * | released: the session's run ahead | nothing | delayed 60 s, woken when the run ahead ends |
 * | released: the tenant's cap | nothing | delayed a few seconds, woken when a slot is handed to it or a cancel is asked for |
 * | released: scheduled, its time not come (moved) | nothing | delayed until its `runAt`, woken when it moves again or a cancel is asked for |
 * | lost, handed back (the lock not renewed in time, maybe still held) | nothing | waiting, for a new attempt to take the run over (`WaitingError`) |
 * | lost (the run gone, ended or another worker's; or the lock gone) | nothing | completed, or left to BullMQ's stalled check (another owner carries on) |
 *
 * Every delay is followed by the same look ({@link delayUntil}): what the job
 * waits for may have come while it was being delayed, when a wake could not
 * move it, and the job is woken then.
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
    ctx.observer.settled(retried ? 'retried' : outcomeLabel(settlement));
  }
  try {
    return await settle(ctx, settlement, events, turn);
  } finally {
    const ended =
      settlement.kind === 'completed' ||
      settlement.kind === 'failed' ||
      settlement.kind === 'cancelled' ||
      settlement.kind === 'expired';
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
    if (settlement.kind === 'lost' && ctx.parentRunId) {
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
  // Every child the run created is on its list (delegated or not: its worker may have died between).
  if (ctx.delegates === false) return;
  await ctx.crew
    .cancelChildren(ctx.runId)
    .catch((error: unknown) => ctx.log.warn({ err: error }, "could not cancel the run's crew children"));
}

/** What a hook is told of the attempt it is called in. */
function hookAttempt(ctx: AttemptContext): HookAttempt {
  return { runId: ctx.runId, attempt: ctx.attempt, log: ctx.log };
}

/** How long a session's run waits for the run ahead of it before it looks again (it is woken when that one ends). */
export const SESSION_WAIT_MS = 60_000;

/** The label of a settlement in metrics and traces (`tether_attempts_total{outcome}`): the names they have always had. */
export function outcomeLabel(settlement: Settlement): string {
  switch (settlement.kind) {
    case 'waiting': {
      if ('again' in settlement) {
        const sleeping = { question: 'sleep', tool_output: 'tools_sleep', approval: 'approvals_sleep' };
        return { ...sleeping, children: 'awaiting' }[settlement.on];
      }
      const waiting = { question: 'suspended', tool_output: 'tool_calls', approval: 'approvals' };
      return { ...waiting, children: 'delegating' }[settlement.on];
    }
    case 'released':
      return { shutdown: 'released', session: 'blocked', tenant_cap: 'capped', scheduled: 'scheduled' }[
        settlement.why
      ];
    case 'lost':
      return settlement.handBack ? 'lost' : 'nothing';
    default:
      return settlement.kind;
  }
}

async function settle(
  ctx: AttemptContext,
  settlement: Settlement,
  events: readonly RunEventInput[],
  turn: readonly string[],
): Promise<string | undefined> {
  switch (settlement.kind) {
    case 'completed':
      return complete(ctx, settlement, events, turn);
    case 'failed':
      return fail(ctx, settlement, events, turn);
    case 'cancelled':
      return cancel(ctx, events, turn);
    case 'expired':
      return expire(ctx, settlement.expiresAtMs);
    case 'waiting':
      return wait(ctx, settlement, events, turn);
    case 'released':
      return release(ctx, settlement, events);
    case 'lost':
      return lose(ctx, settlement);
  }
}

/** The run's webhook deliveries once a step is recorded, before its job moves (see `Recorded`). */
function recorder(ctx: AttemptContext, after?: () => void): Recorded {
  return async (why, parent) => {
    await dispatchEvents(ctx, why, parent);
    after?.();
  };
}

async function complete(
  ctx: AttemptContext,
  settlement: Extract<Settlement, { kind: 'completed' }>,
  events: readonly RunEventInput[],
  turn: readonly string[],
): Promise<string | undefined> {
  const { output, checkpoint } = settlement;
  const end = {
    status: 'completed' as const,
    output,
    usage: checkpoint.usage,
    model: checkpoint.model,
    // The final turn was not saved on its own: it is stored with the end.
    checkpoint: { json: storedCheckpoint(checkpoint), todos: checkpoint.todos, step: checkpoint.step },
    escalated: settlement.escalated,
    result: settlement.result,
  };
  if (!(await ctx.engine.end(ctx, end, events, turn))) {
    ctx.log.warn('the run had ended, or another worker owns it: this answer was not recorded');
    return undefined;
  }
  await dispatchEvents(ctx, 'completed', true);
  ctx.log.info({ steps: checkpoint.step }, 'run completed');
  return output;
}

async function fail(
  ctx: AttemptContext,
  settlement: Extract<Settlement, { kind: 'failed' }>,
  events: readonly RunEventInput[],
  turn: readonly string[],
): Promise<undefined> {
  const { job, log } = ctx;
  const { error, usage, model } = settlement;
  if (settlement.retryable && ctx.attempt < (job.opts.attempts ?? 1)) {
    // One delay, decided here: `run.retrying` says it, and BullMQ's backoff strategy takes it from the error.
    const delayMs = retryDelayMs(baseDelay(job.opts.backoff), ctx.attempt);
    const next = { attempt: ctx.attempt + 1, delayMs, error, cause: settlement.cause };
    return ctx.engine.retry(
      ctx,
      next,
      events,
      recorder(ctx, () => log.warn({ err: error, delayMs }, 'attempt failed; it will be retried')),
    );
  }
  await ctx.engine.end(ctx, { status: 'failed', error, usage, model }, events, turn);
  await dispatchEvents(ctx, 'failed', true);
  log.warn({ err: error }, 'run failed');
  return undefined;
}

async function cancel(
  ctx: AttemptContext,
  events: readonly RunEventInput[],
  turn: readonly string[],
): Promise<undefined> {
  // Whoever owns the run: a cancel ends it from any attempt.
  const end = { status: 'cancelled' as const, reason: 'cancelled by request' };
  await ctx.engine.end(ctx, end, events, turn, '');
  await dispatchEvents(ctx, 'cancelled', true);
  ctx.log.info('run cancelled');
  return undefined;
}

/** A run that never started, past its deadline: ended `expired` (whoever ended it, the job completes). */
async function expire(ctx: AttemptContext, expiresAtMs: number): Promise<undefined> {
  if (await ctx.engine.expire(ctx, expiresAtMs)) {
    await dispatchEvents(ctx, 'expired');
    ctx.log.info({ expiresAt: new Date(expiresAtMs).toISOString() }, 'run expired before it started');
  }
  return undefined;
}

/**
 * The run waits on its waitpoint, holding no slot: a new one's requests are recorded (with their
 * events), or the one it waits on already is waited on again; then the job is delayed until the
 * deadline. A refusal settles as it says.
 */
async function wait(
  ctx: AttemptContext,
  settlement: Waiting,
  events: readonly RunEventInput[],
  turn: readonly string[],
): Promise<never | undefined> {
  const { engine, log } = ctx;
  if ('again' in settlement) {
    const status = settlement.on === 'children' ? 'waiting_for_children' : 'waiting_for_input';
    return engine.waitAgain(ctx, status, settlement.again.untilMs);
  }
  let refusal: WaitRefusal;
  switch (settlement.on) {
    case 'question': {
      const pending = settlement.open;
      const logged = () =>
        log.info(
          { requestId: pending.requestId, expiresAt: pending.expiresAt },
          'run suspended on a clarify question',
        );
      refusal = await engine.wait(ctx, { on: 'question', pending }, events, recorder(ctx, logged));
      break;
    }
    case 'tool_output': {
      const calls = settlement.open;
      const untilMs = Math.min(...calls.map((call) => Date.parse(call.expiresAt)));
      await ctx.hooks.beforeToolRequest(hookAttempt(ctx), calls);
      const logged = () =>
        log.info(
          { calls: calls.length, expiresAt: new Date(untilMs).toISOString() },
          'run waits for client tool outputs',
        );
      refusal = await engine.wait(ctx, { on: 'tool_output', calls }, events, recorder(ctx, logged));
      break;
    }
    case 'approval': {
      const approvals = settlement.open;
      const logged = () =>
        log.info(
          { approvals: approvals.length, expiresAt: approvals[0]?.expiresAt },
          'run waits for decisions on its tool calls',
        );
      refusal = await engine.wait(ctx, { on: 'approval', approvals }, events, recorder(ctx, logged));
      break;
    }
    case 'children':
      refusal = await delegate(ctx, settlement, events);
      break;
  }
  return refused(ctx, refusal, events, turn);
}

/**
 * Delegating: the children first (idempotent: their ids are in the checkpoint), then the
 * delegation that makes the run wait for them, then their jobs: a crash anywhere in between is
 * redone by the worker that takes the run over (see resolveDelegation). Refused for good (a cancel
 * asked for, the life limit), the children never start: they end in the engine's step, before any
 * job of theirs exists.
 */
async function delegate(
  ctx: AttemptContext,
  settlement: Extract<Waiting, { on: 'children'; open: unknown }>,
  events: readonly RunEventInput[],
): Promise<WaitRefusal> {
  const { delegation, children } = settlement.open;
  const open = {
    on: 'children' as const,
    delegation: {
      call: delegationKey(delegation),
      deadlineMs: Math.max(...children.map((child) => child.crew?.deadlineMs ?? 0)),
      maxChildren: ctx.config.crewMaxChildren,
      children: children.map((child, index) => ({ id: child.id, index, goal: child.spec.input })),
    },
    children,
    requestId: ctx.job.data.requestId,
  };
  const logged = () => ctx.log.info({ children: children.length }, 'run waits for its crew children');
  return ctx.engine.wait(ctx, open, events, recorder(ctx, logged));
}

/**
 * Settles as the run's refusal to wait says: another worker owns it, or it is not running (`lost`,
 * the job handed back for the next claim; it redoes the step, with the same ids), or a cancel was
 * asked for or the run has ended (`cancelled`). Any other refusal (the crew's life limit) fails the
 * attempt, which is retried.
 */
async function refused(
  ctx: AttemptContext,
  refusal: WaitRefusal,
  events: readonly RunEventInput[],
  turn: readonly string[],
): Promise<never | undefined> {
  switch (refusal.refused) {
    case 'not_owner':
      return lose(ctx, { kind: 'lost', why: 'another worker owns the run now', handBack: true });
    case 'cancel':
      return cancel(ctx, events, turn);
    default:
      throw refusal.error;
  }
}

/** The run gives its turn up without running (see `Released`). */
async function release(
  ctx: AttemptContext,
  settlement: Released,
  events: readonly RunEventInput[],
): Promise<never> {
  const { store, engine, runId, log } = ctx;
  switch (settlement.why) {
    case 'shutdown':
      // Hand the run back to the queue; another worker continues from the checkpoint.
      return engine.release(
        ctx,
        events,
        recorder(ctx, () => log.info('run released for another worker (shutdown)')),
      );
    case 'session':
      // Another run of the session is ahead: wait, without a slot, until it ends (its end wakes this one).
      log.info({ ahead: settlement.ahead }, "waiting for the session's run ahead");
      return engine.delay(
        ctx,
        Date.now() + SESSION_WAIT_MS,
        async () => (await store.sessionHead(runId)) === runId,
      );
    case 'scheduled':
      // Its time was moved while its job came up: wait until the new one (woken if it moves again).
      log.debug({ runAt: new Date(settlement.runAtMs).toISOString() }, 'the run is scheduled later');
      return engine.waitForStart(ctx, settlement.runAtMs);
    case 'tenant_cap': {
      // Over its tenant's cap on running runs: wait, without a slot, until a release hands it one and wakes it.
      await ctx.hooks.beforeCappedDelay(hookAttempt(ctx), {
        tenant: settlement.tenant,
        ahead: settlement.ahead,
      });
      log.debug(
        { tenant: settlement.tenant, ahead: settlement.ahead },
        "waiting for a slot of the run's tenant",
      );
      // A slot handed over, or a cancel asked for, while the job was being delayed could not wake it (nor
      // take it off the queue). A cancelled run then ends at its next take, out of line.
      return engine.delay(ctx, settlement.untilMs, async () => {
        const [handed, cancel] = await Promise.all([
          ctx.tenantSlots?.hasSlot(settlement.tenant, runId),
          store.cancelRequested(runId),
        ]);
        return Boolean(handed || cancel);
      });
    }
  }
}

/** Nothing more for this attempt to do with the run (see `Lost`). */
async function lose(ctx: AttemptContext, settlement: Lost): Promise<never | undefined> {
  const { log } = ctx;
  if (!settlement.handBack) {
    log.info({ why: settlement.why }, 'nothing to do for this run');
    return undefined;
  }
  log.warn(
    { why: settlement.why },
    'this worker lost its lock on the run, or another claimed it; it stopped without writing anything more',
  );
  // Back to waiting, where the next attempt takes the run over; when the lock is gone, whoever holds
  // the job carries on (see `RunEngine.handBack`).
  if (!(await ctx.engine.handBack(ctx))) log.debug('the job is no longer held by this worker');
  return undefined;
}
