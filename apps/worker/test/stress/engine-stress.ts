/**
 * The engine's race stress (issue 29): random interleavings of what clients and operators do to
 * runs while real worker processes run them, then the invariant checker and the run logs' rules.
 *
 * Strategy, in order:
 * 1. Start the fleet (worker processes, a 2 s lock, a tenant cap, a short crew child timeout).
 * 2. `ops` operations drawn from a seeded generator (stress-operations.ts): submit runs that answer,
 *    run a command, ask a question, call client tools, delegate to crew children or do several of
 *    these; send messages to sessions; answer and post outputs (sometimes twice at once, sometimes
 *    late); cancel and interrupt runs and children; kill -9 a worker and start another; stop one
 *    (SIGSTOP) past or short of its lock, or by turns (a starved host). A random pause of under
 *    30 ms between two operations.
 * 3. Drain: let every stopped worker go on and every start finish, then answer and post what still
 *    waits, on each event, until every run has ended. A run still live after `drainMs` is stuck:
 *    the invariants are read then, and it is cancelled; one a cancel does not end is `never-ended`.
 * 4. Quiescent: `checkInvariants`, once more after the checker's grace if it found anything (a
 *    step in flight); then every run's log (stress-checks.ts) and every tenant's list.
 *
 * The seed replays the same draws; the timing of real processes does not replay, so a failure is
 * reported with its operations and its worker log lines, and written out in full.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { checkInvariants, DEFAULT_INVARIANT_GRACE_MS } from '@tether/store/runs';
import { SessionService } from '@tether/store/sessions';
import type { Deployment } from '../harness.js';
import { RunTracker, type TrackedRun } from './run-tracker.js';
import { SeededRandom } from './seeded-random.js';
import { checkListing, checkRunLogs, readLogs, type StressViolation } from './stress-checks.js';
import { type OpRecord, runOperation, type StressContext } from './stress-operations.js';
import { CREW_CHILD_TIMEOUT_MS } from './stress-scripts.js';
import { WorkerFleet } from './worker-fleet.js';

export interface EngineStressOptions {
  seed: number;
  /** Operations to draw. */
  ops: number;
  /** What the deployment's Redis is (`redis`, `cluster`), for the report. */
  target: string;
  /** Worker processes kept alive (default 2, concurrency 4 each). */
  workers?: number;
  /** The workers' `TETHER_TENANT_MAX_RUNNING` (default 3). */
  tenantCap?: number;
  /** The workers' `TETHER_LOCK_DURATION_MS` (default 2,000). */
  lockMs?: number;
  /** Sessions the runs may be sent to (default 4). */
  maxSessions?: number;
  /**
   * How long the drain waits for every run to end before it calls the rest stuck (ms). Default
   * 80,000: past the longest wait the engine leaves to a job's own delay when a wake is lost with a
   * killed worker (a session's next run: 60 s; a run in its tenant's line: at most 60 s, ±20%).
   */
  drainMs?: number;
  /** Where to write the operations, violations and worker logs; default a temporary folder, only on violations. */
  out?: string | undefined;
  /** Where the JSON lines go (default stdout). */
  print?: (line: string) => void;
}

export interface EngineStressReport {
  seed: number;
  ops: number;
  target: string;
  runs: number;
  children: number;
  sessions: number;
  /** Runs by how they ended. */
  ended: Record<string, number>;
  /** Operations by kind, and what came of them. */
  byOp: Record<string, Record<string, number>>;
  durationMs: number;
  violations: StressViolation[];
  /** The folder the details were written to, if any. */
  artifacts?: string | undefined;
}

const TENANTS = { 'stress-a': 6, 'stress-b': 3, 'stress-c': 1 };

/** Runs the stress against a deployment (see the module's comment); resolves with what it found. */
export async function runEngineStress(
  d: Deployment,
  options: EngineStressOptions,
): Promise<EngineStressReport> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const workers = options.workers ?? 2;
  const tenantCap = options.tenantCap ?? 3;
  const lockMs = options.lockMs ?? 2_000;
  const { target, seed, ops } = options;
  print(JSON.stringify({ stress: 'engine', phase: 'start', target, seed, ops, workers, tenantCap, lockMs }));
  const violations: StressViolation[] = [];
  const ctx = await startStress(d, { ...options, workers, tenantCap, lockMs }, violations);
  try {
    for (let i = 0; i < ops; i++) {
      await runOperation(ctx, i);
      await delay(ctx.rng.int(30));
    }
    violations.push(...(await drain(ctx, options.drainMs ?? 80_000)));
    violations.push(...(await quiescentInvariants(ctx, tenantCap)));
    violations.push(...(await checkRunLogs(d, ctx.tracker)), ...(await checkListing(d, ctx.tracker)));
    for (const error of ctx.tracker.errors) {
      violations.push({ rule: 'op-error', detail: `following a run's events failed: ${stackOf(error)}` });
    }
  } finally {
    await ctx.tracker.close();
  }
  const report = summary(ctx, options, violations, Date.now() - ctx.startedAt);
  const explained = [];
  for (const violation of violations) explained.push(await explain(ctx, violation));
  if (violations.length > 0 || options.out) {
    report.artifacts = await writeArtifacts(ctx, report, explained, options.out);
  }
  for (const violation of explained) print(JSON.stringify({ stress: 'engine', violation }));
  print(JSON.stringify({ stress: 'engine', phase: 'end', ...report, violations: violations.length }));
  return report;
}

const stackOf = (error: unknown) => (error instanceof Error ? (error.stack ?? error.message) : String(error));

/** The fleet started, and what the operations work with; an operation's unexpected error is a violation. */
async function startStress(
  d: Deployment,
  options: EngineStressOptions & { workers: number; tenantCap: number; lockMs: number },
  violations: StressViolation[],
): Promise<StressContext> {
  const { workers, tenantCap, lockMs } = options;
  const fleet = new WorkerFleet(d, {
    TETHER_TENANT_MAX_RUNNING: String(tenantCap),
    TETHER_CREW_CHILD_TIMEOUT_MS: String(CREW_CHILD_TIMEOUT_MS),
    TETHER_WORKER_CONCURRENCY: '4',
    TETHER_LOCK_DURATION_MS: String(lockMs),
    TETHER_STALLED_INTERVAL_MS: String(Math.max(500, lockMs / 2)),
  });
  for (let i = 0; i < workers; i++) await fleet.start();
  return {
    d,
    rng: new SeededRandom(options.seed),
    tracker: new RunTracker(d),
    fleet,
    sessions: new SessionService({ runs: d.service }),
    tenants: TENANTS,
    sessionIds: [],
    maxSessions: options.maxSessions ?? 4,
    lockMs,
    workers,
    ops: [],
    unexpected: (record, error) =>
      violations.push({
        rule: 'op-error',
        runId: record.runId,
        detail: `operation ${record.i} (${record.op}${record.detail ? ` ${record.detail}` : ''}) failed: ${stackOf(error)}`,
      }),
    startedAt: Date.now(),
  };
}

/**
 * Every run to its end: paused workers go on, starts finish, then what waits is answered (each
 * question and tool call once) on each event, until every run has ended or `drainMs` has passed.
 */
async function drain(ctx: StressContext, drainMs: number): Promise<StressViolation[]> {
  const { d, tracker, fleet } = ctx;
  await fleet.settle(ctx.workers);
  await tracker.settled();
  const resolved = new Set<string>();
  const deadline = Date.now() + drainMs;
  while (tracker.live().length > 0 && Date.now() < deadline) {
    for (const run of tracker.live()) {
      for (const requestId of [...run.questions].filter((id) => !resolved.has(id))) {
        resolved.add(requestId);
        await ignoreRefusal(d.service.answer(run.tenant, run.id, requestId, 'drained'));
      }
      for (const requestId of [...run.toolCalls].filter((id) => !resolved.has(id))) {
        resolved.add(requestId);
        await ignoreRefusal(d.service.postToolOutput(run.tenant, run.id, requestId, 'drained'));
      }
    }
    await tracker.changed(1_000);
  }
  const stuck = tracker.live();
  return stuck.length === 0 ? [] : endStuck(ctx, stuck, drainMs);
}

/**
 * Runs that did not end within the drain: what the invariant checker says of them now (what
 * stranded them), what each looked like, then a cancel for each; one it does not end is `never-ended`.
 */
async function endStuck(
  ctx: StressContext,
  stuck: TrackedRun[],
  drainMs: number,
): Promise<StressViolation[]> {
  const { d, tracker } = ctx;
  const violations: StressViolation[] = (await checkInvariants({ redis: d.redis, keys: d.keys })).map(
    (v) => ({
      rule: v.rule,
      runId: v.runId,
      detail: `at the end of the drain: ${v.detail}`,
    }),
  );
  const before = new Map<string, string>();
  for (const run of stuck) {
    before.set(run.id, await describeRun(d, run.id));
    await ignoreRefusal(d.service.cancel(run.tenant, run.id));
  }
  const deadline = Date.now() + 20_000;
  while (stuck.some((run) => !run.ended) && Date.now() < deadline) await tracker.changed(1_000);
  for (const run of stuck) {
    const what = `run ${run.id} (${run.kind}) had not ended ${drainMs} ms into the drain, every request answered: ${before.get(run.id)}`;
    violations.push({
      rule: 'never-ended',
      runId: run.id,
      detail: run.ended
        ? `${what}; a cancel then ended it (${run.ended})`
        : `${what}; a cancel accepted 20 s ago has not ended it either: ${await describeRun(d, run.id)}`,
    });
  }
  return violations;
}

/** A run's record and job, in a line. */
async function describeRun(d: Deployment, runId: string): Promise<string> {
  const record = await d.store.get(runId);
  const job = await d.service.getJob(runId, record);
  const state = job ? await job.getState() : 'no job';
  const lock = job ? await d.redis.pttl(`${record?.queue ?? d.keys.queuePrefix}:runs:${runId}:lock`) : -2;
  return `status ${record?.status}, owner ${record?.owner ?? 'none'}, cancelRequested ${record?.cancelRequested}, attempts ${record?.attempts}, job ${state}, lock ttl ${lock} ms`;
}

async function ignoreRefusal(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (error) {
    if (typeof (error as { code?: unknown }).code !== 'string') throw error;
  }
}

/**
 * `checkInvariants` once every run has ended; what it finds is looked at once more after its
 * grace, since a step still in flight (a job completed just after its run ended) shows for a moment.
 */
async function quiescentInvariants(ctx: StressContext, tenantCap: number): Promise<StressViolation[]> {
  const check = () => checkInvariants({ redis: ctx.d.redis, keys: ctx.d.keys, tenantCap });
  if ((await check()).length === 0) return [];
  await delay(DEFAULT_INVARIANT_GRACE_MS + 500);
  return (await check()).map((v) => ({ rule: v.rule, runId: v.runId, detail: v.detail }));
}

function summary(
  ctx: StressContext,
  options: EngineStressOptions,
  violations: StressViolation[],
  durationMs: number,
): EngineStressReport {
  const runs = ctx.tracker.order.map((id) => ctx.tracker.runs.get(id) as TrackedRun);
  const ended: Record<string, number> = {};
  for (const run of runs) ended[run.ended ?? 'live'] = (ended[run.ended ?? 'live'] ?? 0) + 1;
  const byOp: Record<string, Record<string, number>> = {};
  for (const { op, result = 'none' } of ctx.ops) {
    const outcomes = byOp[op] ?? {};
    byOp[op] = outcomes;
    const key = result.startsWith('error') ? 'error' : result.replace(/ \(.*\)$/, '');
    outcomes[key] = (outcomes[key] ?? 0) + 1;
  }
  return {
    seed: options.seed,
    ops: options.ops,
    target: options.target,
    runs: runs.filter((run) => run.parentId === undefined).length,
    children: runs.filter((run) => run.parentId !== undefined).length,
    sessions: ctx.sessionIds.length,
    ended,
    byOp,
    durationMs,
    violations,
  };
}

/**
 * A violation with what tells its story: the operations on its run's tree (the run, its parent, its
 * children; a crew child nobody tracked, by its root's id, which its own ends with) and the faults
 * after the first of them, each run's record, job and log as Redis has them now, and the workers'
 * lines about them.
 */
async function explain(ctx: StressContext, violation: StressViolation) {
  if (!violation.runId) return violation;
  const { runs } = ctx.tracker;
  const run = runs.get(violation.runId) ?? runs.get(`run_${violation.runId.split('_').at(-1)}`);
  const related = new Set([violation.runId, ...(run ? [run.id, ...run.children] : [])]);
  if (run?.parentId) related.add(run.parentId);
  const ops = ctx.ops.filter((op) => op.runId !== undefined && related.has(op.runId));
  const first = ops[0]?.atMs ?? 0;
  const faults = ctx.ops
    .filter((op) => ['kill', 'pause', 'stutter'].includes(op.op) && op.atMs >= first)
    .slice(0, 20);
  const logs = await readLogs(ctx.d, [...related]);
  const state = [];
  for (const id of related) {
    const events = (logs.get(id) ?? []).map(
      (e) => `${e.id} ${e.type} ${JSON.stringify(e.data).slice(0, 160)}`,
    );
    state.push({ id, now: await describeRun(ctx.d, id), events });
  }
  return {
    ...violation,
    ops: [...ops, ...faults].sort((a, b) => a.i - b.i),
    runs: state,
    log: workerLines(ctx, related, 80),
  };
}

/** The workers' log lines that name one of `runIds`, in time order, each led by its worker's id. */
function workerLines(ctx: StressContext, runIds: ReadonlySet<string>, max: number): string[] {
  const lines: { at: number; line: string }[] = [];
  for (const [id, output] of ctx.fleet.logs()) {
    for (const line of output) {
      if (![...runIds].some((runId) => line.includes(runId))) continue;
      const at = Number((/"time":(\d+)/.exec(line) ?? [])[1] ?? 0);
      lines.push({ at, line: `${id} ${line.length > 600 ? `${line.slice(0, 600)}…` : line}` });
    }
  }
  return lines
    .sort((a, b) => a.at - b.at)
    .slice(-max)
    .map((l) => l.line);
}

async function writeArtifacts(
  ctx: StressContext,
  report: EngineStressReport,
  explained: readonly unknown[],
  out: string | undefined,
) {
  const dir = out ?? join(tmpdir(), `tether-stress-${report.target}-${report.seed}-${Date.now()}`);
  await mkdir(join(dir, 'workers'), { recursive: true });
  await writeFile(join(dir, 'ops.jsonl'), ctx.ops.map((op: OpRecord) => JSON.stringify(op)).join('\n'));
  await writeFile(join(dir, 'violations.json'), JSON.stringify(explained, null, 2));
  for (const [id, lines] of ctx.fleet.logs())
    await writeFile(join(dir, 'workers', `${id}.log`), lines.join('\n'));
  return dir;
}
