import {
  type AttemptOutcome,
  type AttemptParams,
  type Checkpoint,
  countTokens,
  ownMessages,
  type PendingDelegation,
  resolveProvider,
  runAttempt,
  storedCheckpoint,
  turnEntries,
} from '@tether/agent';
import type { McpToolset } from '@tether/mcp';
import { OUTPUT_LIMITS, type RunEventInput, TetherError, toErrorBody } from '@tether/protocol';
import type { NewRun } from '@tether/store/runs';
import {
  compileApprovalPolicy,
  createSubmitResultTool,
  createTools,
  type RunContext,
  sandboxUserFor,
  type Tool,
  Workspace,
} from '@tether/tools';
import type { WorkerConfig } from '../config.js';
import { EventSink } from '../event-sink.js';
import { skillsAccess } from '../skills.js';
import type { AttemptContext, Settlement } from './context.js';
import { planChildren } from './crew.js';
import { openMcpToolset } from './mcp.js';
import { memoryAccess } from './memory-access.js';
import type { Prepared } from './prepare.js';
import { TenantBudgetGuard } from './tenant-budget.js';

/**
 * Why an active attempt was stopped from outside: the user's cancel, the
 * worker's shutdown, or the worker's lock on the run lost (another worker may
 * own it now).
 */
export type StopReason = 'cancel' | 'shutdown' | 'lost';

/** An attempt running in this process: how to stop it, and why it was. */
export interface ActiveAttempt {
  controller: AbortController;
  reason?: StopReason;
  /** When the run's lock was last known renewed (epoch ms). */
  renewedAt: number;
}

/** A control signal raised inside the checkpoint hook to stop the attempt at a checkpoint. */
class StopAtCheckpoint extends TetherError {
  constructor() {
    super('ERR_WORKER_SHUTDOWN', 'The worker is shutting down; the attempt stops at this checkpoint.');
  }
}

export interface RunHooks {
  /** The attempt, registered with the worker's active runs while it runs. */
  active: ActiveAttempt;
  /** Stops this attempt (its lock is lost: another worker owns the run). */
  stop(reason: StopReason): void;
  /** True once the worker is shutting down: the attempt stops at its next checkpoint. */
  shuttingDown(): boolean;
}

/**
 * Run: the tools and the model provider are set up and the attempt loop runs,
 * saving its checkpoint (with the events emitted since the last write) while
 * the worker still owns the run. Returns how it ended and the events not yet
 * written, for the step that settles it.
 */
export async function runPrepared(
  ctx: AttemptContext,
  prepared: Prepared,
  hooks: RunHooks,
): Promise<{ settlement: Settlement; events: RunEventInput[]; turn: string[] }> {
  const { log } = ctx;
  const sink = eventSink(ctx, hooks);
  const budget = ctx.budgets ? new TenantBudgetGuard(ctx, prepared, sink, ctx.budgets) : undefined;
  // What the preparation found (a session's history windowed) goes out with the attempt's first write.
  for (const event of prepared.events) sink.emit(event);
  let outcome: AttemptOutcome;
  let tools: Tool[] = [];
  let mcp: McpToolset | undefined;
  try {
    const context = runContext(ctx, prepared, sink, hooks.active.controller.signal);
    tools = createTools(context, prepared.toolNames);
    // A run with `output` ends through submit_result, whose parameters are its schema.
    if (prepared.spec.output) tools.push(createSubmitResultTool(prepared.spec.output.schema));
    // The run's MCP servers, listed now; their tools are offered beside the others.
    mcp = await openMcpToolset(ctx, prepared.tenant, prepared.spec, {
      context,
      taken: [...tools.map((tool) => tool.name), ...(prepared.spec.tools ?? []).map((tool) => tool.name)],
    });
    if (mcp) tools = [...tools, ...mcp.tools];
    outcome = await runAttempt(attemptParams(ctx, prepared, { tools, sink, hooks, budget }));
  } catch (error) {
    // Errors before the loop (a bad model spec, a tool context refused) are the run's, not the worker's.
    outcome = {
      status: 'failed',
      error:
        error instanceof TetherError
          ? error
          : new TetherError('ERR_WORKER_ATTEMPT_SETUP', `The attempt could not start: ${String(error)}`),
    };
  }
  // What the tools hold between calls (bash's sandbox prepared for a next command, the MCP servers'
  // connections and stdio servers) is released.
  for (const closed of await Promise.allSettled([...tools.map((tool) => tool.close?.()), mcp?.close()])) {
    if (closed.status === 'rejected')
      log.warn({ err: closed.reason }, 'a tool could not release what it held');
  }
  // The turns' usage is in the ledger (and their warnings among the events) before the run ends.
  await budget?.settled();
  // Events not yet written go out with the step that ends the attempt.
  const events = await sink.take().catch((error: unknown) => {
    log.warn({ err: error }, 'events of this attempt could not all be written');
    return [];
  });
  return { ...attemptEnd(ctx, prepared, outcome, hooks.active.reason), events };
}

/** The attempt's events, written with its saves; fenced out, what runs here stops now. */
function eventSink(ctx: AttemptContext, hooks: RunHooks): EventSink {
  return new EventSink({
    store: ctx.store,
    runId: ctx.runId,
    token: ctx.fence,
    onError: (error) => {
      ctx.log.warn({ err: error }, 'could not append an event');
      // Fenced out: another worker owns the run; what runs here must stop now.
      if (error instanceof TetherError && error.code === 'ERR_RUN_NOT_OWNER') hooks.stop('lost');
    },
  });
}

/** What the run's tools work with: its workspace, its sandbox and limits, its memory and skills. */
function runContext(
  ctx: AttemptContext,
  prepared: Prepared,
  sink: EventSink,
  signal: AbortSignal,
): RunContext {
  const { config, runId, log } = ctx;
  const { checkpoint } = prepared;
  return {
    runId,
    workspace: prepared.workspace,
    emit: sink.emit,
    signal,
    todos: {
      get: () => checkpoint.todos,
      set: (items) => {
        checkpoint.todos = items;
      },
    },
    sandbox: config.sandbox,
    allowNetwork: config.allowNetwork,
    workspaceRoot: config.workspaceRoot,
    sandboxUser: config.sandboxUser,
    commandLeaseMs: commandLeaseMs(config.lockDurationMs),
    limits: {
      bashMaxProcesses: config.sandboxMaxProcesses,
      bashMemoryBytes: config.sandboxMemoryBytes,
    },
    locale: prepared.locale,
    logger: log,
    memory: memoryAccess(ctx, prepared),
    // The tenant's skills: the store for the skill tools, their folder read-only for bash.
    ...(prepared.skills && ctx.skills
      ? {
          skills: skillsAccess(ctx.skills.store, prepared.tenant, prepared.skills.mountPath),
          readOnlyBinds: prepared.skills.binds,
          env: { TETHER_SKILLS_DIR: prepared.skills.mountPath },
        }
      : {}),
  };
}

/** The attempt loop's parameters: the model, the tools, and a checkpoint saved while the worker owns the run. */
function attemptParams(
  ctx: AttemptContext,
  prepared: Prepared,
  parts: { tools: Tool[]; sink: EventSink; hooks: RunHooks; budget: TenantBudgetGuard | undefined },
): AttemptParams {
  const { config, store, runId, fence, log } = ctx;
  const { spec, checkpoint } = prepared;
  const { tools, sink, hooks, budget } = parts;
  const { active } = hooks;
  // How many messages wait in the run's inbox, and how many the next save takes out of it.
  const inbox = { waiting: prepared.inbox, taken: 0 };
  const resolved = resolveProvider(spec.model, {
    profiles: config.profiles,
    defaultProfile: config.defaultProfile,
    allowReplay: config.allowReplay,
    logger: log,
  });
  return {
    checkpoint,
    provider: ctx.observer ? ctx.observer.observe(resolved) : resolved,
    context: {
      compaction: spec.compaction !== false,
      window: resolved.contextWindow,
      compactAt: resolved.compactAt,
      archive: archiveIn(prepared.workspace, config.sandboxUser),
    },
    tools,
    signal: active.controller.signal,
    // Each turn's usage goes to the tenant's ledger too.
    emit: budget
      ? (event) => {
          sink.emit(event);
          budget.observe(event);
        }
      : sink.emit,
    saveCheckpoint: async (cp) => {
      if (active.reason === 'lost') throw new StopAtCheckpoint();
      const events = await sink.take();
      const progress = { todos: cp.todos, usage: cp.usage, step: cp.step, model: cp.model };
      // A session's run saves its turn so far with it: whoever ends the run moves it into the transcript.
      const turn = prepared.sessionId ? sessionTurn(runId, cp) : [];
      const checkpoint = storedCheckpoint(cp);
      inbox.waiting = await store.saveCheckpoint(
        runId,
        fence,
        checkpoint,
        progress,
        events,
        turn,
        inbox.taken,
      );
      inbox.taken = 0;
      if (hooks.shuttingDown()) throw new StopAtCheckpoint();
    },
    // Messages sent to the run, read only when the claim or the last save said some wait.
    messages: {
      take: async () => {
        if (inbox.waiting === 0) return [];
        const taken = await store.takeMessages(runId);
        inbox.taken = taken.length;
        return taken;
      },
    },
    limits: {
      maxSteps: spec.limits?.maxSteps ?? config.maxSteps,
      wallClockMs: spec.limits?.wallClockMs ?? config.wallClockMs,
      maxTotalTokens: spec.limits?.maxTotalTokens,
      maxCostUsd: spec.limits?.maxCostUsd,
    },
    interaction: spec.clarify?.mode ?? 'suspend',
    clarifyTimeoutMs: spec.clarify?.timeoutMs ?? config.clarifyTimeoutMs,
    crew: prepared.crew,
    clientTools: spec.tools,
    toolTimeoutMs: spec.toolTimeoutMs,
    approval: spec.approval ? compileApprovalPolicy(spec.approval) : undefined,
    output: spec.output
      ? { maxAttempts: spec.output.maxAttempts ?? OUTPUT_LIMITS.maxAttemptsDefault }
      : undefined,
    resolutions: prepared.resolutions,
    locale: prepared.locale,
    // Stopped by this host (shutdown, lost lock): the call in flight is run again by the next owner.
    interrupted: () => active.reason === 'shutdown' || active.reason === 'lost',
    onToolCall: ctx.observer?.onToolCall,
    // A tenant over one of its budgets: the run stops before its next model turn.
    beforeTurn: budget?.beforeTurn,
  };
}

/**
 * Where compaction saves a tool result before it prunes it: `.tether/context/<call id>.txt` in the
 * run's workspace, which `read_file` reads back.
 */
function archiveIn(workspace: string, sandboxUser: WorkerConfig['sandboxUser']) {
  return async (callId: string, content: string): Promise<string> => {
    const owner = sandboxUserFor(sandboxUser);
    const files = new Workspace(workspace, owner ? { owner } : {});
    const path = `.tether/context/${callId.replace(/[^A-Za-z0-9_-]/g, '_')}.txt`;
    await files.writeFileAtomic(await files.resolve(path), Buffer.from(content, 'utf8'));
    return path;
  };
}

/** How the attempt ended, as a settlement, with a session run's whole turn when the run ends here. */
function attemptEnd(
  ctx: AttemptContext,
  prepared: Prepared,
  outcome: AttemptOutcome,
  stopped: StopReason | undefined,
): { settlement: Settlement; turn: string[] } {
  const { spec, checkpoint } = prepared;
  const plan = (delegation: PendingDelegation) =>
    planChildren(
      ctx,
      { tenant: prepared.tenant, spec, sessionId: prepared.sessionId },
      delegation,
      ctx.crew.queueOf,
    );
  const settlement = toSettlement(outcome, checkpoint, stopped, plan);
  // A session's run that ends here hands its whole turn to the step that ends it.
  const ends =
    settlement.kind === 'completed' || settlement.kind === 'failed' || settlement.kind === 'cancelled';
  const turn =
    prepared.sessionId && ends
      ? sessionTurn(ctx.runId, checkpoint, {
          interrupted: settlement.kind === 'cancelled',
          output: settlement.kind === 'completed' ? settlement.output : undefined,
        })
      : [];
  return { settlement, turn };
}

/**
 * A session run's turn as transcript entries (JSON each): its own messages,
 * every tool call paired with a result. When the run's output is not its last
 * assistant message (clarify's `return` mode ends a run with the question),
 * the output is added as the assistant's last word, so the next message of
 * the session reads as its answer.
 */
export function sessionTurn(
  runId: string,
  checkpoint: Checkpoint,
  end: { interrupted?: boolean; output?: string | undefined } = {},
): string[] {
  const at = new Date().toISOString();
  const entries = turnEntries(ownMessages(checkpoint), { runId, at, interrupted: end.interrupted ?? false });
  const last = entries.at(-1);
  if (
    end.output !== undefined &&
    !(last?.role === 'assistant' && last.content === end.output && !last.toolCalls)
  ) {
    entries.push({ role: 'assistant', content: end.output, runId, at, tokens: countTokens(end.output) });
  }
  return entries.map((entry) => JSON.stringify(entry));
}

/** What an attempt's outcome means for the run, given why (if at all) the worker stopped it. */
export function toSettlement(
  outcome: AttemptOutcome,
  checkpoint: Checkpoint,
  stopped: StopReason | undefined,
  plan: (delegation: PendingDelegation) => NewRun[] = () => [],
): Settlement {
  switch (outcome.status) {
    case 'completed':
      return {
        kind: 'completed',
        output: outcome.output,
        checkpoint,
        escalated: outcome.escalated,
        result: outcome.result,
      };
    case 'delegating':
      return {
        kind: 'waiting',
        on: 'children',
        open: { delegation: outcome.delegation, children: plan(outcome.delegation) },
      };
    case 'suspended': {
      const { requestId, question, choices, expiresAt } = outcome.clarify;
      return { kind: 'waiting', on: 'question', open: { requestId, question, choices, expiresAt } };
    }
    case 'tool_calls':
      return { kind: 'waiting', on: 'tool_output', open: outcome.calls };
    case 'approvals':
      return { kind: 'waiting', on: 'approval', open: outcome.approvals };
    case 'cancelled':
      return stoppedBy(stopped ?? 'cancel');
    case 'failed': {
      const error = outcome.error;
      if (error instanceof StopAtCheckpoint) return stoppedBy(stopped === 'lost' ? 'lost' : 'shutdown');
      if (error.code === 'ERR_RUN_CANCEL_REQUESTED') return { kind: 'cancelled' };
      if (error.code === 'ERR_RUN_NOT_OWNER')
        return { kind: 'lost', why: 'another worker owns the run now', handBack: true };
      return {
        kind: 'failed',
        error: toErrorBody(error),
        retryable: error.retryable,
        usage: checkpoint.usage,
        model: checkpoint.model,
        cause: error,
      };
    }
  }
}

function stoppedBy(reason: StopReason): Settlement {
  if (reason === 'lost') return { kind: 'lost', why: 'its lock was not renewed in time', handBack: true };
  if (reason === 'shutdown') return { kind: 'released', why: 'shutdown' };
  return { kind: 'cancelled' };
}

/**
 * How long a command may go without the worker's heartbeat before its
 * watchdog kills it: a quarter of the lock, so that a frozen worker's commands
 * are dead before its lock expires and another worker can take the run over
 * (at least 500 ms, for very short test locks).
 */
export function commandLeaseMs(lockDurationMs: number): number {
  return Math.max(500, Math.floor(lockDurationMs / 4));
}
