import {
  type ErrorBody,
  type PendingClarify,
  type PendingToolCall,
  type RunEventInput,
  TetherError,
} from '@tether/protocol';
import { DelayedError, type Job, WaitingError } from 'bullmq';
import { promoteJob, RetryLater, type RunJobData } from './jobs.js';
import type { NewRun } from './records.js';
import type { RunStore } from './run-store.js';
import type { NewDelegation } from './waitpoint-store.js';

/**
 * The run engine's steps for an attempt. Each is one transition of the lifecycle taken whole: the
 * script that changes the run (the events not yet written going first), then the job's move in
 * BullMQ, then, for a wait, the look that closes the wake race (what the job waits for may have come
 * while it was being moved, when nothing could wake it). The worker's settlement maps each way an
 * attempt ends onto one of them (apps/worker/src/attempt/settle.ts); the API's steps are
 * `RunService`'s (an answer, an output, a cancel).
 *
 * A step that ends the attempt's hold on the job throws what tells BullMQ so: `DelayedError` (a wait),
 * `WaitingError` (handed back), `RetryLater` (a retry).
 */

/** The attempt a step is taken for. */
export interface EngineAttempt {
  runId: string;
  job: Job<RunJobData>;
  /** BullMQ's lock token of the job (moving the job needs it). */
  token: string | undefined;
  /** The attempt's fencing token: the run's owner while it runs. */
  fence: string;
  /** A crew child's parent, reported to in the step that ends the child. */
  parentRunId?: string | undefined;
}

/**
 * Told once a step is recorded in the run, before its job moves (`parent`: the crew parent's log
 * changed too): the run's webhook deliveries. A worker that dies in between leaves the job to come
 * back, and the next attempt does it.
 */
export type Recorded = (why: string, parent?: boolean) => Promise<void>;

/** How a run ends: `RunStore.finalize`'s end. */
export type RunEnd = Parameters<RunStore['finalize']>[1];

/** A new waitpoint, by kind: a question, a model turn's client tool calls, or children created for a delegation. */
export type WaitOpen =
  | { on: 'question'; pending: PendingClarify }
  | { on: 'tool_output'; calls: readonly PendingToolCall[] }
  | {
      on: 'children';
      delegation: NewDelegation;
      children: readonly NewRun[];
      requestId?: string | undefined;
    };

/**
 * Why the run refused to wait (nothing recorded, the job not moved): another worker owns it (or it
 * is not running), a cancel was asked for (or it has ended), or the children would pass the run's
 * life limit; with the store's error.
 */
export interface WaitRefusal {
  refused: 'not_owner' | 'cancel' | 'max_children';
  error: TetherError;
}

/** A parent wakes this long after its children's deadline, to end the ones still out as timed out. */
export const CHILDREN_GRACE_MS = 1_000;

export class RunEngine {
  readonly store: RunStore;
  readonly #queueChildren: (children: readonly NewRun[], requestId?: string | undefined) => Promise<void>;

  constructor(options: {
    store: RunStore;
    /** Queues the jobs of children recorded in their parent's waitpoint (`RunService.queueChildren`). */
    queueChildren: (children: readonly NewRun[], requestId?: string | undefined) => Promise<void>;
  }) {
    this.store = options.store;
    this.#queueChildren = options.queueChildren;
  }

  /**
   * Ends the run (completed, failed or cancelled) with its events and a session run's turn, once,
   * a crew child reporting to its parent in the same step; `token` '' ends it whoever owns it (a
   * cancel). False when it had ended, or is another worker's. The job then completes: the attempt
   * returns.
   */
  end(
    a: EngineAttempt,
    end: RunEnd,
    events: readonly RunEventInput[],
    turn: readonly string[],
    token = a.fence,
  ): Promise<boolean> {
    return this.store.finalize(a.runId, end, token, events, turn, a.parentRunId);
  }

  /** A failure retried: `run.retrying` with the delay, which BullMQ's backoff takes from the error it is thrown with. */
  async retry(
    a: EngineAttempt,
    next: { attempt: number; delayMs: number; error: ErrorBody; cause?: Error | undefined },
    events: readonly RunEventInput[],
    recorded: Recorded,
  ): Promise<never> {
    await this.store.appendEvents(a.runId, events, a.fence);
    await this.store.markRetrying(a.runId, a.fence, next.attempt, next.delayMs, next.error);
    await recorded('retrying');
    throw new RetryLater(`${next.error.code}: ${next.error.message}`, next.delayMs, { cause: next.cause });
  }

  /**
   * The run waits on a new waitpoint, holding no slot: its requests recorded with their events (a
   * delegation's children created first, queued after), then the job delayed until the deadline.
   * Refused (nothing recorded, the job not moved), it says why.
   */
  async wait(
    a: EngineAttempt,
    open: WaitOpen,
    events: readonly RunEventInput[],
    recorded: Recorded,
  ): Promise<WaitRefusal> {
    const { store } = this;
    const { runId, fence } = a;
    let untilMs: number;
    try {
      switch (open.on) {
        case 'question':
          await store.suspend(runId, fence, open.pending, events);
          untilMs = Date.parse(open.pending.expiresAt);
          break;
        case 'tool_output':
          await store.requestToolCalls(runId, fence, open.calls, events);
          untilMs = Math.min(...open.calls.map((call) => Date.parse(call.expiresAt)));
          break;
        case 'children':
          await store.createMany(open.children);
          await store.delegate(runId, fence, open.delegation, events);
          await this.#queueChildren(open.children, open.requestId);
          untilMs = open.delegation.deadlineMs + CHILDREN_GRACE_MS;
          break;
      }
    } catch (error) {
      const refusal = waitRefusal(error);
      if (refusal) return refusal;
      throw error;
    }
    await recorded(
      open.on === 'question' ? 'suspended' : open.on === 'tool_output' ? 'tool_calls' : 'delegating',
    );
    return this.delay(a, untilMs, () => this.#resolved(runId));
  }

  /** The run goes back to waiting on its waitpoint (woken before it resolved), until the deadline. */
  async waitAgain(
    a: EngineAttempt,
    status: 'waiting_for_input' | 'waiting_for_children',
    untilMs: number,
  ): Promise<never> {
    await this.store.setStatus(a.runId, a.fence, status);
    const grace = status === 'waiting_for_children' ? CHILDREN_GRACE_MS : 0;
    return this.delay(a, untilMs + grace, () => this.#resolved(a.runId));
  }

  /**
   * Delays the job until `untilMs`, then looks whether what it waits for came while it was being
   * delayed (a wake sent then could not move it) and wakes it if so: the one way a run waits.
   */
  async delay(a: EngineAttempt, untilMs: number, woken: () => Promise<boolean>): Promise<never> {
    await a.job.moveToDelayed(untilMs, a.token);
    if (await woken()) await promoteJob(a.job);
    throw new DelayedError();
  }

  /** At shutdown: the run queued again, its job back to waiting for another worker, which continues from the checkpoint. */
  async release(a: EngineAttempt, events: readonly RunEventInput[], recorded: Recorded): Promise<never> {
    await this.store.appendEvents(a.runId, events, a.fence);
    await this.store.setStatus(a.runId, a.fence, 'queued');
    await recorded('released');
    await a.job.moveToWait(a.token);
    throw new WaitingError();
  }

  /**
   * Hands the job back to waiting, for the next attempt to take the run over, while its lock is still
   * this attempt's (a renewal late on a busy host, or another worker that claimed the run after its
   * own lock ran out): completing it would strand the run, running with no job. False when the lock
   * is gone (the move checks it): whoever holds the job carries on.
   */
  async handBack(a: EngineAttempt): Promise<false> {
    try {
      await a.job.moveToWait(a.token);
    } catch {
      return false;
    }
    throw new WaitingError();
  }

  /** Whether what the waiting run waits for has come: every request resolved, or a cancel asked for. */
  async #resolved(runId: string): Promise<boolean> {
    return (await this.store.wakeReason(runId)) !== undefined;
  }
}

const REFUSALS: Record<string, WaitRefusal['refused']> = {
  ERR_RUN_NOT_OWNER: 'not_owner',
  ERR_RUN_CANCEL_REQUESTED: 'cancel',
  ERR_CREW_MAX_CHILDREN: 'max_children',
};

function waitRefusal(error: unknown): WaitRefusal | undefined {
  const refused = error instanceof TetherError ? REFUSALS[error.code] : undefined;
  return refused && error instanceof TetherError ? { refused, error } : undefined;
}
