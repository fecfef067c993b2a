import type {
  ApprovalDecision,
  ErrorBody,
  PendingApproval,
  PendingClarify,
  PendingToolCall,
  RunEvent,
  RunEventInput,
  RunEventType,
  RunModel,
  RunStatus,
  TodoItem,
  Usage,
} from '@tether/protocol';
import { runSessionTag, runTreeTag, STEER_LIMITS, TERMINAL_STATUSES } from '@tether/protocol';
import { QueueError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import type { TetherKeys } from '../redis/keys.js';
import { luaJson } from '../redis/lua-script.js';
import type { StoreContext } from '../redis/store-context.js';
import * as scripts from './commands/scripts.js';
import * as crew from './crew-store.js';
import * as eventLog from './event-log.js';
import { eventArgs, eventPairs } from './event-log.js';
import type { NewRun, RunRecord, RunSpec, StoredBody } from './records.js';
import * as records from './records.js';
import * as removal from './run-removal.js';
import { SharedPrompts } from './shared-prompts.js';
import { migrateWaitpoints } from './waitpoint-migration.js';
import type { AnswerResult, DecisionResult, ToolOutputResult, WaitpointState } from './waitpoint-store.js';
import * as waitpoints from './waitpoint-store.js';

export type {
  AnswerResult,
  DecisionResult,
  Delegation,
  NewDelegation,
  NewWaitpoint,
  RequestKind,
  RequestOutcome,
  ResolveResult,
  ToolCallOutcome,
  ToolOutputResult,
  Waitpoint,
  WaitpointState,
} from './waitpoint-store.js';

/** How long a session's keys stay after its last activity: 30 days. */
export const DEFAULT_SESSION_TTL_S = 30 * 24 * 3600;
export type { ChildLink, CrewSpec, NewRun, RunRecord, RunSpec, StoredBody } from './records.js';

export interface RunStoreOptions {
  redis: RedisClient;
  keys: TetherKeys;
  /** Events kept per run (approximate, `XADD MAXLEN ~`). Default 10,000. */
  eventMaxLength?: number;
  /** How long an ended run's keys stay, in seconds. Default 7 days. */
  retentionSeconds?: number;
  /** How long a session's keys stay after its last activity, in seconds (`TETHER_SESSION_TTL_S`). Default 30 days. */
  sessionTtlSeconds?: number;
  /**
   * Told of each run this store ended (`finalize` ended it: once per run, in
   * the process that ended it), for metrics. Must not throw.
   */
  onEnded?: ((run: EndedRun) => void) | undefined;
}

/** A run that `finalize` just ended. */
export interface EndedRun {
  runId: string;
  tenant: string;
  status: 'completed' | 'failed' | 'cancelled' | 'expired';
}

/**
 * The run record, checkpoint, event log and clarify requests in Redis. Every
 * change that must happen together (a status and its event, an answer and its
 * event) is one Lua script on the run's own keys. The records, the event log
 * and the clarify requests are read and written by modules of their own
 * (records.ts, event-log.ts, clarify-store.ts); this class is their one door.
 */
export class RunStore implements StoreContext {
  readonly redis: RedisClient;
  readonly keys: TetherKeys;
  readonly eventMaxLength: number;
  readonly retentionSeconds: number;
  readonly sessionTtlSeconds: number;
  readonly #onEnded: ((run: EndedRun) => void) | undefined;
  /** The parts of system prompts that runs share, which their checkpoints name (see `SharedPrompts`). */
  readonly sharedPrompts: SharedPrompts;

  constructor(options: RunStoreOptions) {
    this.#onEnded = options.onEnded;
    this.sharedPrompts = new SharedPrompts({ redis: options.redis, keys: options.keys });
    this.redis = options.redis;
    this.keys = options.keys;
    this.eventMaxLength = positive('eventMaxLength', options.eventMaxLength ?? 10_000);
    this.retentionSeconds = positive('retentionSeconds', options.retentionSeconds ?? 7 * 24 * 3600);
    this.sessionTtlSeconds = positive(
      'sessionTtlSeconds',
      options.sessionTtlSeconds ?? DEFAULT_SESSION_TTL_S,
    );
  }

  /** Creates the record and appends `run.queued`; false when the id exists. */
  async create(run: NewRun): Promise<boolean> {
    const [result] = await this.createMany([run]);
    if (result instanceof Error) throw result;
    return result as boolean;
  }

  /** See {@link records.createRuns}. */
  createMany(runs: readonly NewRun[]): Promise<(boolean | 'no_session' | 'busy' | Error)[]> {
    return records.createRuns(this, runs);
  }

  /**
   * The record alone, in one round trip: no spec, no pending requests, no children (what a step
   * that only checks the run's tenant and status needs).
   */
  async getRecord(runId: string): Promise<RunRecord | undefined> {
    const [record] = await records.readRecords(this, [runId], false, false);
    return record;
  }

  /**
   * A crew child's tree's root, from its record; undefined for any other run (a top-level run, whose
   * id says so, costs no round trip).
   */
  async rootOf(runId: string): Promise<string | undefined> {
    if (runTreeTag(runId) === undefined && runSessionTag(runId) === undefined) return undefined;
    return (await this.redis.hget(this.keys.run(runId).record, 'root')) ?? undefined;
  }

  /** The run with its spec (the submitted body, while the run is live). */
  async get(runId: string): Promise<RunRecord | undefined> {
    const [record] = await records.readRecords(this, [runId], true);
    // A crew parent lists its children with their status.
    if (record?.childCount) record.children = await crew.readChildren(this, runId);
    return record;
  }

  /**
   * The BullMQ prefix of the queue the run's job is in (its record's, or the
   * default prefix for a record of an earlier version); undefined once the run
   * is gone. One read of two fields, for the steps that only need to find the job.
   */
  async queueOf(runId: string): Promise<string | undefined> {
    const [id, queue] = await this.redis.hmget(this.keys.run(runId).record, 'id', 'queue');
    if (!id) return undefined;
    return queue ?? this.keys.queuePrefix;
  }

  /**
   * What was asked for the run: `cancel` (its attempt stops at once: the broadcast, or the worker's
   * look at each lock renewal), `interrupt` (its attempt stops at its next save), or nothing.
   */
  async cancelMode(runId: string): Promise<'cancel' | 'interrupt' | undefined> {
    const flag = await this.redis.hget(this.keys.run(runId).record, 'cancelRequested');
    if (flag === null) return undefined;
    return flag === 'interrupt' ? 'interrupt' : 'cancel';
  }

  /**
   * Whether a cancel (or an interrupt) was asked for the run: the flag is never taken back, and
   * the run's next claim ends it (`claimRun` answers `cancel`). False once the run is gone.
   */
  async cancelRequested(runId: string): Promise<boolean> {
    return (await this.redis.hexists(this.keys.run(runId).record, 'cancelRequested')) === 1;
  }

  /**
   * Whether the run's next claim ends it rather than starting an attempt: the run is gone, has
   * ended, or a cancel (or an interrupt) was asked for. Such a run needs no tenant slot.
   */
  async claimEnds(runId: string): Promise<boolean> {
    const [status, cancel] = await this.redis.hmget(this.keys.run(runId).record, 'status', 'cancelRequested');
    return status === null || cancel !== null || TERMINAL_STATUSES.includes(status as RunStatus);
  }

  /** Several records at once, in order (undefined where a run is gone), without their specs. */
  getMany(runIds: string[]): Promise<(RunRecord | undefined)[]> {
    return records.readRecords(this, runIds, false);
  }

  /** Moves the submitted files out of the stored spec once the worker has written them (see {@link records.dropFiles}). */
  dropFiles(runId: string, spec: StoredBody): Promise<void> {
    return records.dropFiles(this, runId, spec);
  }

  /** The submitted files the worker moved out of the spec, if kept (see {@link records.keptFiles}). */
  keptFiles(runId: string): Promise<Record<string, string> | undefined> {
    return records.keptFiles(this, runId);
  }

  /** A tenant's runs, newest first, `limit` at a time after `cursor` (a run id), by status and metadata (see {@link records.listRuns}). */
  list(
    tenant: string,
    options: records.ListOptions,
  ): Promise<{ runs: RunRecord[]; nextCursor: string | null }> {
    return records.listRuns(this, tenant, options);
  }

  loadCheckpoint(runId: string): Promise<string | undefined> {
    return records.loadCheckpoint(this, runId);
  }

  /** Appends an event unless the run has ended (or, with `token`, another worker owns it). */
  append(runId: string, event: RunEventInput, token = ''): Promise<boolean> {
    return eventLog.appendEvents(this, runId, [event], token);
  }

  /** Appends events in order, in one step, unless the run has ended (or, with `token`, another worker owns it). */
  appendEvents(runId: string, events: readonly RunEventInput[], token = ''): Promise<boolean> {
    return eventLog.appendEvents(this, runId, events, token);
  }

  /** Events after `afterId` (exclusive; '0' for all), oldest first. */
  readEvents(runId: string, afterId = '0', count = 1_000): Promise<RunEvent[]> {
    return eventLog.readEvents(this, runId, afterId, count);
  }

  /** Records a clarify question and appends `events` then `clarify.requested`; throws as `openWaitpoint` does. */
  suspend(
    runId: string,
    token: string,
    pending: PendingClarify,
    events: readonly RunEventInput[] = [],
  ): Promise<'recorded' | 'again'> {
    return waitpoints.suspend(this, runId, token, pending, events);
  }

  /** The first answer wins; see {@link waitpoints.answer} for `tokenHash`. */
  answer(runId: string, requestId: string, answer: string, tokenHash = ''): Promise<AnswerResult> {
    return waitpoints.answer(this, runId, requestId, answer, tokenHash);
  }

  /** See {@link waitpoints.requestToolCalls}. */
  requestToolCalls(
    runId: string,
    token: string,
    calls: readonly PendingToolCall[],
    events: readonly RunEventInput[] = [],
  ): Promise<'recorded' | 'again'> {
    return waitpoints.requestToolCalls(this, runId, token, calls, events);
  }

  /** The first output wins; the last one queues a run asleep on them. */
  postToolOutput(
    runId: string,
    requestId: string,
    output: string,
    isError: boolean,
  ): Promise<ToolOutputResult> {
    return waitpoints.postToolOutput(this, runId, requestId, output, isError);
  }

  /** See {@link waitpoints.requestApprovals}. */
  requestApprovals(
    runId: string,
    token: string,
    approvals: readonly PendingApproval[],
    events: readonly RunEventInput[] = [],
    root?: string,
  ): Promise<'recorded' | 'again'> {
    return waitpoints.requestApprovals(this, runId, token, approvals, events, root);
  }

  /** The first decision wins; the last one queues a run asleep on them (see {@link waitpoints.decide}). */
  decide(
    runId: string,
    requestId: string,
    decision: ApprovalDecision,
    tokenHash = '',
    root?: string,
  ): Promise<DecisionResult> {
    return waitpoints.decide(this, runId, requestId, decision, tokenHash, root);
  }

  /** See {@link waitpoints.expireWaitpoint}. */
  expireWaitpoint(
    runId: string,
    id: string,
    requestIds: readonly string[],
    token: string,
    root?: string,
  ): Promise<WaitpointState> {
    return waitpoints.expireWaitpoint(this, runId, id, requestIds, token, root);
  }

  /** See {@link waitpoints.wakeReason}. */
  wakeReason(runId: string): Promise<'resolved' | 'cancel' | undefined> {
    return waitpoints.wakeReason(this, runId);
  }

  /** See {@link migrateWaitpoints}: the waits of the release before the waitpoint, moved once per deployment. */
  migrateWaitpoints(): Promise<number> {
    return migrateWaitpoints(this);
  }

  /** The waitpoint the run waits on, if any. */
  waitpoint(runId: string): Promise<waitpoints.Waitpoint | undefined> {
    return waitpoints.readWaitpoint(this, runId);
  }

  /**
   * A worker takes the run for an attempt (see the `claimRun` script: it
   * appends `attempt.started`) and gets what the attempt needs in the same
   * step: the spec and the checkpoint.
   */
  async claim(
    runId: string,
    token: string,
    attempt: number,
    workerId: string,
    parentRunId = '',
  ): Promise<ClaimResult> {
    const keys = this.keys.run(runId);
    const reply = await scripts.claimRun.run(this.redis, {
      keys: {
        ...keys,
        sessionQueue: keys.session.queue,
        parentRecord: parentRunId ? this.keys.run(parentRunId).record : keys.unused,
      },
      args: {
        ...eventArgs(this, keys, runId),
        token,
        attempt,
        workerId,
        parentId: parentRunId,
      },
    });
    if (reply[0] === 'wait') return { status: 'wait', ahead: reply[1] };
    if (reply[0] === 'early') return { status: 'early', runAtMs: Number(reply[1]) };
    if (reply[0] === 'expire') return { status: 'expire', expiresAtMs: Number(reply[1]) };
    if (reply[0] !== 'ok') return { status: reply[0] };
    const [, spec, checkpoint, session, tenant, inbox] = reply;
    return {
      status: 'ok',
      tenant,
      spec: spec ? (JSON.parse(spec) as RunSpec) : undefined,
      checkpoint: checkpoint || undefined,
      sessionId: session || undefined,
      inbox: Number(inbox ?? 0),
    };
  }

  /**
   * Saves the checkpoint (appending `events`, emitted since the last write,
   * first) and the progress the record shows (todos, usage, step) while
   * `token` still owns the run. Throws
   * `ERR_RUN_NOT_OWNER` when another worker took it over, and
   * `ERR_RUN_CANCEL_REQUESTED` when a cancel was asked for. A session's run
   * passes its whole `turn` so far (transcript entries, JSON each), which
   * replaces the stored one: whoever ends the run moves it into the session.
   * `taken`: how many of the run's messages, the oldest, the checkpoint put
   * in its transcript (they leave the inbox in the same step). Answers how
   * many messages wait to be taken after it.
   */
  async saveCheckpoint(
    runId: string,
    token: string,
    json: string,
    progress: { todos: TodoItem[]; usage: Usage; step: number; model?: RunModel | undefined },
    events: readonly RunEventInput[] = [],
    turn: readonly string[] = [],
    taken = 0,
  ): Promise<number> {
    const keys = this.keys.run(runId);
    const result = await scripts.saveCheckpoint.run(this.redis, {
      keys,
      args: {
        token,
        checkpoint: json,
        todos: JSON.stringify(progress.todos),
        usage: JSON.stringify(progress.usage),
        ...eventArgs(this, keys, runId),
        step: progress.step,
        profile: progress.model?.profile ?? '',
        model: progress.model?.name ?? '',
        taken,
        turnCount: turn.length,
        rest: [...turn, ...eventPairs(events)],
      },
    });
    if (result === 0) {
      throw new QueueError(
        'ERR_RUN_NOT_OWNER',
        `Run ${runId} is owned by another worker now: this attempt stops.`,
      );
    }
    if (result === -1) {
      throw new QueueError(
        'ERR_RUN_CANCEL_REQUESTED',
        `Run ${runId} was cancelled or has ended: this attempt stops.`,
      );
    }
    return result - 1;
  }

  /**
   * A message for a live run (`message.received`): kept until the run takes it at a turn boundary.
   * @throws QueueError `ERR_RUN_NOT_FOUND`, `ERR_RUN_ENDED`, `ERR_RUN_MESSAGES_LIMIT`
   */
  async steer(runId: string, message: { messageId: string; content: string }): Promise<void> {
    const keys = this.keys.run(runId);
    const reply = await scripts.steerRun.run(this.redis, {
      keys,
      args: {
        ...eventArgs(this, keys, runId),
        message: JSON.stringify(message),
        pendingMax: STEER_LIMITS.pendingMax,
      },
    });
    if (reply === 'missing') throw new QueueError('ERR_RUN_NOT_FOUND', `No run ${runId}.`);
    if (reply === 'ended') {
      throw new QueueError('ERR_RUN_ENDED', `Run ${runId} has ended; it takes no more messages.`);
    }
    if (reply === 'full') {
      throw new QueueError(
        'ERR_RUN_MESSAGES_LIMIT',
        `Run ${runId} holds ${STEER_LIMITS.pendingMax} messages it has not taken yet; send more once it has.`,
      );
    }
  }

  /**
   * The messages sent to the run that it has not taken yet, oldest first: the attempt puts them in
   * its transcript, and the save that stores it passes how many it took (`saveCheckpoint`'s
   * `taken`), which leave the inbox then.
   */
  async takeMessages(runId: string): Promise<{ messageId: string; content: string }[]> {
    const list = await this.redis.lrange(this.keys.run(runId).inbox, 0, -1);
    return list.map((entry) => JSON.parse(entry) as { messageId: string; content: string });
  }

  /** The run at the head of the queue of `runId`'s session: the one of its runs that may execute. */
  async sessionHead(runId: string): Promise<string | undefined> {
    return (await this.redis.lindex(this.keys.run(runId).session.queue, 0)) ?? undefined;
  }

  /**
   * Takes `aheadId`, a run that is gone or has ended, off the queue of
   * `runId`'s session (a repair: the step that ends a run does it itself).
   */
  async dropFromSessionQueue(runId: string, aheadId: string): Promise<void> {
    await this.redis.lrem(this.keys.run(runId).session.queue, 1, aheadId);
  }

  /** The session's transcript as stored (JSON entries), or its first `upTo` entries, for a run's history. */
  readTranscript(sessionId: string, upTo?: number): Promise<string[]> {
    if (upTo === 0) return Promise.resolve([]);
    return this.redis.lrange(this.keys.session(sessionId).transcript, 0, upTo === undefined ? -1 : upTo - 1);
  }

  /** The files to write into a session's workspace before its first run, if any are left. */
  async sessionFiles(sessionId: string): Promise<Record<string, string> | undefined> {
    const json = await this.redis.get(this.keys.session(sessionId).files);
    return json ? (JSON.parse(json) as Record<string, string>) : undefined;
  }

  /** Forgets a session's files once written. */
  async dropSessionFiles(sessionId: string): Promise<void> {
    await this.redis.del(this.keys.session(sessionId).files);
  }

  /** Sets a non-terminal status while `token` owns the run; false otherwise. */
  async setStatus(
    runId: string,
    token: string,
    status: 'queued' | 'running' | 'waiting_for_input' | 'waiting_for_children',
  ): Promise<boolean> {
    const keys = this.keys.run(runId);
    return (await scripts.setStatus.run(this.redis, { keys, args: { token, status } })) === 1;
  }

  /**
   * Ends the run once with its terminal event (the last event of the log),
   * after `events` (emitted since the last write).
   * With `token`, only while that worker owns the run. Returns false when the
   * run had already ended (or another worker owns it). A completed run's final
   * `checkpoint` (its last turn, never saved on its own) is stored in the same step.
   * A session's run moves its turn into the session's transcript in the same
   * step: `turn` (transcript entries, JSON each) when given, else the turn its
   * last checkpoint saved (or its input alone, if it never ran).
   * A crew child reports to its parent in the same step (`parentRunId` names
   * the parent when the caller knows it; otherwise it reports just after), and
   * the listeners of {@link onParentReady} hear of a parent whose last child
   * this was.
   */
  async finalize(
    runId: string,
    end:
      | {
          status: 'completed';
          output: string;
          usage?: Usage | undefined;
          model?: RunModel | undefined;
          checkpoint?: { json: string; todos: TodoItem[]; step: number } | undefined;
          /** A crew child that ended with `escalate`: its output is the reason. */
          escalated?: boolean | undefined;
          /** A run with `output`: its result (JSON-safe), kept on the record and in `run.completed`. */
          result?: unknown;
        }
      | { status: 'failed'; error: ErrorBody; usage?: Usage | undefined; model?: RunModel | undefined }
      | { status: 'cancelled'; reason?: string | undefined }
      /** Only a run that never started, past its deadline (`expiresAtMs`) by Redis's clock. */
      | { status: 'expired'; expiresAtMs: number },
    token = '',
    events: readonly RunEventInput[] = [],
    turn: readonly string[] = [],
    parentRunId = '',
  ): Promise<boolean> {
    const keys = this.keys.run(runId);
    const fields: string[] = [];
    let type: RunEventType;
    let data: unknown;
    if (end.status === 'completed') {
      type = 'run.completed';
      data = end.result === undefined ? { output: end.output } : { output: end.output, result: end.result };
      fields.push('output', end.output);
      if (end.result !== undefined) fields.push('result', JSON.stringify(end.result));
      if (end.escalated) fields.push('escalated', '1');
    } else if (end.status === 'failed') {
      type = 'run.failed';
      data = { error: end.error };
      fields.push('error', JSON.stringify(end.error));
    } else if (end.status === 'expired') {
      type = 'run.expired';
      data = { expiresAt: new Date(end.expiresAtMs).toISOString() };
    } else {
      type = 'run.cancelled';
      data = end.reason ? { reason: end.reason } : {};
    }
    if ('usage' in end && end.usage) fields.push('usage', JSON.stringify(end.usage));
    if ('model' in end && end.model) fields.push('profile', end.model.profile, 'model', end.model.name);
    const checkpoint = end.status === 'completed' ? end.checkpoint : undefined;
    if (checkpoint) fields.push('todos', JSON.stringify(checkpoint.todos), 'step', String(checkpoint.step));
    const parent = parentRunId ? this.keys.run(parentRunId) : undefined;
    const outcome = crew.childOutcome(end);
    const result = await scripts.finalizeRun.run(this.redis, {
      keys: {
        ...keys,
        sessionRecord: keys.session.record,
        sessionQueue: keys.session.queue,
        transcript: keys.session.transcript,
        sessionRuns: keys.session.runs,
        parentRecord: parent?.record ?? keys.unused,
        parentEvents: parent?.events ?? keys.unused,
        parentWaitpoint: parent?.waitpoint ?? keys.unused,
        parentResults: parent?.waitpointResults ?? keys.unused,
        batchRecord: keys.batch.record,
        batchRuns: keys.batch.runs,
      },
      args: {
        ...eventArgs(this, keys, runId),
        status: end.status,
        eventType: type,
        eventData: JSON.stringify(data),
        retention: this.retentionSeconds,
        token,
        checkpoint: checkpoint?.json ?? '',
        sessionTtl: this.sessionTtlSeconds,
        parentId: parentRunId,
        parentChannel: parent?.eventsChannel ?? '',
        childStatus: outcome.status,
        childSummary: outcome.summary,
        childUsage: JSON.stringify(outcome.usage),
        turnCount: turn.length,
        fieldCount: fields.length / 2,
        pairs: [...fields, ...turn, ...eventPairs(events)],
      },
    });
    if (!Array.isArray(result)) return false;
    const [, reported, tenant] = result;
    this.#onEnded?.({ runId, tenant, status: end.status });
    if (reported === 'ready') await this.#parentReady(parentRunId);
    if (reported === 'unreported') await this.reportEnded(runId);
    return true;
  }

  /**
   * Reports an ended crew child to its parent from its record, once (a repair:
   * the step that ends a child reports it). Wakes the parent when it was the
   * last. False when the run is no ended child, or was reported already.
   */
  async reportEnded(childRunId: string): Promise<boolean> {
    const [record] = await records.readRecords(this, [childRunId], false);
    if (!record?.parentRunId || !record.crew || !record.finishedAt) return false;
    const durationMs = Date.parse(record.finishedAt) - Date.parse(record.createdAt);
    const outcome = crew.outcomeOfRecord(record);
    const child = { id: childRunId, call: record.crew.call, index: record.crew.index, durationMs };
    return this.reportChild(record.parentRunId, child, outcome);
  }

  /**
   * Reports a crew child that is gone (its keys removed before it ended) to
   * its parent's current delegation as failed, once. True when it was the
   * last to report (the parent is woken).
   */
  async reportGone(parentRunId: string, childRunId: string): Promise<boolean> {
    const delegation = await waitpoints.readDelegation(this, parentRunId);
    const index = delegation?.children.get(childRunId);
    if (!delegation || index === undefined || delegation.results.has(childRunId)) return false;
    const outcome = crew.childOutcome({
      status: 'failed',
      error: {
        code: 'ERR_CREW_CHILD_GONE',
        message: `The child run ${childRunId} is gone: its records were removed (retention, or a deletion) before it ended.`,
      },
    });
    const child = { id: childRunId, call: delegation.call, index, durationMs: 0 };
    return this.reportChild(parentRunId, child, outcome);
  }

  /** See {@link waitpoints.reportChild}: wakes the parent when this was its last child. */
  async reportChild(
    parentRunId: string,
    child: { id: string; call: string; index: number; durationMs: number },
    outcome: crew.ChildOutcome,
  ): Promise<boolean> {
    const ready = await waitpoints.reportChild(this, parentRunId, child, outcome);
    if (ready) await this.#parentReady(parentRunId);
    return ready;
  }

  /** See {@link waitpoints.delegate}. */
  delegate(
    runId: string,
    token: string,
    delegation: waitpoints.NewDelegation,
    events: readonly RunEventInput[] = [],
  ): Promise<'recorded' | 'again'> {
    return waitpoints.delegate(this, runId, token, delegation, events);
  }

  /** See {@link waitpoints.readDelegation}. */
  delegation(runId: string): Promise<waitpoints.Delegation | undefined> {
    return waitpoints.readDelegation(this, runId);
  }

  /** How many crew children the run has started over its life. */
  async childCount(runId: string): Promise<number> {
    return Number((await this.redis.hget(this.keys.run(runId).record, 'childCount')) ?? 0);
  }

  /**
   * Removes ended runs (all in one hash slot: a crew tree's) with every key
   * they own and their entries in the tenant's index (see run-removal.ts).
   */
  async remove(tenant: string, runIds: readonly string[]): Promise<void> {
    await removal.unlinkRuns(this, tenant, runIds);
  }

  /** The ids of the crew children the run has started, in order. */
  childIds(runId: string): Promise<string[]> {
    return this.redis.lrange(this.keys.run(runId).children, 0, -1);
  }

  /**
   * Tells `listener` of each crew parent whose last child has just reported
   * through this store (its job can be woken). A listener that fails is
   * ignored here: the parent's own delay wakes it later.
   */
  onParentReady(listener: (parentRunId: string) => Promise<void>): void {
    this.#parentReadyListeners.push(listener);
  }

  readonly #parentReadyListeners: ((parentRunId: string) => Promise<void>)[] = [];

  async #parentReady(parentRunId: string): Promise<void> {
    await Promise.allSettled(this.#parentReadyListeners.map((listener) => listener(parentRunId)));
  }

  /** A retryable failure: the run goes back to queued, with `run.retrying`. */
  async markRetrying(runId: string, token: string, attempt: number, delayMs: number, error: ErrorBody) {
    const keys = this.keys.run(runId);
    await scripts.retryRun.run(this.redis, {
      keys,
      args: {
        ...eventArgs(this, keys, runId),
        attempt,
        delayMs: Math.round(delayMs),
        error: luaJson(error),
        token,
      },
    });
  }

  /** Flags the run for cancellation and tells every worker; returns the status it had. */
  /**
   * A scheduled run's new start time (epoch ms), with `run.scheduled`: 'ok', or why not ('missing',
   * 'cancel' when a cancel was asked for, or the status of a run that is not scheduled), nothing
   * changed then. The caller moves the job (`RunEngine.reschedule`).
   */
  async reschedule(runId: string, runAtMs: number): Promise<RescheduleResult> {
    const keys = this.keys.run(runId);
    return scripts.rescheduleRun.run(this.redis, {
      keys,
      args: {
        ...eventArgs(this, keys, runId),
        runAt: runAtMs,
        data: JSON.stringify({ runAt: new Date(runAtMs).toISOString() }),
      },
    });
  }

  /**
   * A scheduled run's job came up: the run queued (`run.queued`) when its time has come, or its
   * time when it has not (a reschedule moved it); any other run is left to its claim.
   */
  async due(runId: string): Promise<DueResult> {
    const keys = this.keys.run(runId);
    const reply = await scripts.dueRun.run(this.redis, { keys, args: eventArgs(this, keys, runId) });
    if (reply[0] === 'due') return { status: 'due' };
    if (reply[0] === 'early') return { status: 'early', runAtMs: Number(reply[1]) };
    if (reply[0] === 'expire') return { status: 'expire', expiresAtMs: Number(reply[1]) };
    return { status: 'other' };
  }

  /**
   * Watches a run's deadline to start by (epoch ms) for the expiry sweep: in the deployment's set of
   * deadlines, its own hash slot, so apart from the run's keys (see `RunEngine.expireDue`).
   */
  async watchExpiry(runId: string, expiresAtMs: number): Promise<void> {
    await this.redis.zadd(this.keys.runExpiries, expiresAtMs, runId);
  }

  /** A scheduled run's start time (epoch ms); undefined once it is not scheduled, or a cancel was asked for. */
  async scheduledAt(runId: string): Promise<number | undefined> {
    const [status, runAt, cancel] = await this.redis.hmget(
      this.keys.run(runId).record,
      'status',
      'runAt',
      'cancelRequested',
    );
    return status === 'scheduled' && cancel === null ? Number(runAt ?? 0) : undefined;
  }

  async requestCancel(
    runId: string,
    mode: 'cancel' | 'interrupt' = 'cancel',
  ): Promise<'missing' | RunStatus> {
    return scripts.requestCancel.run(this.redis, {
      keys: this.keys.run(runId),
      args: { channel: this.keys.cancelChannel, runId, mode },
    });
  }
}

/** What `claim` finds. */
export type ClaimResult =
  | {
      status: 'ok';
      tenant: string;
      spec: RunSpec | undefined;
      checkpoint: string | undefined;
      /** The session the run belongs to, if any. */
      sessionId: string | undefined;
      /** How many messages sent to the run wait to be taken (see {@link RunStore.takeMessages}). */
      inbox: number;
    }
  | { status: 'wait'; ahead: string }
  /** Still scheduled, until `runAtMs` (epoch ms): nothing was changed. */
  | { status: 'early'; runAtMs: number }
  /** Never started, and past its deadline (`expiresAtMs`) by Redis's clock: not started; the caller ends it expired. */
  | { status: 'expire'; expiresAtMs: number }
  | { status: 'missing' | 'cancel' | 'completed' | 'failed' | 'cancelled' | 'expired' };

/**
 * What `due` finds: queued now, still early (until `runAtMs`), past its deadline to start by (the
 * caller ends it expired), or nothing to do here (the claim decides).
 */
export type DueResult =
  | { status: 'due' }
  | { status: 'early'; runAtMs: number }
  | { status: 'expire'; expiresAtMs: number }
  | { status: 'other' };

/** What `reschedule` did: the new time set, or why not (the status the run has when it is not scheduled). */
export type RescheduleResult = 'ok' | 'missing' | 'cancel' | RunStatus;

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value <= 0) {
    throw new RangeError(`RunStore option "${name}" must be a positive integer, got ${value}`);
  }
  return value;
}
