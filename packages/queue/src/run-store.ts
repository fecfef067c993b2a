import type {
  CreateRunBody,
  ErrorBody,
  PendingClarify,
  Run,
  RunEvent,
  RunEventInput,
  RunEventType,
  RunStatus,
  TodoItem,
  Usage,
} from '@tether/protocol';
import type { Redis } from 'ioredis';
import { QueueError } from './errors.js';
import type { TetherKeys } from './keys.js';
import { type CallOf, isNoScript } from './lua-script.js';
import * as scripts from './scripts.js';

/** The last id a stream can hold: both parts 2^64 - 1. */
const LAST_STREAM_ID = '18446744073709551615-18446744073709551615';

/** A run as stored: what the API shows plus what the worker needs. */
export interface RunRecord extends Run {
  tenant: string;
  /** The submitted body (files included until the worker has written them); gone once the run ends. */
  spec?: CreateRunBody | undefined;
  cancelRequested: boolean;
  /** The fencing token of the worker that owns the current attempt. */
  owner?: string | undefined;
  bodyHash?: string | undefined;
}

export interface RunStoreOptions {
  redis: Redis;
  keys: TetherKeys;
  /** Events kept per run (approximate, `XADD MAXLEN ~`). Default 10,000. */
  eventMaxLength?: number;
  /** How long an ended run's keys stay, in seconds. Default 7 days. */
  retentionSeconds?: number;
}

export type AnswerResult = 'ok' | 'no_run' | 'no_request' | 'answered' | 'timed_out' | 'expired' | 'ended';
export type ClarifyState =
  | { state: 'answered'; answer: string }
  | { state: 'timed_out' }
  | { state: 'pending'; expiresAtMs: number }
  | { state: 'missing' }
  | { state: 'not_owner' };

/**
 * The run record, checkpoint, event log and clarify requests in Redis. Every
 * change that must happen together (a status and its event, an answer and its
 * event) is one Lua script on the run's own keys.
 */
export class RunStore {
  readonly redis: Redis;
  readonly keys: TetherKeys;
  readonly eventMaxLength: number;
  readonly retentionSeconds: number;

  constructor(options: RunStoreOptions) {
    this.redis = options.redis;
    this.keys = options.keys;
    this.eventMaxLength = positive('eventMaxLength', options.eventMaxLength ?? 10_000);
    this.retentionSeconds = positive('retentionSeconds', options.retentionSeconds ?? 7 * 24 * 3600);
  }

  /** Creates the record and appends `run.queued`; false when the id exists. */
  async create(run: NewRun): Promise<boolean> {
    const [result] = await this.createMany([run]);
    if (result instanceof Error) throw result;
    return result as boolean;
  }

  /**
   * Creates several runs in one round trip: each record (with `run.queued`) and
   * its entry in the tenant's index. The index is in another hash slot, so not in
   * the script; listing skips ids whose record is not the tenant's. Returns, per
   * run and in order, true, false (the id exists) or the error Redis answered.
   */
  async createMany(runs: readonly NewRun[]): Promise<(boolean | Error)[]> {
    if (runs.length === 0) return [];
    const calls = runs.map((run) => this.#createCall(run));
    const pipeline = this.redis.pipeline();
    for (const [index, run] of runs.entries()) {
      scripts.createRun.queue(pipeline, calls[index] as CreateCall);
      pipeline.zadd(this.keys.tenantRuns(run.tenant), 0, run.id);
    }
    const replies = (await pipeline.exec()) ?? [];
    return Promise.all(
      runs.map(async (run, index) => {
        const call = calls[index] as CreateCall;
        const [created, indexed] = [replies[2 * index], replies[2 * index + 1]];
        let [error, id] = created ?? [new Error('Redis sent no reply for the run')];
        if (error && isNoScript(error)) {
          // Redis forgot the script (a restart or failover): run it by its source.
          try {
            [error, id] = [null, await scripts.createRun.run(this.redis, call)];
            // A listing in between could have dropped the entry as a run that is gone: add it again.
            if (id) await this.redis.zadd(this.keys.tenantRuns(run.tenant), 0, run.id);
          } catch (retryError) {
            error = retryError as Error;
          }
        }
        if (error) return error;
        if (indexed?.[0]) return indexed[0];
        return Boolean(id);
      }),
    );
  }

  #createCall(run: NewRun): CreateCall {
    const keys = this.keys.run(run.id);
    const fields: string[] = [
      'id',
      run.id,
      'tenant',
      run.tenant,
      'status',
      'queued',
      'createdAt',
      run.createdAt,
      'attempts',
      '0',
      'todos',
      '[]',
    ];
    if (run.bodyHash) fields.push('bodyHash', run.bodyHash);
    return {
      keys,
      args: {
        channel: keys.eventsChannel,
        maxlen: this.eventMaxLength,
        runId: run.id,
        spec: JSON.stringify(run.spec),
        metadata: run.spec.metadata ? JSON.stringify(run.spec.metadata) : '',
        fields,
      },
    };
  }

  /** The run with its spec (the submitted body, while the run is live). */
  async get(runId: string): Promise<RunRecord | undefined> {
    const [record] = await this.#read([runId], true);
    return record;
  }

  /** Several records at once, in order (undefined where a run is gone), without their specs. */
  getMany(runIds: string[]): Promise<(RunRecord | undefined)[]> {
    return this.#read(runIds, false);
  }

  async #read(runIds: string[], withSpec: boolean): Promise<(RunRecord | undefined)[]> {
    if (runIds.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of runIds) {
      const keys = this.keys.run(id);
      pipeline.hgetall(keys.record);
      pipeline.get(keys.pending);
      pipeline.get(keys.metadata);
      if (withSpec) pipeline.get(keys.spec);
    }
    const replies = (await pipeline.exec()) ?? [];
    for (const [error] of replies) if (error) throw error;
    const per = withSpec ? 4 : 3;
    return runIds.map((_, i) => {
      const hash = replies[i * per]?.[1] as Record<string, string>;
      if (!hash?.id) return undefined;
      return parseRecord(hash, {
        pending: replies[i * per + 1]?.[1] as string | null,
        metadata: replies[i * per + 2]?.[1] as string | null,
        spec: withSpec ? (replies[i * per + 3]?.[1] as string | null) : null,
      });
    });
  }

  /** Drops the submitted files from the stored spec once the worker has written them. */
  async dropFiles(runId: string, spec: CreateRunBody): Promise<void> {
    if (!spec.files) return;
    const { files: _files, ...rest } = spec;
    await this.redis.set(this.keys.run(runId).spec, JSON.stringify(rest), 'XX');
  }

  /** Appends an event unless the run has ended (or, with `token`, another worker owns it). */
  async append(runId: string, event: RunEventInput, token = ''): Promise<boolean> {
    return this.appendEvents(runId, [event], token);
  }

  /** Appends events in order, in one step, unless the run has ended (or, with `token`, another worker owns it). */
  async appendEvents(runId: string, events: readonly RunEventInput[], token = ''): Promise<boolean> {
    if (events.length === 0) return true;
    const keys = this.keys.run(runId);
    const appended = await scripts.appendEvents.run(this.redis, {
      keys,
      args: {
        channel: keys.eventsChannel,
        maxlen: this.eventMaxLength,
        runId,
        token,
        events: eventPairs(events),
      },
    });
    return typeof appended === 'number';
  }

  /** Events after `afterId` (exclusive; '0' for all), oldest first. */
  async readEvents(runId: string, afterId = '0', count = 1_000): Promise<RunEvent[]> {
    // Nothing can follow the last id a stream can hold, and XRANGE refuses to start after it.
    if (afterId === LAST_STREAM_ID) return [];
    const start = afterId === '0' || afterId === '' ? '-' : `(${afterId}`;
    const entries = await this.redis.xrange(this.keys.run(runId).events, start, '+', 'COUNT', count);
    return entries.map(([id, fields]) => toEvent(runId, id, fields));
  }

  /**
   * A worker takes the run for an attempt (see the `claimRun` script: it
   * appends `attempt.started`) and gets what the attempt needs in the same
   * step: the spec and the checkpoint.
   */
  async claim(runId: string, token: string, attempt: number, workerId: string): Promise<ClaimResult> {
    const keys = this.keys.run(runId);
    const reply = await scripts.claimRun.run(this.redis, {
      keys,
      args: {
        channel: keys.eventsChannel,
        maxlen: this.eventMaxLength,
        runId,
        at: new Date().toISOString(),
        token,
        attempt,
        workerId,
      },
    });
    if (reply[0] !== 'ok') return { status: reply[0] };
    const [, spec, checkpoint] = reply;
    return {
      status: 'ok',
      spec: spec ? (JSON.parse(spec) as CreateRunBody) : undefined,
      checkpoint: checkpoint || undefined,
    };
  }

  async loadCheckpoint(runId: string): Promise<string | undefined> {
    return (await this.redis.get(this.keys.run(runId).checkpoint)) ?? undefined;
  }

  /**
   * Saves the checkpoint (appending `events`, emitted since the last write,
   * first) and the progress the record shows (todos, usage, step) while
   * `token` still owns the run. Throws
   * `ERR_RUN_NOT_OWNER` when another worker took it over, and
   * `ERR_RUN_CANCEL_REQUESTED` when a cancel was asked for.
   */
  async saveCheckpoint(
    runId: string,
    token: string,
    json: string,
    progress: { todos: TodoItem[]; usage: Usage; step: number },
    events: readonly RunEventInput[] = [],
  ): Promise<void> {
    const keys = this.keys.run(runId);
    const result = await scripts.saveCheckpoint.run(this.redis, {
      keys,
      args: {
        token,
        checkpoint: json,
        todos: JSON.stringify(progress.todos),
        usage: JSON.stringify(progress.usage),
        channel: keys.eventsChannel,
        maxlen: this.eventMaxLength,
        runId,
        step: progress.step,
        events: eventPairs(events),
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
  }

  /** Records a clarify question and appends `events` then `clarify.requested`; throws as `saveCheckpoint` does. */
  async suspend(
    runId: string,
    token: string,
    pending: PendingClarify,
    events: readonly RunEventInput[] = [],
  ): Promise<string> {
    const keys = this.keys.run(runId);
    const expiresAtMs = Date.parse(pending.expiresAt);
    const ttl = Math.ceil(Math.max(0, expiresAtMs - Date.now()) / 1000) + this.retentionSeconds;
    const result = await scripts.suspendRun.run(this.redis, {
      keys: { ...keys, clarify: keys.clarify(pending.requestId) },
      args: {
        channel: keys.eventsChannel,
        maxlen: this.eventMaxLength,
        runId,
        token,
        requestId: pending.requestId,
        expiresAt: expiresAtMs,
        pending: JSON.stringify(pending),
        clarifyTtl: ttl,
        events: eventPairs(events),
      },
    });
    if (result === 0)
      throw new QueueError('ERR_RUN_NOT_OWNER', `Run ${runId} is owned by another worker now.`);
    if (result === -1)
      throw new QueueError('ERR_RUN_CANCEL_REQUESTED', `Run ${runId} was cancelled or has ended.`);
    return result;
  }

  /** Sets a non-terminal status while `token` owns the run; false otherwise. */
  async setStatus(
    runId: string,
    token: string,
    status: 'queued' | 'running' | 'waiting_for_input',
  ): Promise<boolean> {
    const keys = this.keys.run(runId);
    return (await scripts.setStatus.run(this.redis, { keys, args: { token, status } })) === 1;
  }

  /**
   * Why a run that just suspended on `requestId` should not sleep until the
   * deadline: its question was answered, or a cancel was requested, while the
   * worker was still moving its job to delayed (neither could wake a job that
   * was still active). One round trip; the two keys share the run's slot.
   */
  async wakeReason(runId: string, requestId: string): Promise<'answered' | 'cancel' | undefined> {
    const keys = this.keys.run(runId);
    const replies = await this.redis
      .pipeline()
      .hget(keys.clarify(requestId), 'status')
      .hget(keys.record, 'cancelRequested')
      .exec();
    const [status, cancel] = (replies ?? []).map(([error, value]) => {
      if (error) throw error;
      return value;
    });
    if (cancel === '1') return 'cancel';
    if (status === 'answered') return 'answered';
    return undefined;
  }

  /** The first answer wins (see the `answerClarify` script). */
  async answer(runId: string, requestId: string, answer: string): Promise<AnswerResult> {
    const keys = this.keys.run(runId);
    return scripts.answerClarify.run(this.redis, {
      keys: { ...keys, clarify: keys.clarify(requestId) },
      args: {
        channel: keys.eventsChannel,
        maxlen: this.eventMaxLength,
        runId,
        requestId,
        answer,
      },
    });
  }

  /** What a resuming worker learns of its question, timing it out once past the deadline. */
  async resolveClarify(runId: string, requestId: string, token: string): Promise<ClarifyState> {
    const keys = this.keys.run(runId);
    const reply = await scripts.resolveClarify.run(this.redis, {
      keys: { ...keys, clarify: keys.clarify(requestId) },
      args: {
        channel: keys.eventsChannel,
        maxlen: this.eventMaxLength,
        runId,
        requestId,
        token,
      },
    });
    switch (reply[0]) {
      case 'answered':
        return { state: 'answered', answer: reply[1] ?? '' };
      case 'timed_out':
        return { state: 'timed_out' };
      case 'pending':
        return { state: 'pending', expiresAtMs: Number(reply[1]) };
      case 'not_owner':
        return { state: 'not_owner' };
      default:
        return { state: 'missing' };
    }
  }

  /**
   * Ends the run once with its terminal event (the last event of the log),
   * after `events` (emitted since the last write).
   * With `token`, only while that worker owns the run. Returns false when the
   * run had already ended (or another worker owns it). A completed run's final
   * `checkpoint` (its last turn, never saved on its own) is stored in the same step.
   */
  async finalize(
    runId: string,
    end:
      | {
          status: 'completed';
          output: string;
          usage?: Usage | undefined;
          checkpoint?: { json: string; todos: TodoItem[]; step: number } | undefined;
        }
      | { status: 'failed'; error: ErrorBody; usage?: Usage | undefined }
      | { status: 'cancelled'; reason?: string | undefined },
    token = '',
    events: readonly RunEventInput[] = [],
  ): Promise<boolean> {
    const keys = this.keys.run(runId);
    const fields: string[] = [];
    let type: RunEventType;
    let data: unknown;
    if (end.status === 'completed') {
      type = 'run.completed';
      data = { output: end.output };
      fields.push('output', end.output);
    } else if (end.status === 'failed') {
      type = 'run.failed';
      data = { error: end.error };
      fields.push('error', JSON.stringify(end.error));
    } else {
      type = 'run.cancelled';
      data = end.reason ? { reason: end.reason } : {};
    }
    if ('usage' in end && end.usage) fields.push('usage', JSON.stringify(end.usage));
    const checkpoint = end.status === 'completed' ? end.checkpoint : undefined;
    if (checkpoint) fields.push('todos', JSON.stringify(checkpoint.todos), 'step', String(checkpoint.step));
    const result = await scripts.finalizeRun.run(this.redis, {
      keys,
      args: {
        channel: keys.eventsChannel,
        maxlen: this.eventMaxLength,
        runId,
        at: new Date().toISOString(),
        status: end.status,
        eventType: type,
        eventData: JSON.stringify(data),
        retention: this.retentionSeconds,
        token,
        checkpoint: checkpoint?.json ?? '',
        fieldCount: fields.length / 2,
        pairs: [...fields, ...eventPairs(events)],
      },
    });
    return typeof result === 'string';
  }

  /** A retryable failure: the run goes back to queued, with `run.retrying`. */
  async markRetrying(runId: string, token: string, attempt: number, delayMs: number, error: ErrorBody) {
    const keys = this.keys.run(runId);
    await scripts.retryRun.run(this.redis, {
      keys,
      args: {
        channel: keys.eventsChannel,
        maxlen: this.eventMaxLength,
        runId,
        attempt,
        delayMs: Math.round(delayMs),
        error: JSON.stringify(error),
        token,
      },
    });
  }

  /** Flags the run for cancellation and tells every worker; returns the status it had. */
  async requestCancel(runId: string): Promise<'missing' | RunStatus> {
    return scripts.requestCancel.run(this.redis, {
      keys: this.keys.run(runId),
      args: { channel: this.keys.cancelChannel, runId },
    });
  }

  /** A tenant's runs, newest first, `limit` at a time after `cursor` (a run id). */
  async list(
    tenant: string,
    options: { status?: RunStatus | undefined; limit: number; cursor?: string | undefined },
  ): Promise<{ runs: RunRecord[]; nextCursor: string | null }> {
    const key = this.keys.tenantRuns(tenant);
    const runs: RunRecord[] = [];
    let cursor = options.cursor;
    // Ids sort by creation time, so the index is read in reverse lexical order.
    for (;;) {
      const batch = options.status ? Math.max(options.limit * 4, 100) : options.limit + 1;
      const ids = await this.redis.zrevrangebylex(key, cursor ? `(${cursor}` : '+', '-', 'LIMIT', 0, batch);
      if (ids.length === 0) return { runs, nextCursor: null };
      const records = await this.getMany(ids);
      const gone: string[] = [];
      for (let i = 0; i < ids.length; i++) {
        const record = records[i];
        const id = ids[i] as string;
        cursor = id;
        // Gone (expired), or an id that was never this tenant's run.
        if (!record || record.tenant !== tenant) {
          gone.push(id);
          continue;
        }
        if (options.status && record.status !== options.status) continue;
        if (runs.length === options.limit) {
          if (gone.length > 0) await this.redis.zrem(key, ...gone);
          return { runs, nextCursor: (runs.at(-1) as RunRecord).id };
        }
        runs.push(record);
      }
      // Runs whose keys expired leave the index as they are met.
      if (gone.length > 0) await this.redis.zrem(key, ...gone);
      if (ids.length < batch) return { runs, nextCursor: null };
    }
  }
}

/** A run to create: its id, tenant, the submitted body, when, and the body's hash (idempotent requests). */
export interface NewRun {
  id: string;
  tenant: string;
  spec: CreateRunBody;
  createdAt: string;
  bodyHash?: string | undefined;
}

type CreateCall = CallOf<typeof scripts.createRun>;

/** What `claim` finds. */
export type ClaimResult =
  | { status: 'ok'; spec: CreateRunBody | undefined; checkpoint: string | undefined }
  | { status: 'missing' | 'cancel' | 'completed' | 'failed' | 'cancelled' };

function eventPairs(events: readonly RunEventInput[]): string[] {
  const pairs: string[] = [];
  for (const event of events) pairs.push(event.type, JSON.stringify(event.data));
  return pairs;
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value <= 0) {
    throw new RangeError(`RunStore option "${name}" must be a positive integer, got ${value}`);
  }
  return value;
}

function json<T>(text: string | undefined): T | undefined {
  if (text === undefined || text === '') return undefined;
  return JSON.parse(text) as T;
}

function parseRecord(
  hash: Record<string, string>,
  extra: { pending: string | null; metadata: string | null; spec: string | null },
): RunRecord {
  const record: RunRecord = {
    id: hash.id as string,
    tenant: hash.tenant as string,
    status: hash.status as RunStatus,
    createdAt: hash.createdAt as string,
    attempts: Number(hash.attempts ?? 0),
    todos: json<TodoItem[]>(hash.todos) ?? [],
    cancelRequested: hash.cancelRequested === '1',
  };
  if (hash.startedAt) record.startedAt = hash.startedAt;
  if (hash.finishedAt) record.finishedAt = hash.finishedAt;
  const pending = json<PendingClarify>(extra.pending ?? undefined);
  if (pending && record.status === 'waiting_for_input') record.pendingClarify = pending;
  if (hash.output !== undefined) record.output = hash.output;
  const error = json<ErrorBody>(hash.error);
  if (error) record.error = error;
  const usage = json<Usage>(hash.usage);
  if (usage) record.usage = usage;
  const metadata = json<Record<string, unknown>>(extra.metadata ?? undefined);
  if (metadata) record.metadata = metadata;
  const spec = json<CreateRunBody>(extra.spec ?? undefined);
  if (spec) record.spec = spec;
  if (hash.owner) record.owner = hash.owner;
  if (hash.bodyHash) record.bodyHash = hash.bodyHash;
  return record;
}

function toEvent(runId: string, id: string, fields: string[]): RunEvent {
  const values: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) values[fields[i] as string] = fields[i + 1] as string;
  return {
    id,
    runId,
    type: values.t as RunEventType,
    at: eventTime(id),
    data: JSON.parse(values.d ?? '{}'),
  } as RunEvent;
}

/** An event's time: the milliseconds of its stream id, as ISO 8601. */
export function eventTime(id: string): string {
  return new Date(Number(id.slice(0, id.indexOf('-')))).toISOString();
}

/** Parses an event as `appendEvent` publishes it (`at` is derived from the id). */
export function parsePublishedEvent(message: string): RunEvent {
  const event = JSON.parse(message) as Omit<RunEvent, 'at'>;
  return {
    id: event.id,
    runId: event.runId,
    type: event.type,
    at: eventTime(event.id),
    data: event.data,
  } as RunEvent;
}
