import type { McpServerStore } from '@tether/store/mcp-servers';
import type { MemoryStore } from '@tether/store/memory';
import {
  RetryLater,
  type RunDeliveries,
  RunEngine,
  type RunJobData,
  type RunJobs,
  type RunStore,
} from '@tether/store/runs';
import { DelayedError, type Job, WaitingError } from 'bullmq';
import type { Logger } from 'pino';
import { ActiveAttempts } from './active-attempts.js';
import { claimAttempt } from './attempt/claim.js';
import type { WorkerBudgets } from './attempt/context.js';
import { type AttemptContext, type CrewQueue, isSettlement, type Settlement } from './attempt/context.js';
import type { McpListings } from './attempt/mcp-listings.js';
import { AttemptObserver, type Observability } from './attempt/observe.js';
import { prepareAttempt } from './attempt/prepare.js';
import { runPrepared } from './attempt/run.js';
import { dispatchEvents, settleOutcome } from './attempt/settle.js';
import type { TenantSlotKeeper } from './attempt/tenant-slot.js';
import type { WorkerConfig } from './config.js';
import type { WorkerSkills } from './skills.js';
import { type ResolvedHooks, type WorkerHooks, withDefaultHooks } from './worker-hooks.js';

export type { ActiveRuns } from './active-attempts.js';
export type { StopReason } from './attempt/run.js';

export interface ProcessorDeps {
  config: Readonly<WorkerConfig>;
  store: RunStore;
  logger: Logger;
  /** True once the worker is shutting down: attempts stop at their next checkpoint. */
  shuttingDown: () => boolean;
  /** Wakes the run now at the head of a session's queue (after one of its runs ended). */
  wakeSession: (sessionId: string) => Promise<void>;
  /** The crew's steps that touch the queue. */
  crew: CrewQueue;
  /** The runs' BullMQ jobs, for the engine's steps (`RunService` has them). */
  jobs: RunJobs;
  /** The tenants' cap on running runs (`TETHER_TENANT_MAX_RUNNING`); undefined when there is none. */
  tenantSlots?: TenantSlotKeeper | undefined;
  /** The tenants' budgets and usage ledger: each turn counted, and checked before the next. */
  budgets?: WorkerBudgets | undefined;
  /** Memory scopes, for runs with the memory toolset. */
  memory?: MemoryStore | undefined;
  /** The tenants' skills. */
  skills?: WorkerSkills | undefined;
  /** The MCP servers tenants registered. */
  mcpServers?: McpServerStore | undefined;
  /** This worker's MCP tool listings. */
  mcpListings?: McpListings | undefined;
  /** Webhook deliveries of the events attempts append. */
  webhooks?: RunDeliveries | undefined;
  /** Metrics and traces, when the worker has them. */
  observability?: Observability | undefined;
  /** The test stack's seams into an attempt's timing; none (no-ops) in a deployment. */
  hooks?: WorkerHooks | undefined;
}

/**
 * The job processor. The BullMQ job holds only the run id; the run's record,
 * checkpoint and events are in its own keys. One attempt is four steps, each
 * in attempt/: claim → prepare → run → settle (a delayed run's job queues it
 * first, `RunEngine.startOnTime`). The first three either hand on
 * what the next needs or end early with a settlement; `settleOutcome` records
 * every ending in the run and maps it to BullMQ. With a tenants' cap, the
 * attempt holds a slot of its run's tenant from before the claim until it
 * ends, or waits for one (attempt/tenant-slot.ts).
 */
export function createProcessor(deps: ProcessorDeps) {
  const { config, store, logger } = deps;
  const hooks = withDefaultHooks(deps.hooks);
  const activeRuns = new ActiveAttempts(logger);
  const engine = new RunEngine({ store, jobs: deps.jobs, webhooks: deps.webhooks });

  const observability = deps.observability;
  const observed = Boolean(observability?.metrics || observability?.telemetry);

  async function processJob(job: Job<RunJobData>, token?: string): Promise<string | undefined> {
    const { runId, requestId } = job.data;
    const attempt = job.attemptsMade + 1;
    const observer =
      observed && observability
        ? new AttemptObserver(observability, { runId, attempt, workerId: config.workerId, requestId })
        : undefined;
    let failure: unknown;
    try {
      return await processAttempt(job, token, observer);
    } catch (error) {
      // BullMQ's control flow (delay, wait, retry) is how an attempt ends, not a failure of it.
      if (!(error instanceof DelayedError || error instanceof WaitingError || error instanceof RetryLater))
        failure = error;
      throw error;
    } finally {
      observer?.end(failure);
    }
  }

  async function processAttempt(
    job: Job<RunJobData>,
    token: string | undefined,
    observer: AttemptObserver | undefined,
  ): Promise<string | undefined> {
    const ctx = attemptContext(deps, engine, hooks, { job, token, observer });
    // A job that comes back (stall recovery, a resumed question, a retry) first dispatches what the
    // attempt before may have appended without dispatching (its worker died in between).
    if (job.attemptsStarted > 1) await dispatchEvents(ctx, 'recovery', true);
    // A delayed run is queued at its time, before anything else (a run queued at once skips this).
    if (job.data.scheduled) {
      const due = await engine.startOnTime(ctx);
      if (due.status === 'early') {
        return settleOutcome(ctx, { kind: 'released', why: 'scheduled', runAtMs: due.runAtMs });
      }
      if (due.status === 'expire') {
        const expired = { kind: 'expired' as const, expiresAtMs: due.expiresAtMs };
        return settleOutcome(ctx, expired, [], [], await sessionOf(job.data.runId, expired));
      }
    }
    // A slot of the run's tenant first, when there is a cap: without one the run waits, unchanged
    // (or, cancelled, leaves the line, then ends at its claim holding no slot).
    const slot = await ctx.tenantSlots?.take(ctx);
    if (slot?.kind === 'released') {
      if (observer) observer.tenant = slot.tenant;
      return settleOutcome(ctx, slot);
    }
    if (slot?.kind === 'ending') {
      // Out of the line before the claim ends the run: whoever sees it cancelled sees it out of line.
      await slot.release();
      return attemptJob(ctx);
    }
    try {
      return await attemptJob(ctx);
    } finally {
      await slot?.release();
    }
  }

  /** One attempt of a run: claim → prepare → run → settle. */
  async function attemptJob(ctx: AttemptContext): Promise<string | undefined> {
    const { runId } = ctx;
    const claimed = await claimAttempt(ctx);
    if (isSettlement(claimed)) return settleOutcome(ctx, claimed, [], [], await sessionOf(runId, claimed));
    ctx.tenant = claimed.tenant;
    ctx.rootRunId = claimed.spec.crew?.rootRunId;
    if (ctx.observer) ctx.observer.tenant = claimed.tenant;
    const prepared = await prepareAttempt(ctx, claimed);
    if (isSettlement(prepared)) return settleOutcome(ctx, prepared, [], [], claimed.sessionId);
    // A run without the delegate tools has no children to look for when it ends.
    ctx.delegates = prepared.crew !== undefined;
    const entry = activeRuns.start(runId);
    let ran: Awaited<ReturnType<typeof runPrepared>>;
    try {
      ran = await runPrepared(ctx, prepared, {
        active: entry,
        stop: (reason) => activeRuns.stop(runId, reason),
        shuttingDown: deps.shuttingDown,
      });
    } finally {
      activeRuns.end(runId);
    }
    return settleOutcome(ctx, ran.settlement, ran.events, ran.turn, prepared.sessionId);
  }

  /** The session of a run that ended at its claim (cancelled or expired there): its next run may go. */
  async function sessionOf(runId: string, settlement: Settlement): Promise<string | undefined> {
    if (settlement.kind !== 'cancelled' && settlement.kind !== 'expired') return undefined;
    return (await store.get(runId))?.sessionId;
  }

  return { process: processJob, activeRuns };
}

/** What every step of the attempt on `job` works with. */
function attemptContext(
  deps: ProcessorDeps,
  engine: RunEngine,
  hooks: ResolvedHooks,
  taken: { job: Job<RunJobData>; token: string | undefined; observer: AttemptObserver | undefined },
): AttemptContext {
  const { job, token, observer } = taken;
  const { config, store, logger } = deps;
  const { runId, requestId } = job.data;
  const attempt = job.attemptsMade + 1;
  return {
    job,
    token,
    runId,
    attempt,
    fence: `${config.workerId}:${token ?? job.id}`,
    config,
    store,
    engine,
    // Every line about the run names it, and the request that submitted it.
    log: logger.child(requestId ? { runId, attempt, requestId } : { runId, attempt }),
    wakeSession: deps.wakeSession,
    parentRunId: job.data.parentRunId,
    crew: deps.crew,
    tenantSlots: deps.tenantSlots,
    budgets: deps.budgets,
    memory: deps.memory,
    skills: deps.skills,
    mcpServers: deps.mcpServers,
    mcpListings: deps.mcpListings,
    webhooks: deps.webhooks,
    observer,
    hooks,
    // What the job says (a job queued before it did says nothing); the claim says it again.
    tenant: job.data.tenant,
  };
}
