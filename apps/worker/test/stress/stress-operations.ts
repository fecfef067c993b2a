import { setTimeout as delay } from 'node:timers/promises';
import type { SessionService } from '@tether/store/sessions';
import type { Deployment } from '../harness.js';
import type { RunTracker, TrackedRun } from './run-tracker.js';
import type { SeededRandom } from './seeded-random.js';
import { RUN_KIND_WEIGHTS, runBody } from './stress-scripts.js';
import type { WorkerFleet } from './worker-fleet.js';

/** The operations the driver draws from, with how often each is drawn. */
export const OPERATION_WEIGHTS = {
  submit: 22,
  'submit-cancel': 3,
  session: 8,
  answer: 17,
  output: 17,
  cancel: 6,
  interrupt: 4,
  'child-end': 5,
  kill: 1.5,
  pause: 2,
  stutter: 2,
  idle: 12,
} as const;
export type Operation = keyof typeof OPERATION_WEIGHTS;

/** One operation as it was done: what, on which run, and what came of it (`ok`, or the refusal's code). */
export interface OpRecord {
  i: number;
  /** Since the driver started (ms). */
  atMs: number;
  op: Operation;
  runId?: string | undefined;
  detail?: string | undefined;
  result?: string | undefined;
}

/** What the operations act on and record into. */
export interface StressContext {
  d: Deployment;
  rng: SeededRandom;
  tracker: RunTracker;
  fleet: WorkerFleet;
  sessions: SessionService;
  /** The tenants runs are submitted for, each with how often. */
  tenants: Readonly<Record<string, number>>;
  /** The sessions created so far, and how many may be. */
  sessionIds: { id: string; tenant: string }[];
  maxSessions: number;
  lockMs: number;
  /** How many workers the fleet keeps (a killed one is replaced). */
  workers: number;
  ops: OpRecord[];
  /** An operation failed in a way no caller should see (not one of its documented refusals). */
  unexpected(record: OpRecord, error: unknown): void;
  startedAt: number;
}

/** The refusals each operation may meet, by error code: anything else is a finding. */
const REFUSALS = {
  answer: [
    'ERR_CLARIFY_ALREADY_ANSWERED',
    'ERR_CLARIFY_EXPIRED',
    'ERR_CLARIFY_TIMED_OUT',
    'ERR_CLARIFY_NOT_PENDING',
  ],
  output: [
    'ERR_TOOL_OUTPUT_ALREADY_POSTED',
    'ERR_TOOL_OUTPUT_TIMED_OUT',
    'ERR_TOOL_OUTPUT_EXPIRED',
    'ERR_TOOL_OUTPUT_NOT_PENDING',
  ],
  cancel: ['ERR_RUN_FINISHED'],
  session: ['ERR_SESSION_BUSY'],
} as const;

/** Draws one operation and does it, recording it in `ctx.ops`. */
export async function runOperation(ctx: StressContext, i: number): Promise<void> {
  const op = ctx.rng.weighted(OPERATION_WEIGHTS);
  const record: OpRecord = { i, atMs: Date.now() - ctx.startedAt, op };
  ctx.ops.push(record);
  try {
    await OPERATIONS[op](ctx, record);
  } catch (error) {
    record.result = `error: ${(error as Error).message}`;
    ctx.unexpected(record, error);
  }
}

type Handler = (ctx: StressContext, record: OpRecord) => Promise<void>;

const OPERATIONS: Record<Operation, Handler> = {
  submit: async (ctx, record) => {
    await submit(ctx, record);
  },
  'submit-cancel': async (ctx, record) => {
    const run = await submit(ctx, record);
    // Within a claim's reach: queued, taken, claimed, or already waiting.
    await delay(ctx.rng.int(80));
    record.result = await outcome(ctx.d.service.cancel(run.tenant, run.id), REFUSALS.cancel);
  },
  session: sendToSession,
  answer: async (ctx, record) => resolveRequest(ctx, record, 'question'),
  output: async (ctx, record) => resolveRequest(ctx, record, 'tool'),
  cancel: async (ctx, record) => {
    const { rng, tracker } = ctx;
    // Mostly a live run; now and then any, ended ones included.
    const pool = rng.chance(0.85) ? tracker.live() : tracker.order.map((id) => tracker.runs.get(id));
    await cancel(ctx, record, rng.pick(pool), 'cancel');
  },
  interrupt: async (ctx, record) => cancel(ctx, record, ctx.rng.pick(ctx.tracker.live()), 'interrupt'),
  'child-end': async (ctx, record) => {
    const children = ctx.tracker.live().filter((run) => run.parentId !== undefined);
    await cancel(ctx, record, ctx.rng.pick(children), 'cancel');
  },
  kill: async ({ rng, fleet, workers }, record) => {
    const id = rng.pick(fleet.alive());
    if (!id) {
      record.result = 'no worker alive';
      return;
    }
    fleet.kill(id);
    record.detail = id;
    if (fleet.size() < workers) fleet.startInBackground();
    record.result = 'ok';
  },
  pause: async ({ rng, fleet, lockMs }, record) => {
    const id = rng.pick(fleet.alive());
    // From well inside the lock to past it: a late renewal, or a lock that expires under the attempt.
    const ms = Math.round(lockMs * (0.6 + 1.9 * rng.next()));
    if (!id || !fleet.pause(id, ms)) {
      record.result = 'no worker to pause';
      return;
    }
    record.detail = `${id} for ${ms} ms`;
    record.result = 'ok';
  },
  stutter: async ({ rng, fleet, lockMs }, record) => {
    const id = rng.pick(fleet.alive());
    // Stopped a fifth to a half of the lock at a time, running briefly in between, for 2 to 4 locks.
    const phases: number[] = [];
    for (let total = 0, end = lockMs * (2 + 2 * rng.next()); total < end; ) {
      const stopped = Math.round(lockMs * (0.2 + 0.3 * rng.next()));
      const running = rng.between(20, 200);
      phases.push(stopped, running);
      total += stopped + running;
    }
    if (!id || !fleet.stutter(id, phases)) {
      record.result = 'no worker to stutter';
      return;
    }
    record.detail = `${id}: ${phases.join(' ')} ms`;
    record.result = 'ok';
  },
  idle: async ({ rng }, record) => {
    const ms = rng.between(20, 200);
    record.detail = `${ms} ms`;
    await delay(ms);
    record.result = 'ok';
  },
};

async function submit(ctx: StressContext, record: OpRecord): Promise<TrackedRun> {
  const kind = ctx.rng.weighted(RUN_KIND_WEIGHTS);
  const tenant = ctx.rng.weighted(ctx.tenants);
  const body = runBody(kind, ctx.rng, `stress op ${record.i}`);
  const { run } = await ctx.d.service.submit(tenant, body);
  record.runId = run.id;
  record.detail = `${kind} for ${tenant}`;
  record.result = 'ok';
  return ctx.tracker.track({ id: run.id, tenant, kind });
}

/** A message to a session (a new one now and then): enqueued, interrupting the runs ahead, or refused while busy. */
async function sendToSession(ctx: StressContext, record: OpRecord): Promise<void> {
  const { rng, sessionIds } = ctx;
  const create = sessionIds.length === 0 || (sessionIds.length < ctx.maxSessions && rng.chance(0.3));
  const picked = rng.pick(sessionIds);
  const kind = rng.weighted(RUN_KIND_WEIGHTS);
  const multitask = rng.weighted({ enqueue: 15, interrupt: 4, reject: 1 });
  const body = runBody(kind, rng, `stress message ${record.i}`);
  let session = picked;
  if (create || !session) {
    const tenant = ctx.rng.weighted(ctx.tenants);
    session = { id: (await ctx.sessions.create(tenant)).id, tenant };
    sessionIds.push(session);
  }
  record.detail = `${kind} to ${session.id} (${multitask})`;
  const { id, tenant } = session;
  try {
    const { run } = await ctx.sessions.submit(tenant, id, { ...body, multitask });
    record.runId = run.id;
    record.result = 'ok';
    ctx.tracker.track({ id: run.id, tenant, kind, sessionId: id });
  } catch (error) {
    record.result = refusal(error, REFUSALS.session);
  }
}

/**
 * Answers a pending question or posts a pending client tool call's output; sometimes twice at
 * once, sometimes late (a request already settled, or of a run that ended).
 */
async function resolveRequest(
  ctx: StressContext,
  record: OpRecord,
  kind: 'question' | 'tool',
): Promise<void> {
  const { rng, tracker } = ctx;
  const late = rng.chance(0.15);
  const twice = rng.chance(0.2);
  const pending = tracker
    .live()
    .flatMap((run) =>
      [...(kind === 'question' ? run.questions : run.toolCalls)].map((requestId) => ({ run, requestId })),
    );
  const settled = tracker.order.flatMap((id) => {
    const run = tracker.runs.get(id) as TrackedRun;
    return run.settled.filter((s) => s.kind === kind).map(({ requestId }) => ({ run, requestId }));
  });
  // Late on purpose, or because nothing waits now.
  const lateNow = late || pending.length === 0;
  const target = rng.pick(lateNow ? settled : pending);
  if (!target) {
    record.result = 'nothing to resolve';
    return;
  }
  const { run, requestId } = target;
  record.runId = run.id;
  record.detail = `${requestId}${lateNow ? ' late' : ''}${twice ? ' twice' : ''}`;
  const once = () =>
    kind === 'question'
      ? outcome(ctx.d.service.answer(run.tenant, run.id, requestId, 'left'), REFUSALS.answer)
      : outcome(
          ctx.d.service.postToolOutput(run.tenant, run.id, requestId, 'looked up', rng.chance(0.2)),
          REFUSALS.output,
        );
  record.result = (await Promise.all(twice ? [once(), once()] : [once()])).join(' ');
}

async function cancel(
  ctx: StressContext,
  record: OpRecord,
  run: TrackedRun | undefined,
  mode: 'cancel' | 'interrupt',
): Promise<void> {
  if (!run) {
    record.result = 'no run';
    return;
  }
  record.runId = run.id;
  record.result = await outcome(ctx.d.service.cancel(run.tenant, run.id, mode), REFUSALS.cancel);
}

/** `ok` (with the status a cancel found, for one), or the code of an expected refusal; throws anything else. */
async function outcome(call: Promise<unknown>, expected: readonly string[]): Promise<string> {
  try {
    const value = await call;
    return typeof value === 'string' ? `ok (${value})` : 'ok';
  } catch (error) {
    return refusal(error, expected);
  }
}

function refusal(error: unknown, expected: readonly string[]): string {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && expected.includes(code)) return code;
  throw error;
}
