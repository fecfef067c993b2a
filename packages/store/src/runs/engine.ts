import {
  type ApprovalDecision,
  type ErrorBody,
  newId,
  type PendingApproval,
  type PendingClarify,
  type PendingToolCall,
  type RunEventInput,
  type RunStatus,
  TERMINAL_STATUSES,
  TetherError,
} from '@tether/protocol';
import { DelayedError, type Job, WaitingError } from 'bullmq';
import { forgetTenantSlot } from '../tenant-slots/commands/scripts.js';
import { promoteJob, RetryLater, type RunJobData } from './jobs.js';
import type { NewRun, RunRecord } from './records.js';
import type { DueResult, RescheduleResult, RunStore } from './run-store.js';
import type { AnswerResult, DecisionResult, NewDelegation, ToolOutputResult } from './waitpoint-store.js';

/**
 * The run engine's steps for an attempt. Each is one transition of the lifecycle taken whole: the
 * script that changes the run (the events not yet written going first), then the job's move in
 * BullMQ, then, for a wait, the look that closes the wake race (what the job waits for may have come
 * while it was being moved, when nothing could wake it). The worker's settlement maps each way an
 * attempt ends onto one of them (apps/worker/src/attempt/settle.ts). The steps taken outside an
 * attempt are the engine's too: an answer or a client tool call's output (the request resolved, then
 * the run's job promoted when it was the last), a cancel (the run ended here when no attempt holds
 * it, then its slot, its session's next run and its children), a crew child timed out or repaired.
 * `RunService` (the API's) and the worker's crew call them.
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
  /** A crew child's tree's root, told of the child's decisions on tool calls too. */
  rootRunId?: string | undefined;
}

/**
 * Told once a step is recorded in the run, before its job moves (`parent`: the crew parent's log
 * changed too): the run's webhook deliveries. A worker that dies in between leaves the job to come
 * back, and the next attempt does it.
 */
export type Recorded = (why: string, parent?: boolean) => Promise<void>;

/** How a run ends: `RunStore.finalize`'s end. */
export type RunEnd = Parameters<RunStore['finalize']>[1];

/** What each new waitpoint's step is, for the deliveries recorded with it. */
const WAITING_WHY = {
  question: 'suspended',
  tool_output: 'tool_calls',
  approval: 'approvals',
  children: 'delegating',
} as const satisfies Record<WaitOpen['on'], string>;

/**
 * A new waitpoint, by kind: a question, a model turn's client tool calls, its calls that wait for
 * a decision, or children created for a delegation.
 */
export type WaitOpen =
  | { on: 'question'; pending: PendingClarify }
  | { on: 'tool_output'; calls: readonly PendingToolCall[] }
  | { on: 'approval'; approvals: readonly PendingApproval[] }
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

/** What the engine needs of the runs' BullMQ jobs outside an attempt (`RunService` has it). */
export interface RunJobs {
  /** The BullMQ job of a run, in the queue its record names (read when `record` is not given); undefined once gone. */
  getJob(runId: string, record?: RunRecord): Promise<Job<RunJobData> | undefined>;
  /**
   * Queues the jobs of children recorded in their parent's waitpoint (those still queued); their
   * jobs carry `requestId`, the id of the request that submitted the crew's root.
   */
  queueChildren(children: readonly NewRun[], options?: { requestId?: string | undefined }): Promise<void>;
}

/**
 * The webhook deliveries of the events a step appends (the webhooks' `WebhookDispatcher` has them):
 * a port, so the runs need not know the webhooks.
 */
export interface RunDeliveries {
  /** Records the deliveries of the run's events not dispatched yet. */
  dispatch(runId: string, tenant?: string): Promise<number>;
  /** Takes `step`, which appends events to `runIds`, with their deliveries: marked first, dispatched after. */
  around<T>(
    runIds: readonly (string | undefined)[],
    step: () => Promise<T>,
    tenant: string | undefined,
    onError: (error: unknown) => void,
  ): Promise<T>;
}

export interface RunEngineOptions {
  store: RunStore;
  jobs: RunJobs;
  /** Webhook deliveries of the events the steps outside an attempt append; none without it. */
  webhooks?: RunDeliveries | undefined;
  /** Told of a dispatch that failed (the sweep or the run's next claim dispatches it later). */
  onWebhookError?: ((error: unknown, runId: string) => void) | undefined;
}

/** A parent wakes this long after its children's deadline, to end the ones still out as timed out. */
export const CHILDREN_GRACE_MS = 1_000;

export class RunEngine {
  readonly store: RunStore;
  readonly #jobs: RunJobs;
  readonly #webhooks: RunDeliveries | undefined;
  readonly #onWebhookError: (error: unknown, runId: string) => void;

  constructor(options: RunEngineOptions) {
    this.store = options.store;
    this.#jobs = options.jobs;
    this.#webhooks = options.webhooks;
    this.#onWebhookError = options.onWebhookError ?? (() => {});
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
   * Refused (nothing recorded, the job not moved), it says why; a delegation's children created
   * for it end cancelled, unless another worker owns the run.
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
        case 'approval':
          await store.requestApprovals(runId, fence, open.approvals, events, a.rootRunId);
          untilMs = Math.min(...open.approvals.map((approval) => Date.parse(approval.expiresAt)));
          break;
        case 'children':
          await store.createMany(open.children);
          await store.delegate(runId, fence, open.delegation, events);
          await this.#jobs.queueChildren(open.children, { requestId: open.requestId });
          untilMs = open.delegation.deadlineMs + CHILDREN_GRACE_MS;
          break;
      }
    } catch (error) {
      const refusal = waitRefusal(error);
      if (!refusal) throw error;
      // Children created for a delegation the run could not record would never run: they end here.
      // (Another worker owns the run: it takes the step again with the same ids, and the children.)
      if (open.on === 'children' && refusal.refused !== 'not_owner') await this.#undelegated(open.children);
      return refusal;
    }
    await recorded(WAITING_WHY[open.on]);
    return this.delay(a, untilMs, () => this.#resolved(runId));
  }

  /** Ends the children created for a delegation that was refused, each with its deliveries. */
  async #undelegated(children: readonly NewRun[]): Promise<void> {
    for (const child of children) {
      await this.store.finalize(child.id, {
        status: 'cancelled',
        reason: 'its parent run could not delegate',
      });
      await this.#webhooks
        ?.dispatch(child.id, child.tenant)
        .catch((error) => this.#onWebhookError(error, child.id));
    }
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

  /**
   * A scheduled run's job came up (before the tenant's slot and the claim): the run is queued
   * (`run.queued`) when its `runAt` has come, and the attempt goes on as any queued run's; `early`
   * says until when it waits still (its time was moved while the job was on its way): then
   * {@link waitForStart}. Any other status is left to the claim.
   */
  startOnTime(a: EngineAttempt): Promise<DueResult> {
    return this.store.due(a.runId);
  }

  /**
   * A scheduled run's job delayed until its `runAt`, then the look that closes the race with a
   * reschedule or a cancel made while it was being delayed (the API's `changeDelay` or removal could
   * not move a job a worker held): the job is woken then, and its next attempt looks again.
   */
  waitForStart(a: EngineAttempt, runAtMs: number): Promise<never> {
    return this.delay(a, runAtMs, async () => (await this.store.scheduledAt(a.runId)) !== runAtMs);
  }

  /**
   * The claim (or `start on time`) found the run never started and past its deadline: it ends
   * `expired` here (`run.expired`; the script checks the deadline again by Redis's clock), and the
   * job completes (the attempt returns). False when it had ended meanwhile (the sweep, a cancel).
   */
  expire(a: EngineAttempt, expiresAtMs: number): Promise<boolean> {
    return this.store.finalize(a.runId, { status: 'expired', expiresAtMs }, '');
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

  // Steps outside an attempt.

  /**
   * Answers the question a run waits on: the first answer resolves it and wakes the run (its job
   * promoted), then the endpoints are told (`clarify.answered`). `run`, its record when read
   * already; `tokenHash`, a webhook's answer token's SHA-256 instead of a tenant's say (the
   * script checks it before anything is read).
   */
  async answer(
    runId: string,
    requestId: string,
    answer: string,
    from: { run?: RunRecord; tokenHash?: string },
  ): Promise<AnswerResult> {
    const result = await this.store.answer(runId, requestId, answer, from.tokenHash);
    if (result !== 'ok') return result;
    const run = from.run ?? (await this.store.getRecord(runId));
    if (!run) return result;
    await promoteJob(await this.#jobs.getJob(run.id, run));
    // Should this fail, the run's next claim dispatches it.
    await this.#webhooks?.dispatch(run.id, run.tenant).catch((error) => this.#onWebhookError(error, run.id));
    return result;
  }

  /** Posts the output of a client tool call the run waits on: the first wins; the last of the turn's wakes the run. */
  async postToolOutput(
    run: RunRecord,
    requestId: string,
    output: string,
    isError: boolean,
  ): Promise<ToolOutputResult> {
    const result = await this.store.postToolOutput(run.id, requestId, output, isError);
    if (result === 'last') await promoteJob(await this.#jobs.getJob(run.id, run));
    return result;
  }

  /**
   * A decision on a call the run waits on: the first wins; the last of the turn's wakes the run,
   * then the endpoints are told (`approval.resolved`). `run`, its record when read already;
   * `tokenHash`, a webhook's answer token's SHA-256 instead of a tenant's say (the script checks
   * it before anything is read).
   */
  async decide(
    runId: string,
    requestId: string,
    decision: ApprovalDecision,
    from: { run?: RunRecord; tokenHash?: string },
  ): Promise<DecisionResult> {
    // A crew child's decision is told on its tree's root too, in the same step.
    const root = from.run ? from.run.rootRunId : await this.store.rootOf(runId);
    const result = await this.store.decide(runId, requestId, decision, from.tokenHash, root);
    if (result !== 'ok' && result !== 'last') return result;
    const run = from.run ?? (await this.store.getRecord(runId));
    if (!run) return result;
    if (result === 'last') await promoteJob(await this.#jobs.getJob(run.id, run));
    await this.#webhooks?.dispatch(run.id, run.tenant).catch((error) => this.#onWebhookError(error, run.id));
    return result;
  }

  /**
   * A message for a live run: kept in its inbox with `message.received`, taken at its next turn
   * boundary (a waiting run takes it when it next wakes: nothing here wakes it). The message's id.
   */
  async steer(runId: string, content: string): Promise<string> {
    const messageId = newId('msg');
    await this.store.steer(runId, { messageId, content });
    return messageId;
  }

  /**
   * Gives a scheduled run a new start time: recorded first (`run.scheduled`, refused unless the run
   * is still scheduled with no cancel asked for), then its delayed job's delay changed to it. A job
   * not delayed (a worker took it just now, at the old time) is left alone: its `startOnTime` reads
   * the new time and delays it again, and a worker that was delaying it looks once more after
   * (`waitForStart`). So the run never starts at the old time, and only one job ever runs it.
   */
  async reschedule(run: RunRecord, runAtMs: number): Promise<RescheduleResult> {
    const result = await this.store.reschedule(run.id, runAtMs);
    if (result !== 'ok') return result;
    const job = await this.#jobs.getJob(run.id, run);
    try {
      await job?.changeDelay(Math.max(0, runAtMs - Date.now()));
    } catch {
      // Not delayed: a worker holds it, and its look at the record's time decides (see above).
    }
    return result;
  }

  /** Moves a waiting run's job from delayed to waiting; a job in any other state is left alone. */
  async promote(runId: string): Promise<void> {
    await promoteJob(await this.#jobs.getJob(runId));
  }

  /**
   * Cancels (or interrupts) a run: the cancel asked for, then a run that no attempt holds ends here
   * (see `#endCancelled`); a running one is stopped by its worker, which hears the broadcast. The
   * status the run had before ('missing' when it is gone); an ended run is left as it was.
   */
  async cancel(run: RunRecord, mode: 'cancel' | 'interrupt'): Promise<RunStatus | 'missing'> {
    const before = await this.store.requestCancel(run.id, mode);
    if (before === 'missing' || before === 'running' || TERMINAL_STATUSES.includes(before)) return before;
    await this.#endCancelled(
      run,
      mode === 'interrupt' ? 'interrupted by a new message' : 'cancelled by request',
    );
    return before;
  }

  /**
   * Ends here a run whose cancel was asked for and that no attempt holds: its job off the queue,
   * `run.cancelled`, then what follows an end: its tenant's line and slot, its session's next run,
   * its crew children (those it has created, delegated or not, and theirs). The run is among the
   * cancels in flight from before its job goes until all that is done, so a process that dies in
   * between leaves it to a worker (`recoverCancels`), not stranded live with no job. False when a
   * worker took the job meanwhile: its attempt sees the cancel flag and ends the run itself.
   */
  async #endCancelled(run: RunRecord, reason: string): Promise<boolean> {
    const inFlight = this.store.keys.cancelsInFlight;
    await this.store.redis.zadd(inFlight, 'NX', Date.now(), run.id);
    const job = await this.#jobs.getJob(run.id, run);
    try {
      await job?.remove();
    } catch {
      // Locked: a worker took it just now; it sees the cancel flag and ends the run itself.
      await this.store.redis.zrem(inFlight, run.id);
      return false;
    }
    await this.#withDeliveries([run.id, run.parentRunId], run.tenant, () =>
      this.store.finalize(run.id, { status: 'cancelled', reason }, '', [], [], run.parentRunId),
    );
    await this.#forgetTenantSlot(run.tenant, run.id);
    if (run.sessionId) await this.promoteSessionHead(run.sessionId);
    await this.cancelChildren(run.id);
    await this.store.redis.zrem(inFlight, run.id);
    return true;
  }

  /**
   * Finishes the cancels that a process began outside an attempt and did not finish (it died in
   * between: see `#endCancelled`), those in flight for more than `olderThanMs`, up to `limit` of
   * them; each step is done again, and a step done already changes nothing. The ids finished.
   * Workers call it on a timer.
   */
  async recoverCancels(olderThanMs: number, limit = 100): Promise<string[]> {
    const inFlight = this.store.keys.cancelsInFlight;
    const ids = await this.store.redis.zrangebyscore(
      inFlight,
      '-inf',
      Date.now() - olderThanMs,
      'LIMIT',
      0,
      limit,
    );
    for (const runId of ids) {
      const run = await this.store.get(runId);
      if (run) await this.#endCancelled(run, await this.#cancelReason(run));
      else await this.store.redis.zrem(inFlight, runId);
    }
    return ids;
  }

  /**
   * The expiry sweep: ends `expired` each run of the deployment's set of deadlines whose deadline
   * has passed (up to `limit`, oldest first) and that never started, then does what follows a
   * queued run's end (its job removed, its tenant's line left, its session's next run woken). The
   * set is in its own hash slot: each run is read and ended by its own scripts, and it leaves the set
   * only once all that is done (or it started, ended otherwise or is gone), so a sweep that dies
   * midway is finished by the next, and a second sweep changes nothing. A worker holding the run's
   * job then finds it ended at its claim. The runs it ended.
   */
  async expireDue(limit = 100): Promise<string[]> {
    const key = this.store.keys.runExpiries;
    const ids = await this.store.redis.zrangebyscore(key, '-inf', Date.now(), 'LIMIT', 0, limit);
    const expired: string[] = [];
    for (const runId of ids) {
      let run = await this.store.get(runId);
      if (run && unstarted(run) && run.expiresAt) {
        const expiresAtMs = Date.parse(run.expiresAt);
        const ended = await this.#withDeliveries([run.id], run.tenant, () =>
          this.store.finalize(runId, { status: 'expired', expiresAtMs }),
        );
        if (ended) expired.push(runId);
        else run = await this.store.get(runId);
        // Still before its deadline by Redis's clock (behind this process's): the next sweep.
        if (!ended && run && unstarted(run)) continue;
      }
      if (run && (expired.includes(runId) || run.status === 'expired')) await this.#afterExpiry(run);
      await this.store.redis.zrem(key, runId);
    }
    return expired;
  }

  /** What follows the end of a run that never started: its job off the queue, its tenant's line, its session's next run. */
  async #afterExpiry(run: RunRecord): Promise<void> {
    const job = await this.#jobs.getJob(run.id, run);
    // Locked: a worker took it just now, and finds the run ended at its claim.
    await job?.remove().catch(() => undefined);
    await this.#forgetTenantSlot(run.tenant, run.id);
    if (run.sessionId) await this.promoteSessionHead(run.sessionId);
  }

  /** Why a run left among the cancels in flight was cancelled, as the process that died would have said. */
  async #cancelReason(run: RunRecord): Promise<string> {
    if ((await this.store.cancelMode(run.id)) === 'interrupt') return 'interrupted by a new message';
    const parent = run.parentRunId ? await this.store.get(run.parentRunId) : undefined;
    return parent && TERMINAL_STATUSES.includes(parent.status)
      ? 'its parent run ended'
      : 'cancelled by request';
  }

  /**
   * Makes sure an ended crew child's result reached its parent (the step that
   * ended it reports it, unless it did not know the parent), and wakes a
   * parent that has every result (the process that ended its last child may
   * have died before it could).
   */
  async repairChild(childRunId: string, parentRunId: string): Promise<void> {
    if (await this.store.reportEnded(childRunId)) return; // Reported now, and the parent woken.
    const [parent, delegation] = await Promise.all([
      this.store.get(parentRunId),
      this.store.delegation(parentRunId),
    ]);
    if (parent?.status === 'waiting_for_children' && delegation && delegation.pending <= 0) {
      await this.promote(parentRunId);
    }
  }

  /**
   * Ends a crew child that ran past its deadline, from its parent's side: it
   * fails with `ERR_CREW_CHILD_TIMEOUT` (its parent gets it as `timed_out`),
   * its worker, if one runs it, is told to stop, and its own children are
   * cancelled.
   */
  async timeOutChild(childRunId: string, parentRunId: string, timeoutMs: number): Promise<void> {
    const before = await this.store.requestCancel(childRunId);
    if (before === 'missing' || TERMINAL_STATUSES.includes(before)) return;
    const job = await this.#jobs.getJob(childRunId);
    await job?.remove().catch(() => undefined); // Locked: its worker stops at the broadcast.
    const error = {
      code: 'ERR_CREW_CHILD_TIMEOUT',
      message: `The child run did not end within ${Math.round(timeoutMs / 1000)} s of its creation (TETHER_CREW_CHILD_TIMEOUT_MS).`,
    };
    await this.#withDeliveries([childRunId, parentRunId], undefined, () =>
      this.store.finalize(childRunId, { status: 'failed', error }, '', [], [], parentRunId),
    );
    // Timed out in its tenant's line, or before taking up a slot handed to it: give both back.
    const tenant = await this.store.redis.hget(this.store.keys.run(childRunId).record, 'tenant');
    if (tenant) await this.#forgetTenantSlot(tenant, childRunId);
    await this.cancelChildren(childRunId);
  }

  /**
   * Cancels the live crew children of a run that has ended (and their
   * children): a queued or waiting child ends here, a running one is stopped
   * by its worker. (A child whose cancel is lost here still ends at its next
   * claim, which checks that its parent waits for it.)
   */
  async cancelChildren(runId: string): Promise<void> {
    const ids = await this.store.childIds(runId);
    // One read of every child first: a parent that ends normally has none live, and costs no more.
    const children = await this.store.getMany(ids);
    for (const [i, child] of children.entries()) {
      if (!child) continue;
      const childId = ids[i] as string;
      const live = !TERMINAL_STATUSES.includes(child.status);
      // Ended here, its children went with it; one its worker ends has its children cancelled now.
      // A child that ended by itself had delegated whatever it created (or cancelled it then).
      const endedHere = live && (await this.#cancelChild(child));
      if (!endedHere && (live || child.childCount)) await this.cancelChildren(childId);
    }
  }

  /** Ends a live child of an ended parent here, or leaves it to the worker running it (false). */
  async #cancelChild(child: RunRecord): Promise<boolean> {
    const before = await this.store.requestCancel(child.id);
    if (before === 'missing' || TERMINAL_STATUSES.includes(before) || before === 'running') return false;
    return this.#endCancelled(child, 'its parent run ended');
  }

  /**
   * A run cancelled (or a crew child timed out) here, with no attempt, leaves its tenant's line for a slot (when the tenant
   * has a cap, `TETHER_TENANT_MAX_RUNNING`) and gives back a slot handed to it and not taken up,
   * which would otherwise stay reserved for it until its reserve ran out. The runs waiting take it
   * when they look again. Best effort: the reserve runs out by itself.
   */
  async #forgetTenantSlot(tenant: string, runId: string): Promise<void> {
    try {
      await forgetTenantSlot.run(this.store.redis, {
        keys: this.store.keys.tenantSlots(tenant),
        args: { runId },
      });
    } catch {
      // The reservation lapses after its reserve, and the line's entry goes at the next hand-over.
    }
  }

  /**
   * A step that appends events to `runIds` outside a worker's attempt, with their webhook
   * deliveries: the runs are marked first and dispatched after (`RunDeliveries.around`).
   */
  #withDeliveries<T>(
    runIds: readonly (string | undefined)[],
    tenant: string | undefined,
    step: () => Promise<T>,
  ): Promise<T> {
    if (!this.#webhooks) return step();
    return this.#webhooks.around(runIds, step, tenant, (error) =>
      this.#onWebhookError(error, runIds[0] ?? ''),
    );
  }

  /**
   * Wakes the run at the head of a session's queue, parked while a run ahead
   * of it was live: called by whoever ends a session's run. (Should that
   * process die first, the parked run's own delay wakes it.)
   */
  async promoteSessionHead(sessionId: string): Promise<void> {
    const head = await this.store.redis.lindex(this.store.keys.session(sessionId).queue, 0);
    const run = head ? await this.store.get(head) : undefined;
    // Only a queued run waits for its turn; one waiting on a question waits for the answer.
    if (run?.status === 'queued') await promoteJob(await this.#jobs.getJob(run.id, run));
  }

  /**
   * Ends a run whose job could not be queued: failed with `ERR_QUEUE_ENQUEUE`, so a job that did
   * get in finds it ended and does nothing. False when it had ended.
   */
  failUnqueued(run: { id: string; tenant: string }, cause: unknown): Promise<boolean> {
    return this.#withDeliveries([run.id], run.tenant, () =>
      this.store.finalize(run.id, {
        status: 'failed',
        error: { code: 'ERR_QUEUE_ENQUEUE', message: `The run could not be queued: ${String(cause)}` },
      }),
    );
  }

  /**
   * Ends a run whose job BullMQ gave up on (out of attempts, or stalled too often: its workers died):
   * failed with `ERR_WORKER_GAVE_UP`, as no job will come back for it, and its session's next run
   * woken. False when it had ended.
   */
  async giveUp(runId: string, reason: string): Promise<boolean> {
    const ended = await this.#withDeliveries([runId], undefined, () =>
      this.store.finalize(runId, {
        status: 'failed',
        error: { code: 'ERR_WORKER_GAVE_UP', message: `The run could not be completed: ${reason}` },
      }),
    );
    const sessionId = ended ? (await this.store.get(runId))?.sessionId : undefined;
    if (sessionId) await this.promoteSessionHead(sessionId);
    return ended;
  }

  /** Whether what the waiting run waits for has come: every request resolved, or a cancel asked for. */
  async #resolved(runId: string): Promise<boolean> {
    return (await this.store.wakeReason(runId)) !== undefined;
  }
}

/** A run that has not started (and so may still expire). */
function unstarted(run: RunRecord): boolean {
  return !run.startedAt && (run.status === 'queued' || run.status === 'scheduled');
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
