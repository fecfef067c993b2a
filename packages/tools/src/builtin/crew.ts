/**
 * The crew toolset: `delegate_task`, `delegate_parallel` and `escalate`.
 *
 * Delegation is not a tool's work: the runtime that runs the attempt (the
 * worker) starts each task as a child run of its own and gives the delegating
 * run a result once every child has ended. The attempt loop intercepts the two
 * delegate calls when its host can delegate; the handlers here only answer for
 * a host that cannot. `escalate` ends a child run with its reason as its
 * output (the loop does that too); its handler returns the reason.
 */
import { type Static, Type } from '@sinclair/typebox';
import { defineTool } from '../define-tool.js';
import type { Tool, ToolSchema } from '../types.js';

/** The crew tools, in catalog order. */
export const CREW_TOOL_NAMES = ['delegate_task', 'delegate_parallel', 'escalate'] as const;

/** One delegated task, as a delegate call gives it. */
export type CrewTask = { goal: string; context?: string; toolsets?: string[] };

const goal = Type.String({
  minLength: 1,
  maxLength: 20_000,
  description:
    'What the sub-agent must achieve, and how it knows it is done. It sees nothing of this conversation: be specific (files, names, constraints).',
});
const context = Type.String({
  maxLength: 100_000,
  description:
    'Everything else the sub-agent needs to know: what you found so far, relevant file contents, conventions, what not to touch.',
});
const toolsets = Type.Array(Type.String({ pattern: '^[a-z_]+$', maxLength: 32 }), {
  maxItems: 16,
  uniqueItems: true,
  description:
    "Toolsets the sub-agent gets (for example base, planning), among this run's own; leave out for all of this run's. It never gets interaction: it cannot ask the user.",
});

/** Parameters of `delegate_task`: one task, `{ goal, context?, toolsets? }`, as each of `delegate_parallel`'s. */
export const DelegateTaskParams = Type.Object(
  { goal, context: Type.Optional(context), toolsets: Type.Optional(toolsets) },
  { additionalProperties: false },
);

/**
 * Parameters of `delegate_parallel`. No `maxItems`: how many tasks one
 * delegation holds is the server's setting, and the runtime refuses a longer
 * list with a message saying the limit (never cutting it short).
 */
export const DelegateParallelParams = Type.Object(
  {
    tasks: Type.Array(DelegateTaskParams, {
      minItems: 1,
      description: 'The independent tasks, one sub-agent each; the results come back in this order.',
    }),
  },
  { additionalProperties: false },
);

/** Parameters of `escalate`. */
export const EscalateParams = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 20_000,
      description:
        'Why you cannot go on: where you are blocked, what you did and found, and what the delegating run must decide.',
    }),
  },
  { additionalProperties: false },
);

/** Catalog entry of `delegate_task` (toolset `crew`). */
export const delegateTaskSchema: ToolSchema<typeof DelegateTaskParams> = {
  name: 'delegate_task',
  toolset: 'crew',
  description:
    'Hand one well-scoped, self-contained subtask to a sub-agent and wait for its result. The sub-agent runs as a run of its own in the same workspace and sees nothing of this conversation, so give it everything it needs in goal and context. The result is JSON: [{ index, runId, status, summary, usage, durationMs }], status being completed, failed, cancelled, escalated or timed_out. Do small or tightly coupled steps yourself.',
  parameters: DelegateTaskParams,
};

/** Catalog entry of `delegate_parallel` (toolset `crew`). */
export const delegateParallelSchema: ToolSchema<typeof DelegateParallelParams> = {
  name: 'delegate_parallel',
  toolset: 'crew',
  description:
    'Run several independent subtasks at once, one sub-agent each, and wait until all have ended. The sub-agents share this workspace and see nothing of this conversation: give each a full goal and context, and never let two of them write the same file. The result is JSON with one entry per task, in order: { index, runId, status, summary, usage, durationMs }. One call holds a limited number of tasks; split a longer list into batches.',
  parameters: DelegateParallelParams,
};

/** Catalog entry of `escalate` (toolset `crew`). */
export const escalateSchema: ToolSchema<typeof EscalateParams> = {
  name: 'escalate',
  toolset: 'crew',
  description:
    'Children only: stop and hand the reason to the run that delegated you. Use it when you are blocked, or the goal is impossible or ambiguous, instead of guessing. Your run ends with the reason as its result.',
  parameters: EscalateParams,
};

function notHere(name: string): string {
  return `${name} cannot run here: delegation is carried out by the worker runtime, which starts each task as a run of its own, and it is not available in this host. Do the work yourself with your other tools.`;
}

/** Makes `delegate_task` for a host that cannot delegate: the call fails with a message saying so. */
export function createDelegateTaskTool(): Tool {
  return defineTool(delegateTaskSchema, async () => ({
    ok: false,
    content: notHere('delegate_task'),
  }));
}

/** Makes `delegate_parallel` for a host that cannot delegate: the call fails with a message saying so. */
export function createDelegateParallelTool(): Tool {
  return defineTool(delegateParallelSchema, async () => ({
    ok: false,
    content: notHere('delegate_parallel'),
  }));
}

/** Makes `escalate`: returns the reason (the attempt loop ends the run with it). */
export function createEscalateTool(): Tool {
  return defineTool(escalateSchema, async (args) => ({ ok: true, content: args.reason }));
}

/** Validated arguments of `delegate_task`. */
export type DelegateTaskArgs = Static<typeof DelegateTaskParams>;
/** Validated arguments of `delegate_parallel`. */
export type DelegateParallelArgs = Static<typeof DelegateParallelParams>;
/** Validated arguments of `escalate`. */
export type EscalateArgs = Static<typeof EscalateParams>;
