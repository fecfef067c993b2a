import { RUN_STATUSES, type RunStatus, sessionTag } from '@tether/protocol';
import { type RedisClient, scanKeys } from '../redis/connection.js';
import { QUEUE_NAME, type TetherKeys } from '../redis/keys.js';
import { type PipelineReply, SlotPipelines } from '../redis/slot-pipelines.js';
import { LIVE_STATUSES } from './lifecycle.js';
import { parseWaitpoint, type Waitpoint } from './replies.js';

/**
 * The invariant checker: given a deployment's Redis, it checks every run against its job, its
 * tenant slot, its session's line, its crew children and its waitpoint, and lists each
 * disagreement as a violation (none: the state is consistent). It reads, never writes.
 *
 * **Precondition: a quiescent moment.** No step is half done: no API request and no worker attempt
 * is between two writes of one step (a script and the job move after it, a run's record and its
 * job at submit, a child's end and its report). Runs may be in any status, `running` included (its
 * job active and locked by a worker that is alive, its slot held), as at the end of a test once
 * every run has ended, waits, or is held by a live worker. Where a time says how long ago a step
 * started, what a step in flight shows is tolerated for `graceMs` (default 5 s); anything else is
 * reported, so on a live system a violation may be a step in flight: check again.
 *
 * How runs are found: `SCAN` of the deployment's namespace (every master of a cluster), keeping the
 * keys that are a run's record (`keys.run(id).record`), a session's queue and a tenant's slots; the
 * jobs, from each queue's lists and sets (the shards' and every queue a record names). Cost: one
 * scan and a few pipelined rounds, linear in the runs: a tool for tests and quiet moments.
 *
 * The rules (a violation names one, and the run it is about where there is one):
 *
 * - `run-record`: a run record has a known status and a tenant (nothing else is checked of one
 *   that has not).
 * - `live-run-without-job`: a live run (queued, running, waiting_for_input, waiting_for_children)
 *   has a job (id = run id) in the queue its record names (`queue`; the deployment's prefix for a
 *   record of an earlier version) in a state that will run it again: waiting (`wait`, or `paused`),
 *   prioritized, delayed, or active with its lock. An active job without a lock is stranded: its
 *   worker is gone, and only a stalled-job check recovers it. Tolerated: a `queued` run created
 *   less than `graceMs` ago with no job yet (submit writes the record, then adds the job; a
 *   delegation creates its children, then queues them).
 * - `job-without-live-run`: a job waiting, paused, prioritized, delayed, active or waiting for
 *   children belongs to a live run whose record names its queue. Completed and failed jobs are not
 *   checked: they run nothing (and Tether's are removed, `removeOnComplete`/`removeOnFail`).
 *   Tolerated: an active, locked job of a run that ended less than `graceMs` ago (its worker ends
 *   the run, then completes the job).
 * - `tenant-slot`: a tenant's `running` and `holders` have the same members; each slot whose lease
 *   has not run out is held by one live run of that tenant: an attempt's (holder = the run's
 *   `owner`, status `running`) or one handed over and not taken up (holder `''`, status not
 *   `running`); a run in line (`parked`) is live and holds no slot. With `tenantCap` too: at most
 *   that many live leases, and every `running` run of the tenant holds one with its owner token,
 *   so the slots counted are exactly the runs that hold them. A lease that ran out counts for
 *   nothing (the next script drops it) and is not checked.
 * - `waitpoint-resolved`: a waiting run (waiting_for_input, waiting_for_children) whose waitpoint
 *   has no pending request left (each of its requests answered, received, reported, decided or
 *   timed out, or none recorded) does not sleep on it: its job is not delayed: whoever resolved the
 *   last request must wake it. Tolerated: the run's last event is less than `graceMs` old (a step
 *   that resolves a request appends its event, then promotes the job).
 * - `waitpoint-pending`: a live run's waitpoint counts as `pending` exactly its requests in state
 *   `pending`: no resolved request is still counted.
 * - `session-active`: of a session's live runs (record `session`), at most one is active (claimed
 *   and not ended: status other than `queued` and `scheduled`, or `startedAt` set, since an answered or retried run
 *   is queued again as the session's current run), and that one is the head of the session's queue.
 * - `session-queue`: a session's queue lists each of its live runs once, and nothing else.
 * - `crew-delegation`: a delegation (a waitpoint of `child` requests) holds no result of another
 *   run under a child's; a child without a result is live (tolerated:
 *   one that ended less than `graceMs` ago, reported just after by `reportEnded`), a child with one
 *   is not; a live crew child's parent exists and has not ended.
 * - `run-timing`: a run never started before its `runAt` (a delayed run's), and a `scheduled` run
 *   has a `runAt` and has never started.
 * - `run-expiry`: a run with `expiresAt` that started did so before it; an `expired` run has an
 *   `expiresAt`, never started (no `startedAt`, no `run.started` nor `attempt.started` in its log)
 *   and ended no earlier than its deadline.
 */

/** The rules, in the order violations are listed. */
export const INVARIANT_RULES = [
  'run-record',
  'live-run-without-job',
  'job-without-live-run',
  'tenant-slot',
  'waitpoint-resolved',
  'waitpoint-pending',
  'session-active',
  'session-queue',
  'crew-delegation',
  'run-timing',
  'run-expiry',
] as const;
export type InvariantRule = (typeof INVARIANT_RULES)[number];

/** One disagreement: the rule it breaks, the run it is about (when one), and what was found. */
export interface InvariantViolation {
  rule: InvariantRule;
  runId?: string | undefined;
  detail: string;
}

/** How long a step in flight may show a half-done state (ms). */
export const DEFAULT_INVARIANT_GRACE_MS = 5_000;

export interface CheckInvariantsOptions {
  /** The deployment's Redis: one server, or a cluster (scanned master by master). */
  redis: RedisClient;
  /** The deployment's keys (`createKeys(prefix, shards)`). */
  keys: TetherKeys;
  /** How long a step in flight may show a half-done state (ms, see each rule). Default 5,000. */
  graceMs?: number;
  /** The check's clock (epoch ms; leases and graces are measured against it). Default now. */
  now?: number;
  /** The workers' `TETHER_TENANT_MAX_RUNNING`, when set: checks that every running run holds a slot. */
  tenantCap?: number;
}

/** Checks the deployment's runs against the rules above; the violations, in rule then run order. */
export async function checkInvariants(options: CheckInvariantsOptions): Promise<InvariantViolation[]> {
  const { redis, keys } = options;
  const graceMs = options.graceMs ?? DEFAULT_INVARIANT_GRACE_MS;
  const now = options.now ?? Date.now();
  if (!Number.isInteger(graceMs) || graceMs < 0) {
    throw new RangeError(`checkInvariants option "graceMs" must be an integer of at least 0, got ${graceMs}`);
  }
  if (options.tenantCap !== undefined && (!Number.isInteger(options.tenantCap) || options.tenantCap < 1)) {
    throw new RangeError(
      `checkInvariants option "tenantCap" must be an integer of at least 1, got ${options.tenantCap}`,
    );
  }
  const found = await scanDeployment(redis, keys);
  const runs = await readRuns(redis, keys, found.runIds);
  const prefixes = new Set([keys.queuePrefix, ...shardPrefixes(keys)]);
  for (const run of runs.values()) prefixes.add(run.queue);
  const queues = await readQueues(redis, prefixes);
  const violations: InvariantViolation[] = [];
  const check: Check = {
    runs,
    queues,
    now,
    graceMs,
    report: (rule, runId, detail) => violations.push({ rule, runId, detail }),
  };
  for (const run of runs.values()) {
    if (!run.valid) check.report('run-record', run.id, `run ${run.id} has status ${run.status || '(none)'}`);
  }
  checkJobs(check);
  await reportMissingJobs(redis, check);
  checkWaitpoints(check);
  checkCrew(check);
  checkTiming(check);
  await checkExpiry(redis, keys, check);
  await checkSessions(redis, keys, check, found.sessionTags);
  await checkTenantSlots(redis, keys, check, found.tenants, options.tenantCap);
  const order = (v: InvariantViolation) => INVARIANT_RULES.indexOf(v.rule);
  return violations.sort((a, b) => order(a) - order(b) || (a.runId ?? '').localeCompare(b.runId ?? ''));
}

/**
 * Checks again every `intervalMs` (default 50) until the checker finds nothing or `settleMs`
 * (default 5,000) has passed: a step in flight that outlives its grace shows for a moment (a slot
 * given back just after its run ended, a parent woken by its last child). The violations of the
 * last check, none when the deployment settled consistent.
 */
export async function settledInvariants(
  options: CheckInvariantsOptions & { settleMs?: number; intervalMs?: number },
): Promise<InvariantViolation[]> {
  const deadline = Date.now() + (options.settleMs ?? 5_000);
  for (;;) {
    const violations = await checkInvariants(options);
    if (violations.length === 0 || Date.now() >= deadline) return violations;
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}

/** Violations one per line: the rule, the run, what was found. */
export function formatViolations(violations: readonly InvariantViolation[]): string {
  return violations.map((v) => `${v.rule}${v.runId ? ` ${v.runId}` : ''}: ${v.detail}`).join('\n');
}

/** A run as read: its record and what it waits on. */
interface RunState {
  id: string;
  record: Record<string, string>;
  status: string;
  /** A known status and a tenant: only such a run is checked further. */
  valid: boolean;
  live: boolean;
  /** The BullMQ prefix of its job's queue. */
  queue: string;
  /** Its waitpoint, as stored (see `RunKeys.waitpoint`); undefined when it has none. */
  waitpoint: Waitpoint | undefined;
  /** The time of its last event (epoch ms). */
  lastEventMs: number | undefined;
}

/** A job's state, as BullMQ's `getState` orders them (completed and failed are not read). */
type JobState = 'delayed' | 'prioritized' | 'active' | 'waiting' | 'paused' | 'waiting-children';

/** One queue's jobs that may still run: their state, and which active ones hold a lock. */
interface QueueState {
  jobs: Map<string, JobState>;
  locked: Set<string>;
}

interface Check {
  runs: Map<string, RunState>;
  queues: Map<string, QueueState>;
  now: number;
  graceMs: number;
  report(rule: InvariantRule, runId: string | undefined, detail: string): void;
}

function shardPrefixes(keys: TetherKeys): string[] {
  return Array.from({ length: keys.shards }, (_, shard) => keys.shardPrefix(shard));
}

/** The runs (by their records), sessions (by their queues) and tenants (by their slots) in Redis. */
async function scanDeployment(redis: RedisClient, keys: TetherKeys) {
  const ns = keys.namespace.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const record = new RegExp(
    `^${ns}:(?:run:\\{(run_[^}:]+)\\}|run:\\{run_[^}:]+\\}:child:(run_[^:]+)|ses:\\{s_[^}]+\\}:run:(run_[^:]+))$`,
  );
  const sessionQueue = new RegExp(`^${ns}:ses:\\{s_([^}]+)\\}:queue$`);
  const tenantSlot = new RegExp(`^${ns}:tenant:\\{([^}]+)\\}:(?:running|running:holders|parked)$`);
  const runIds = new Set<string>();
  const sessionTags = new Set<string>();
  const tenants = new Set<string>();
  for (const key of await scanKeys(redis, `${keys.namespace}:*`)) {
    const run = record.exec(key);
    const id = run?.[1] ?? run?.[2] ?? run?.[3];
    if (id && keys.run(id).record === key) runIds.add(id);
    const tag = sessionQueue.exec(key)?.[1];
    if (tag && keys.session(tag).queue === key) sessionTags.add(tag);
    const tenant = tenantSlot.exec(key)?.[1];
    if (tenant) tenants.add(tenant);
  }
  return { runIds: [...runIds], sessionTags, tenants };
}

/** The values of replies in order, throwing the first error Redis answered. */
function values(replies: PipelineReply[]): unknown[] {
  return replies.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

/** Each run's record, waitpoint and last event: one pipeline per slot. */
async function readRuns(redis: RedisClient, keys: TetherKeys, runIds: readonly string[]) {
  const reads = new SlotPipelines(redis);
  for (const id of runIds) {
    const run = keys.run(id);
    reads.add(run.record, (pipeline) =>
      pipeline
        .hgetall(run.record)
        .hgetall(run.waitpoint)
        .hgetall(run.waitpointResults)
        .xrevrange(run.events, '+', '-', 'COUNT', 1),
    );
  }
  const replies = values(await reads.exec());
  const runs = new Map<string, RunState>();
  runIds.forEach((id, i) => {
    const [record, waitpoint, results, last] = replies.slice(i * 4, i * 4 + 4) as [
      Record<string, string>,
      Record<string, string>,
      Record<string, string>,
      [string, string[]][],
    ];
    if (!record.id) return; // Gone between the scan and the read.
    const status = record.status ?? '';
    const valid = (RUN_STATUSES as readonly string[]).includes(status) && Boolean(record.tenant);
    runs.set(id, {
      id,
      record,
      status,
      valid,
      live: valid && LIVE_STATUSES.includes(status as RunStatus),
      queue: record.queue ?? keys.queuePrefix,
      // The requests' ids, states and results (their bodies, in the log, are not checked).
      waitpoint: parseWaitpoint(waitpoint, undefined, results),
      lastEventMs: last[0] ? Number(last[0][0].split('-')[0]) : undefined,
    });
  });
  return runs;
}

/** Each queue's jobs that may still run, and the locks of its active ones. */
async function readQueues(redis: RedisClient, prefixes: ReadonlySet<string>) {
  const queues = new Map<string, QueueState>();
  // In `getState`'s order: a job found in two places counts where BullMQ would say it is.
  const sources: [JobState, string, 'list' | 'zset'][] = [
    ['delayed', 'delayed', 'zset'],
    ['prioritized', 'prioritized', 'zset'],
    ['active', 'active', 'list'],
    ['waiting', 'wait', 'list'],
    ['paused', 'paused', 'list'],
    ['waiting-children', 'waiting-children', 'zset'],
  ];
  const reads = new SlotPipelines(redis);
  for (const prefix of prefixes) {
    for (const [, name, type] of sources) {
      const key = `${prefix}:${QUEUE_NAME}:${name}`;
      reads.add(key, (pipeline) =>
        type === 'list' ? pipeline.lrange(key, 0, -1) : pipeline.zrange(key, '0', '-1'),
      );
    }
  }
  const replies = values(await reads.exec()) as string[][];
  [...prefixes].forEach((prefix, p) => {
    const jobs = new Map<string, JobState>();
    sources.forEach(([state], s) => {
      for (const id of replies[p * sources.length + s] ?? []) if (!jobs.has(id)) jobs.set(id, state);
    });
    queues.set(prefix, { jobs, locked: new Set() });
  });
  const locks = new SlotPipelines(redis);
  const active: [string, string][] = [];
  for (const [prefix, queue] of queues) {
    for (const [id, state] of queue.jobs) {
      if (state !== 'active') continue;
      const key = `${prefix}:${QUEUE_NAME}:${id}:lock`;
      active.push([prefix, id]);
      locks.add(key, (pipeline) => pipeline.exists(key));
    }
  }
  values(await locks.exec()).forEach((exists, i) => {
    const [prefix, id] = active[i] as [string, string];
    if (exists === 1) queues.get(prefix)?.locked.add(id);
  });
  return queues;
}

/** A time a record keeps (epoch ms; ISO 8601 in a record of an earlier version), undefined if none. */
function timeOf(stored: string | undefined): number | undefined {
  if (!stored) return undefined;
  const ms = /^\d+$/.test(stored) ? Number(stored) : Date.parse(stored);
  return Number.isNaN(ms) ? undefined : ms;
}

function withinGrace(check: Check, at: number | undefined): boolean {
  return at !== undefined && check.now - at < check.graceMs;
}

/** `live-run-without-job` (a job in a state that runs nothing) and `job-without-live-run`. */
function checkJobs(check: Check): void {
  for (const run of check.runs.values()) {
    if (!run.live) continue;
    const queue = check.queues.get(run.queue);
    const state = queue?.jobs.get(run.id);
    if (state === 'active' && !queue?.locked.has(run.id)) {
      check.report(
        'live-run-without-job',
        run.id,
        `run ${run.id} is ${run.status} but its job is active with no lock: no worker holds it (stranded)`,
      );
    } else if (state === 'waiting-children') {
      check.report(
        'live-run-without-job',
        run.id,
        `run ${run.id} is ${run.status} but its job waits for children`,
      );
    }
  }
  for (const [prefix, queue] of check.queues) {
    for (const [id, state] of queue.jobs) {
      const run = check.runs.get(id);
      const where = `a job ${state} in ${prefix}`;
      if (!run) check.report('job-without-live-run', id, `${where} for run ${id}, which is gone`);
      else if (!run.valid) continue;
      else if (run.live && run.queue !== prefix) {
        check.report('job-without-live-run', id, `${where}, but run ${id} names the queue ${run.queue}`);
      } else if (!run.live) {
        const finishing = state === 'active' && queue.locked.has(id);
        if (finishing && withinGrace(check, timeOf(run.record.finishedAt))) continue;
        check.report('job-without-live-run', id, `${where} for run ${id}, which is ${run.status}`);
      }
    }
  }
}

/** `run-timing`: each run's start against its `runAt`. */
function checkTiming(check: Check): void {
  for (const run of check.runs.values()) {
    if (!run.valid) continue;
    const runAt = timeOf(run.record.runAt);
    const startedAt = timeOf(run.record.startedAt);
    if (run.status === 'scheduled' && (runAt === undefined || startedAt !== undefined)) {
      const why = runAt === undefined ? 'has no runAt' : 'has started';
      check.report('run-timing', run.id, `run ${run.id} is scheduled but ${why}`);
    }
    if (runAt !== undefined && startedAt !== undefined && startedAt < runAt) {
      check.report(
        'run-timing',
        run.id,
        `run ${run.id} started at ${new Date(startedAt).toISOString()}, before its runAt ${new Date(runAt).toISOString()}`,
      );
    }
  }
}

/** `run-expiry`: each run's start against its deadline to start by, and every expired run's log. */
async function checkExpiry(redis: RedisClient, keys: TetherKeys, check: Check): Promise<void> {
  const expired: RunState[] = [];
  for (const run of check.runs.values()) {
    if (!run.valid) continue;
    const expiresAt = timeOf(run.record.expiresAt);
    const startedAt = timeOf(run.record.startedAt);
    const finishedAt = timeOf(run.record.finishedAt);
    const iso = (ms: number) => new Date(ms).toISOString();
    if (expiresAt !== undefined && startedAt !== undefined && startedAt >= expiresAt) {
      const detail = `run ${run.id} started at ${iso(startedAt)}, not before its expiresAt ${iso(expiresAt)}`;
      check.report('run-expiry', run.id, detail);
    }
    if (run.status !== 'expired') continue;
    expired.push(run);
    if (expiresAt === undefined || startedAt !== undefined) {
      const why = expiresAt === undefined ? 'has no expiresAt' : 'has started';
      check.report('run-expiry', run.id, `run ${run.id} is expired but ${why}`);
    } else if (finishedAt !== undefined && finishedAt < expiresAt) {
      const detail = `run ${run.id} expired at ${iso(finishedAt)}, before its expiresAt ${iso(expiresAt)}`;
      check.report('run-expiry', run.id, detail);
    }
  }
  // Only the expired runs' logs are read: few, and each whole.
  const reads = new SlotPipelines(redis);
  for (const run of expired) {
    const events = keys.run(run.id).events;
    reads.add(events, (pipeline) => pipeline.xrange(events, '-', '+'));
  }
  const logs = values(await reads.exec()) as [string, string[]][][];
  expired.forEach((run, i) => {
    for (const [, fields] of logs[i] ?? []) {
      const type = fields[fields.indexOf('t') + 1];
      if (type === 'run.started' || type === 'attempt.started') {
        check.report('run-expiry', run.id, `run ${run.id} is expired but its log has ${type}`);
      }
    }
  });
}

/** `live-run-without-job` for the live runs with no job that may run: what became of the job, to say so. */
async function reportMissingJobs(redis: RedisClient, check: Check): Promise<void> {
  const missing = [...check.runs.values()].filter((run) => {
    if (!run.live || check.queues.get(run.queue)?.jobs.has(run.id)) return false;
    const created = run.status === 'queued' || run.status === 'scheduled';
    return !(created && withinGrace(check, timeOf(run.record.createdAt)));
  });
  const reads = new SlotPipelines(redis);
  for (const run of missing) {
    const base = `${run.queue}:${QUEUE_NAME}`;
    reads.add(`${base}:completed`, (pipeline) => pipeline.zscore(`${base}:completed`, run.id));
    reads.add(`${base}:failed`, (pipeline) => pipeline.zscore(`${base}:failed`, run.id));
    reads.add(`${base}:${run.id}`, (pipeline) => pipeline.exists(`${base}:${run.id}`));
  }
  const replies = values(await reads.exec());
  missing.forEach((run, i) => {
    const [completed, failed, exists] = replies.slice(i * 3, i * 3 + 3);
    const fate =
      completed !== null
        ? 'its job is completed'
        : failed !== null
          ? 'its job has failed'
          : exists === 1
            ? 'its job is in no list of the queue'
            : 'it has no job';
    check.report('live-run-without-job', run.id, `run ${run.id} is ${run.status} but ${fate} (${run.queue})`);
  });
}

/** `waitpoint-resolved` and `waitpoint-pending`: each waiting run against its waitpoint. */
function checkWaitpoints(check: Check): void {
  for (const run of check.runs.values()) {
    const waitpoint = run.waitpoint;
    const pending = [...(waitpoint?.requests.values() ?? [])].filter(
      (request) => request.state === 'pending',
    );
    if (waitpoint && run.live && waitpoint.pending !== pending.length) {
      check.report(
        'waitpoint-pending',
        run.id,
        `run ${run.id}'s waitpoint ${waitpoint.id} has pending ${waitpoint.pending}, but ${pending.length} of its requests are pending`,
      );
    }
    if (run.status !== 'waiting_for_input' && run.status !== 'waiting_for_children') continue;
    if (pending.length > 0) continue;
    if (check.queues.get(run.queue)?.jobs.get(run.id) !== 'delayed') continue;
    if (withinGrace(check, run.lastEventMs)) continue;
    const what = waitpoint ? `no request of its waitpoint ${waitpoint.id} is pending` : 'it has no waitpoint';
    check.report(
      'waitpoint-resolved',
      run.id,
      `run ${run.id} is ${run.status} with its job delayed, but ${what}: nothing wakes it before the deadline`,
    );
  }
}

/** `crew-delegation`: each delegation against its children, and each live child against its parent. */
function checkCrew(check: Check): void {
  const report = (runId: string, detail: string) => check.report('crew-delegation', runId, detail);
  for (const parent of check.runs.values()) {
    const waitpoint = parent.waitpoint;
    if (waitpoint?.kind !== 'child') continue;
    const children = [...waitpoint.requests.keys()];
    const reported = new Set(children.filter((id) => waitpoint.requests.get(id)?.result !== undefined));
    for (const id of reported) {
      const result = JSON.parse(waitpoint.requests.get(id)?.result as string) as { runId?: string };
      if (result.runId !== id)
        report(
          parent.id,
          `run ${parent.id}'s delegation has a result of ${result.runId}, not its child ${id}`,
        );
    }
    for (const id of children) {
      const child = check.runs.get(id);
      if (reported.has(id)) {
        if (child?.live)
          report(id, `crew child ${id} is ${child.status} but its parent ${parent.id} has its result`);
      } else if (!child) {
        report(id, `crew child ${id} of ${parent.id} is gone without a result`);
      } else if (child.valid && !child.live && !withinGrace(check, timeOf(child.record.finishedAt))) {
        report(id, `crew child ${id} is ${child.status} but its parent ${parent.id} has no result of it`);
      }
    }
  }
  for (const child of check.runs.values()) {
    const parentId = child.record.parent;
    if (!child.live || !parentId) continue;
    const parent = check.runs.get(parentId);
    if (!parent?.live) {
      report(
        child.id,
        `crew child ${child.id} is ${child.status} but its parent ${parentId} is ${parent?.status ?? 'gone'}`,
      );
    }
  }
}

/** `session-active` and `session-queue`: each session's line against its live runs. */
async function checkSessions(
  redis: RedisClient,
  keys: TetherKeys,
  check: Check,
  scanned: ReadonlySet<string>,
): Promise<void> {
  const live = new Map<string, RunState[]>();
  const tags = new Set(scanned);
  for (const run of check.runs.values()) {
    if (!run.record.session) continue;
    const tag = sessionTag(run.record.session);
    tags.add(tag);
    if (run.live) live.set(tag, [...(live.get(tag) ?? []), run]);
  }
  const reads = new SlotPipelines(redis);
  for (const tag of tags) {
    const queue = keys.session(tag).queue;
    reads.add(queue, (pipeline) => pipeline.lrange(queue, 0, -1));
  }
  const queues = values(await reads.exec()) as string[][];
  for (const [i, tag] of [...tags].entries()) checkSession(check, tag, queues[i] ?? [], live.get(tag) ?? []);
}

/** One session's queue (`tag`) against its live runs. */
function checkSession(check: Check, tag: string, queue: string[], runs: RunState[]): void {
  const report = (runId: string, detail: string) => check.report('session-queue', runId, detail);
  const seen = new Set<string>();
  for (const id of queue) {
    const run = check.runs.get(id);
    if (seen.has(id)) report(id, `run ${id} is in the queue of session ${tag} more than once`);
    else if (!run?.live)
      report(id, `the queue of session ${tag} holds run ${id}, which is ${run?.status ?? 'gone'}`);
    else if (sessionTag(run.record.session ?? '') !== tag) {
      report(
        id,
        `the queue of session ${tag} holds run ${id} of another session (${run.record.session ?? 'none'})`,
      );
    }
    seen.add(id);
  }
  for (const run of runs) {
    if (!seen.has(run.id))
      report(run.id, `run ${run.id} of session ${tag} is ${run.status} but not in its queue`);
  }
  const active = runs.filter(
    (run) => (run.status !== 'queued' && run.status !== 'scheduled') || run.record.startedAt,
  );
  for (const run of active) {
    if (run.id === queue[0]) continue;
    check.report(
      'session-active',
      run.id,
      `run ${run.id} of session ${tag} is active (${run.status}) but not the head of its queue (${queue[0] ?? 'empty'}); active: ${active.map((r) => r.id).join(', ')}`,
    );
  }
}

/** `tenant-slot`: each tenant's slots against the runs that hold them. */
async function checkTenantSlots(
  redis: RedisClient,
  keys: TetherKeys,
  check: Check,
  scanned: ReadonlySet<string>,
  cap: number | undefined,
): Promise<void> {
  const tenants = new Set(scanned);
  if (cap !== undefined) {
    for (const run of check.runs.values())
      if (run.valid && run.status === 'running') tenants.add(run.record.tenant as string);
  }
  const reads = new SlotPipelines(redis);
  for (const tenant of tenants) {
    const slots = keys.tenantSlots(tenant);
    reads.add(slots.running, (pipeline) =>
      pipeline
        .zrange(slots.running, '0', '-1', 'WITHSCORES')
        .hgetall(slots.holders)
        .zrange(slots.parked, '0', '-1'),
    );
  }
  const replies = values(await reads.exec());
  [...tenants].forEach((tenant, i) => {
    const [running, holders, parked] = replies.slice(i * 3, i * 3 + 3) as [
      string[],
      Record<string, string>,
      string[],
    ];
    checkTenant(check, tenant, running, holders, parked, cap);
  });
}

function checkTenant(
  check: Check,
  tenant: string,
  running: string[],
  holders: Record<string, string>,
  parked: string[],
  cap: number | undefined,
): void {
  const report = (runId: string | undefined, detail: string) => check.report('tenant-slot', runId, detail);
  const leased = new Set<string>();
  for (let i = 0; i + 1 < running.length; i += 2) {
    const id = running[i] as string;
    const holder = holders[id];
    if (holder === undefined) report(id, `run ${id} has a slot of tenant ${tenant} but no holder`);
    if (Number(running[i + 1]) <= check.now) continue; // Its lease ran out: it counts for nothing.
    leased.add(id);
    const run = check.runs.get(id);
    const state = run ? `${run.status}${run.record.owner ? `, owner ${run.record.owner}` : ''}` : 'gone';
    if (!run?.live || run.record.tenant !== tenant) {
      report(
        id,
        `run ${id} holds a slot of tenant ${tenant}, but it is ${run?.live ? `of tenant ${run.record.tenant}` : state}`,
      );
    } else if (holder === '' && run.status === 'running') {
      report(id, `run ${id} is running on a slot of tenant ${tenant} handed to it and never taken up`);
    } else if (holder && (run.status !== 'running' || run.record.owner !== holder)) {
      report(id, `run ${id} holds a slot of tenant ${tenant} for attempt ${holder}, but it is ${state}`);
    }
  }
  const members = new Set(running.filter((_, i) => i % 2 === 0));
  for (const id of Object.keys(holders)) {
    if (!members.has(id)) report(id, `run ${id} is a holder of tenant ${tenant}'s slots, without a slot`);
  }
  for (const id of parked) {
    const run = check.runs.get(id);
    if (!run?.live) report(id, `run ${id} is in tenant ${tenant}'s line, but it is ${run?.status ?? 'gone'}`);
    else if (leased.has(id)) report(id, `run ${id} is in tenant ${tenant}'s line while it holds a slot`);
  }
  if (cap === undefined) return;
  if (leased.size > cap)
    report(undefined, `tenant ${tenant} has ${leased.size} slots taken, over its cap of ${cap}`);
  for (const run of check.runs.values()) {
    if (run.status !== 'running' || run.record.tenant !== tenant) continue;
    if (!leased.has(run.id) || holders[run.id] !== run.record.owner) {
      report(run.id, `run ${run.id} of tenant ${tenant} is running without a slot of its own`);
    }
  }
}
