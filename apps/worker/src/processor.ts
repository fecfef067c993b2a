import { join } from 'node:path';
import {
  type AttemptOutcome,
  buildSystemPrompt,
  type Checkpoint,
  type ClarifyResolution,
  initialCheckpoint,
  parseCheckpoint,
  resolveProvider,
  runAttempt,
  unansweredToolCalls,
} from '@tether/agent';
import { type CreateRunBody, type ErrorBody, TetherError, toErrorBody } from '@tether/protocol';
import { QueueError, type RunJobData, type RunStore } from '@tether/queue';
import {
  BUILTIN_TOOL_NAMES,
  createTools,
  getAllToolNames,
  isToolError,
  killRunLeftovers,
  sandboxUserFor,
  TOOLSET_DEFAULTS,
  Workspace,
} from '@tether/tools';
import { DelayedError, type Job, WaitingError } from 'bullmq';
import type { Logger } from 'pino';
import type { WorkerConfig } from './config.js';
import { EventSink } from './event-sink.js';

/**
 * Why an active attempt was stopped from outside: the user's cancel, the
 * worker's shutdown, or the worker's lock on the run lost (another worker may
 * own it now).
 */
export type StopReason = 'cancel' | 'shutdown' | 'lost';

/** The attempts this worker process is running, by run id. */
export interface ActiveRuns {
  /** Stops a run's attempt now (cancel broadcast, the end of the shutdown grace, a lost lock). */
  stop(runId: string, reason: StopReason): void;
}

export interface ProcessorDeps {
  config: Readonly<WorkerConfig>;
  store: RunStore;
  logger: Logger;
  /** True once the worker is shutting down: attempts stop at their next checkpoint. */
  shuttingDown: () => boolean;
}

/** An attempt running in this process. */
interface ActiveEntry {
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

/**
 * The job processor: job → attempt → outcome → queue operation. The BullMQ job
 * holds only the run id; the run's record, checkpoint and events are in its
 * own keys. Mapping of outcomes:
 * - completed / failed (not retryable, or out of attempts): the run ends;
 * - failed (retryable): `run.retrying`, then the error goes to BullMQ, which
 *   retries with exponential backoff from the checkpoint;
 * - suspended: question stored and `clarify.requested` appended (one step),
 *   job moved to delayed until the deadline, `DelayedError` (no attempt used);
 * - cancelled by request: the run ends cancelled; stopped for shutdown: the
 *   job goes back to waiting for another worker (`WaitingError`).
 */
export function createProcessor(deps: ProcessorDeps) {
  const { config, store, logger } = deps;
  const active = new Map<string, ActiveEntry>();

  const activeRuns: ActiveRuns & {
    size: () => number;
    stopAll: (reason: StopReason) => void;
    locksRenewed: (runIds: readonly string[]) => void;
    stopStale: (now: number, maxAgeMs: number) => void;
  } = {
    stop(runId, reason) {
      const entry = active.get(runId);
      if (!entry || entry.controller.signal.aborted) return;
      entry.reason = reason;
      entry.controller.abort(new Error(reason));
    },
    size: () => active.size,
    stopAll(reason) {
      for (const runId of active.keys()) activeRuns.stop(runId, reason);
    },
    locksRenewed(runIds) {
      const now = Date.now();
      for (const runId of runIds) {
        const entry = active.get(runId);
        if (entry) entry.renewedAt = now;
      }
    },
    stopStale(now, maxAgeMs) {
      for (const [runId, entry] of active) {
        if (now - entry.renewedAt > maxAgeMs) {
          logger.warn(
            { runId, sinceMs: now - entry.renewedAt },
            'the lock on the run was not renewed in time',
          );
          activeRuns.stop(runId, 'lost');
        }
      }
    },
  };

  async function process(job: Job<RunJobData>, token?: string): Promise<string | undefined> {
    const runId = job.data.runId;
    const attempt = job.attemptsMade + 1;
    const fence = `${config.workerId}:${token ?? job.id}`;
    const log = logger.child({ runId, attempt });
    const claim = await store.claim(runId, fence, attempt, config.workerId);
    if (claim.status === 'cancel') {
      await store.finalize(runId, { status: 'cancelled', reason: 'cancelled by request' });
      return undefined;
    }
    if (claim.status !== 'ok') {
      log.info({ claim: claim.status }, 'run is gone or has ended; nothing to do');
      return undefined;
    }
    const spec = claim.spec;
    if (!spec) {
      await store.finalize(runId, {
        status: 'failed',
        error: { code: 'ERR_WORKER_SPEC_MISSING', message: 'The run record has no spec to run.' },
      });
      return undefined;
    }

    // The workspace is made when something needs it: the submitted files here, or the
    // tools on first use. A run that never touches files costs no directory.
    const workspace = join(config.workspaceRoot, runId);
    const sandboxUser = sandboxUserFor(config.sandboxUser);
    if (spec.files) {
      const problem = await writeSubmittedFiles(
        new Workspace(workspace, sandboxUser ? { owner: sandboxUser } : {}),
        spec.files,
      );
      if (problem) {
        await store.finalize(runId, { status: 'failed', error: problem }, fence);
        return undefined;
      }
      await store.dropFiles(runId, spec);
    }

    const locale = spec.locale ?? 'en';
    const toolNames = toolNamesFor(spec);
    const checkpoint: Checkpoint = claim.checkpoint
      ? parseCheckpoint(claim.checkpoint)
      : initialCheckpoint({
          systemPrompt: buildSystemPrompt({ toolNames, locale, workspace }),
          input: spec.input,
        });

    let resume: ClarifyResolution | undefined;
    if (checkpoint.pendingClarify) {
      const requestId = checkpoint.pendingClarify.requestId;
      const state = await store.resolveClarify(runId, requestId, fence);
      if (state.state === 'not_owner') return undefined;
      if (state.state === 'pending') {
        // Woken before an answer or the deadline: back to sleep until the deadline.
        await store.setStatus(runId, fence, 'waiting_for_input');
        await job.moveToDelayed(state.expiresAtMs, token);
        throw new DelayedError();
      }
      resume =
        state.state === 'answered'
          ? { requestId, answer: state.answer }
          : { requestId, timedOut: true as const };
    }

    // A call in flight when the previous owner died or lost the run: on this host, whatever is left
    // of it is killed first, so the call never has two live executions. (On another host, its
    // watchdog or its lost lock has killed it before this worker could take the run over.)
    if (claim.checkpoint && unansweredToolCalls(checkpoint).length > 0) {
      const left = await killRunLeftovers(runId);
      if (left.cgroups + left.processes > 0) log.warn(left, "killed what an earlier owner's commands left");
    }

    const controller = new AbortController();
    // The lock was taken (or renewed) when BullMQ handed the job over, a moment ago.
    const entry: ActiveEntry = { controller, renewedAt: Date.now() };
    active.set(runId, entry);
    const sink = new EventSink({
      store,
      runId,
      token: fence,
      onError: (error) => {
        log.warn({ err: error }, 'could not append an event');
        // Fenced out: another worker owns the run; what runs here must stop now.
        if (error instanceof TetherError && error.code === 'ERR_RUN_NOT_OWNER')
          activeRuns.stop(runId, 'lost');
      },
    });
    let outcome: AttemptOutcome;
    try {
      const tools = createTools(
        {
          runId,
          workspace,
          emit: sink.emit,
          signal: controller.signal,
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
          locale,
          logger: log,
        },
        toolNames,
      );
      const provider = resolveProvider(spec.model, {
        profiles: config.profiles,
        defaultProfile: config.defaultProfile,
        allowReplay: config.allowReplay,
        logger: log,
      });
      outcome = await runAttempt({
        checkpoint,
        provider,
        tools,
        signal: controller.signal,
        emit: sink.emit,
        saveCheckpoint: async (cp) => {
          if (entry.reason === 'lost') throw new StopAtCheckpoint();
          const events = await sink.take();
          const progress = { todos: cp.todos, usage: cp.usage, step: cp.step };
          await store.saveCheckpoint(runId, fence, JSON.stringify(cp), progress, events);
          if (deps.shuttingDown()) throw new StopAtCheckpoint();
        },
        limits: {
          maxSteps: spec.limits?.maxSteps ?? config.maxSteps,
          wallClockMs: config.wallClockMs,
        },
        interaction: spec.clarify?.mode ?? 'suspend',
        clarifyTimeoutMs: spec.clarify?.timeoutMs ?? config.clarifyTimeoutMs,
        resume,
        locale,
        // Stopped by this host (shutdown, lost lock): the call in flight is run again by the next owner.
        interrupted: () => entry.reason === 'shutdown' || entry.reason === 'lost',
      });
    } catch (error) {
      // Errors before the loop (a bad model spec, a tool context refused) are the run's, not the worker's.
      outcome = {
        status: 'failed',
        error: error instanceof TetherError ? error : new QueueError('ERR_QUEUE_CONFIG', String(error)),
      };
    } finally {
      active.delete(runId);
    }
    // Events not yet written go out with the step that ends the attempt.
    const events = await sink.take().catch((error: unknown) => {
      log.warn({ err: error }, 'events of this attempt could not all be written');
      return [];
    });

    switch (outcome.status) {
      case 'completed': {
        const ended = await store.finalize(
          runId,
          {
            status: 'completed',
            output: outcome.output,
            usage: checkpoint.usage,
            // The final turn was not saved on its own: it is stored with the end.
            checkpoint: { json: JSON.stringify(checkpoint), todos: checkpoint.todos, step: checkpoint.step },
          },
          fence,
          events,
        );
        if (!ended) {
          log.warn('the run had ended, or another worker owns it: this answer was not recorded');
          return undefined;
        }
        log.info({ steps: checkpoint.step }, 'run completed');
        return outcome.output;
      }
      case 'suspended': {
        const { requestId, question, choices, expiresAt } = outcome.clarify;
        await store.suspend(runId, fence, { requestId, question, choices, expiresAt }, events);
        await job.moveToDelayed(Date.parse(expiresAt), token);
        // An answer or a cancel that arrived before the job was delayed could not wake it: do it now
        // (a cancelled run then ends at its claim, instead of at the question's deadline).
        if ((await store.wakeReason(runId, requestId)) !== undefined) await promote(job);
        log.info({ requestId, expiresAt }, 'run suspended on a clarify question');
        throw new DelayedError();
      }
      case 'cancelled':
        return stopped(entry.reason ?? 'cancel');
      case 'failed': {
        const error = outcome.error;
        if (error instanceof StopAtCheckpoint) return stopped(entry.reason === 'lost' ? 'lost' : 'shutdown');
        if (error.code === 'ERR_RUN_CANCEL_REQUESTED') return stopped('cancel');
        if (error.code === 'ERR_RUN_NOT_OWNER') {
          log.warn('another worker owns this run now; this attempt stops without acting again');
          return undefined;
        }
        const body: ErrorBody = toErrorBody(error);
        const attemptsAllowed = job.opts.attempts ?? 1;
        if (error.retryable && attempt < attemptsAllowed) {
          const delayMs = (job.opts.backoff as { delay?: number } | undefined)?.delay ?? 0;
          await store.appendEvents(runId, events, fence);
          await store.markRetrying(runId, fence, attempt + 1, delayMs * 2 ** (attempt - 1), body);
          log.warn({ err: body }, 'attempt failed; it will be retried');
          throw error;
        }
        await store.finalize(
          runId,
          { status: 'failed', error: body, usage: checkpoint.usage },
          fence,
          events,
        );
        log.warn({ err: body }, 'run failed');
        return undefined;
      }
    }

    async function stopped(reason: StopReason): Promise<undefined> {
      if (reason === 'lost') {
        log.warn('this worker lost its lock on the run; it stopped without writing anything more');
        return undefined;
      }
      if (reason === 'cancel') {
        await store.finalize(runId, { status: 'cancelled', reason: 'cancelled by request' }, '', events);
        log.info('run cancelled');
        return undefined;
      }
      // Shutdown: hand the run back to the queue; another worker continues from the checkpoint.
      await store.appendEvents(runId, events, fence);
      await store.setStatus(runId, fence, 'queued');
      await job.moveToWait(token);
      log.info('run released for another worker (shutdown)');
      throw new WaitingError();
    }
  }

  return { process, activeRuns };
}

async function promote(job: Job<RunJobData>): Promise<void> {
  try {
    await job.promote();
  } catch {
    // Already promoted by the answer itself.
  }
}

/** The tool names of a run: its toolsets (default: base, planning, interaction), built-in tools only. */
export function toolNamesFor(spec: CreateRunBody): string[] {
  const builtins: readonly string[] = BUILTIN_TOOL_NAMES;
  return getAllToolNames(spec.toolsets ?? [...TOOLSET_DEFAULTS]).filter((name) => builtins.includes(name));
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

/**
 * Writes the submitted files into the workspace, with the confinement of the
 * file tools; returns the run's error, or undefined.
 */
export async function writeSubmittedFiles(
  workspace: Workspace,
  files: Record<string, string>,
): Promise<ErrorBody | undefined> {
  for (const [path, content] of Object.entries(files)) {
    let target: Awaited<ReturnType<Workspace['resolve']>>;
    try {
      target = await workspace.resolve(path);
    } catch (error) {
      const why = isToolError(error) ? ` ${error.message}` : '';
      return {
        code: 'ERR_WORKER_FILES',
        message: `The submitted file path ${JSON.stringify(path)} is not a relative path inside the workspace.${why}`,
      };
    }
    try {
      await workspace.writeFileAtomic(target, Buffer.from(content, 'utf8'));
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return {
        code: 'ERR_WORKER_FILE_WRITE',
        message: `The submitted file ${JSON.stringify(path)} could not be written: ${why}`,
      };
    }
  }
  return undefined;
}
