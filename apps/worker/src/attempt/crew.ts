import { type CrewResultEntry, childModelSpec, type PendingDelegation } from '@tether/agent';
import { memoryScopeOf, newChildRunId, TERMINAL_STATUSES } from '@tether/protocol';
import type { TetherKeys } from '@tether/store/redis';
import type { NewRun, RunService, RunSpec } from '@tether/store/runs';
import { type CrewTask, TOOLSET_DEFAULTS } from '@tether/tools';
import type { AttemptContext, CrewQueue, Settlement } from './context.js';

/**
 * The crew, on the worker's side: which crew tools a run has, the children a
 * delegation starts (their specs), and what a parent that waits on them
 * finds when it is woken (every result, or children still out, or a
 * delegation to record again after a crash). The steps themselves are Redis
 * scripts (`delegateRun`, and `finalizeRun` reporting a child's end); the
 * parent waits without a slot, its job delayed until the children's deadline
 * and promoted when the last one reports (see docs/architecture.md, "Crew").
 */

/** The toolset a run needs to delegate, and the one children never get. */
const CREW = 'crew';
const INTERACTION = 'interaction';

/** A run's toolsets: the ones it asked for, or the defaults. */
export function toolsetsOf(spec: RunSpec): string[] {
  return spec.toolsets ?? [...TOOLSET_DEFAULTS];
}

/** How deep the run sits in its crew tree (0: a run submitted by a client). */
export function depthOf(spec: RunSpec): number {
  return spec.crew?.depth ?? 0;
}

/**
 * The crew tools of a run with these tool names: `delegate_task` and
 * `delegate_parallel` only while its depth is below the limit, and
 * `escalate` only for a child (there is no parent to escalate to otherwise;
 * a child has it whatever its toolsets).
 */
export function withCrewTools(names: readonly string[], spec: RunSpec, maxDepth: number): string[] {
  const depth = depthOf(spec);
  const kept = names.filter((name) => {
    if (name === 'delegate_task' || name === 'delegate_parallel') return depth < maxDepth;
    return name !== 'escalate';
  });
  if (depth > 0) kept.push('escalate');
  return kept;
}

/**
 * A child's toolsets: those its task asked for (or its parent's), kept only
 * where its parent has them, never `interaction` (a child has no user to ask),
 * and `crew` only while the child's depth is below the limit.
 */
export function childToolsets(parent: RunSpec, task: CrewTask, depth: number, maxDepth: number): string[] {
  const parents = toolsetsOf(parent);
  const asked = task.toolsets ?? parents;
  return asked.filter(
    (toolset) =>
      parents.includes(toolset) && toolset !== INTERACTION && (toolset !== CREW || depth < maxDepth),
  );
}

/**
 * The child runs of a delegation, ready to create: ids from the checkpoint
 * (so that a delegation done again after a crash creates the same children),
 * each with its parent's model (a replay run's children play its `children`
 * scripts), locale and limits, in its tree root's workspace, and a deadline.
 */
export function planChildren(
  ctx: Pick<AttemptContext, 'runId' | 'config'>,
  run: { tenant: string; spec: RunSpec; sessionId: string | undefined },
  delegation: PendingDelegation,
  queueOf: (runId: string) => string,
  now = Date.now(),
): NewRun[] {
  const { runId, config } = ctx;
  const { spec } = run;
  const depth = depthOf(spec) + 1;
  const rootRunId = spec.crew?.rootRunId ?? runId;
  const workspace = spec.crew?.workspace ?? { id: runId, sessionId: run.sessionId };
  return delegation.tasks.map((task, index) => {
    const childSpec: RunSpec = {
      input: task.goal,
      toolsets: childToolsets(spec, task, depth, config.crewMaxDepth),
      crew: {
        goal: task.goal,
        context: task.context,
        parentRunId: runId,
        rootRunId,
        depth,
        workspace,
      },
    };
    const model = childModelSpec(spec.model, task.goal);
    if (model) childSpec.model = model;
    if (spec.locale) childSpec.locale = spec.locale;
    if (spec.limits) childSpec.limits = spec.limits;
    // A child cannot do without asking what its parent had to ask for.
    if (spec.approval) childSpec.approval = spec.approval;
    childSpec.memory = { scope: memoryScopeOf(spec, run.sessionId) };
    return {
      id: task.childRunId,
      tenant: run.tenant,
      spec: childSpec,
      createdAtMs: now,
      queue: queueOf(task.childRunId),
      crew: {
        parentRunId: runId,
        rootRunId,
        depth,
        call: delegationKey(delegation),
        index,
        deadlineMs: now + config.crewChildTimeoutMs,
      },
    };
  });
}

/** A message for the model when a delegation cannot start (a replay run with no script for a goal). */
export function refuseTasks(spec: RunSpec, tasks: readonly CrewTask[]): string | undefined {
  for (const [index, task] of tasks.entries()) {
    try {
      childModelSpec(spec.model, task.goal);
    } catch (error) {
      return `Task ${index} cannot be delegated: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  return undefined;
}

/**
 * The key of a delegation in Redis (its record, and each child's `call`): the
 * model's call id with the first child's id, which is new for every
 * delegation. The call id alone is not enough: a provider may use the same ids
 * again in a later turn, and a second delegation would pass for the first.
 */
export function delegationKey(delegation: Pick<PendingDelegation, 'callId' | 'tasks'>): string {
  return `${delegation.callId} ${delegation.tasks[0]?.childRunId ?? ''}`;
}

/**
 * What a parent woken while it waits on `pending` does: resume with every
 * child's result (in task order), wait again (children still out; the ones
 * past their deadline are ended first, the ones that are gone or ended
 * without reporting are reported now), or record the delegation again (the
 * worker that delegated died before it could).
 */
export async function resolveDelegation(
  ctx: AttemptContext,
  pending: PendingDelegation,
  plan: (delegation: PendingDelegation) => NewRun[],
  now = Date.now(),
): Promise<{ results: CrewResultEntry[] } | Settlement> {
  const { store, runId } = ctx;
  let delegation = await store.delegation(runId);
  if (delegation?.call !== delegationKey(pending)) {
    return { kind: 'waiting', on: 'children', open: { delegation: pending, children: plan(pending) } };
  }
  if (delegation.pending > 0) {
    // The worker that delegated may have died before it queued the children: queue the ones still
    // queued (a child that has its job keeps it).
    await ctx.crew.queueChildren(plan(pending), ctx.job.data.requestId);
    for (const [childId] of delegation.children) {
      if (delegation.results.has(childId)) continue;
      const child = await store.get(childId);
      if (!child) await store.reportGone(runId, childId);
      else if (TERMINAL_STATUSES.includes(child.status)) await store.reportEnded(childId);
      else if (now >= (child.crew?.deadlineMs ?? delegation.deadlineMs)) {
        ctx.log.warn({ childRunId: childId }, 'a crew child ran past its deadline: it is ended as timed out');
        await ctx.crew.timeOutChild(childId, runId, ctx.config.crewChildTimeoutMs);
      }
    }
    delegation = await store.delegation(runId);
    if (!delegation) return { kind: 'lost', why: 'the run no longer waits on its children', handBack: false };
    if (delegation.pending > 0) {
      return {
        kind: 'waiting',
        on: 'children',
        again: { untilMs: delegation.deadlineMs },
      };
    }
  }
  const results = pending.tasks.map((task, index): CrewResultEntry => {
    const result = delegation.results.get(task.childRunId);
    if (result) return { ...result, index };
    return {
      index,
      runId: task.childRunId,
      status: 'failed',
      summary: 'ERR_CREW_CHILD_GONE: the child reported no result.',
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      durationMs: 0,
    };
  });
  return { results };
}

/** The crew limits a run's attempt works with (undefined for a run that cannot delegate). */
export async function crewLimits(
  ctx: AttemptContext,
  toolNames: readonly string[],
  spec: RunSpec,
): Promise<
  | {
      maxParallel: number;
      remainingChildren: number;
      newChildId: () => string;
      refuse: (tasks: CrewTask[]) => string | undefined;
    }
  | undefined
> {
  if (!toolNames.includes('delegate_task') && !toolNames.includes('delegate_parallel')) return undefined;
  const started = await ctx.store.childCount(ctx.runId);
  return {
    maxParallel: ctx.config.crewMaxParallel,
    remainingChildren: Math.max(0, ctx.config.crewMaxChildren - started),
    newChildId: () => newChildRunId(ctx.runId),
    refuse: (tasks) => refuseTasks(spec, tasks),
  };
}

/** The crew's queue steps, done by a RunService's engine on the deployment's keys. */
export function crewQueue(runs: RunService, keys: TetherKeys): CrewQueue {
  return {
    queueChildren: (children, requestId) => runs.queueChildren(children, { requestId }),
    timeOutChild: (childRunId, parentRunId, timeoutMs) =>
      runs.engine.timeOutChild(childRunId, parentRunId, timeoutMs),
    cancelChildren: (runId) => runs.engine.cancelChildren(runId),
    repairChild: (childRunId, parentRunId) => runs.engine.repairChild(childRunId, parentRunId),
    queueOf: (runId) => keys.shardPrefix(keys.shardOf(runId)),
  };
}
