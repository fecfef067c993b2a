import { mkdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import {
  type AttemptOutcome,
  buildSystemPrompt,
  type Checkpoint,
  type ClarifyResolution,
  initialCheckpoint,
  parseCheckpoint,
  resolveProvider,
  runAttempt,
} from '@tether/agent';
import { type CreateRunBody, type ErrorBody, TetherError, toErrorBody } from '@tether/protocol';
import { QueueError, type RunJobData, type RunStore } from '@tether/queue';
import { BUILTIN_TOOL_NAMES, createTools, getAllToolNames, TOOLSET_DEFAULTS } from '@tether/tools';
import { DelayedError, type Job, WaitingError } from 'bullmq';
import type { Logger } from 'pino';
import type { WorkerConfig } from './config.js';
import { EventSink } from './event-sink.js';

/** Why an active attempt was stopped from outside. */
export type StopReason = 'cancel' | 'shutdown';

/** The attempts this worker process is running, by run id. */
export interface ActiveRuns {
  /** Stops a run's attempt now (cancel broadcast, or the end of the shutdown grace). */
  stop(runId: string, reason: StopReason): void;
}

export interface ProcessorDeps {
  config: Readonly<WorkerConfig>;
  store: RunStore;
  logger: Logger;
  /** True once the worker is shutting down: attempts stop at their next checkpoint. */
  shuttingDown: () => boolean;
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
  const active = new Map<string, { controller: AbortController; reason?: StopReason }>();

  const activeRuns: ActiveRuns & { size: () => number; stopAll: (reason: StopReason) => void } = {
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
    if (spec.files) {
      mkdirSync(workspace, { recursive: true });
      const problem = await writeFiles(workspace, spec.files);
      if (problem) {
        await store.finalize(
          runId,
          { status: 'failed', error: { code: 'ERR_WORKER_FILES', message: problem } },
          fence,
        );
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

    const controller = new AbortController();
    const entry: { controller: AbortController; reason?: StopReason } = { controller };
    active.set(runId, entry);
    const sink = new EventSink({
      store,
      runId,
      token: fence,
      onError: (error) => log.warn({ err: error }, 'could not append an event'),
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
        attempt,
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
        // An answer that arrived before the job was delayed could not promote it: do it now.
        if (await store.isAnswered(runId, requestId)) await promote(job);
        log.info({ requestId, expiresAt }, 'run suspended on a clarify question');
        throw new DelayedError();
      }
      case 'cancelled':
        return stopped(entry.reason ?? 'cancel');
      case 'failed': {
        const error = outcome.error;
        if (error instanceof StopAtCheckpoint) return stopped('shutdown');
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

/** Writes the submitted files into a fresh workspace; returns a problem, or undefined. */
async function writeFiles(workspace: string, files: Record<string, string>): Promise<string | undefined> {
  const root = resolve(workspace);
  for (const [path, content] of Object.entries(files)) {
    const target = resolve(root, path);
    const inside = relative(root, target);
    if (
      path.includes('\0') ||
      isAbsolute(path) ||
      inside === '' ||
      inside.startsWith('..') ||
      isAbsolute(inside)
    ) {
      return `The submitted file path ${JSON.stringify(path)} is not a relative path inside the workspace.`;
    }
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content, { flag: 'w' });
  }
  return undefined;
}
