import { createHash } from 'node:crypto';
import {
  type ApprovalDecision,
  newBatchRunId,
  newId,
  newSessionRunId,
  type RunEventInput,
  type RunStatus,
  runTitle,
  TERMINAL_STATUSES,
} from '@tether/protocol';
import { type Job, type JobType, Queue, SpanKind, type Telemetry } from 'bullmq';
import { QueueError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { QUEUE_NAME, type TetherKeys } from '../redis/keys.js';
import { type RunDeliveries, RunEngine, type RunJobs } from './engine.js';
import { RETRY_BACKOFF_TYPE, type RunJobData } from './jobs.js';
import type { ListOptions, NewRun, RunRecord, StoredBody } from './records.js';
import type { AnswerResult, DecisionResult, RunStore, ToolOutputResult } from './run-store.js';

/** Submissions written together, at most this many per round trip. */
const MAX_BATCH = 256;

interface PendingSubmission {
  run: NewRun;
  /** The job's data besides the run id (the request's id) and its trace context (BullMQ's telemetry metadata). */
  job: { requestId?: string | undefined; traceMetadata?: string | undefined };
  resolve: () => void;
  reject: (error: unknown) => void;
}

export interface RunServiceOptions {
  redis: RedisClient;
  /**
   * The BullMQ queue's connection. Default `redis`; give it one of its own when
   * the store's pipelines matter: BullMQ defines its scripts on the connection,
   * and ioredis copies them into every pipeline made on it.
   */
  queueConnection?: RedisClient;
  keys: TetherKeys;
  store: RunStore;
  /** BullMQ attempts per run (retryable failures). Default 3. */
  attempts?: number;
  /** First retry delay (ms), doubled each time. Default 2,000. */
  backoffMs?: number;
  /** How long an Idempotency-Key is remembered, in seconds. Default 24 h. */
  idempotencySeconds?: number;
  /** Webhook deliveries of the events this service appends (answers, cancels); none without it. */
  webhooks?: RunDeliveries | undefined;
  /** Told of a dispatch that failed (the sweep or the run's next claim dispatches it later). */
  onWebhookError?: ((error: unknown, runId: string) => void) | undefined;
  /**
   * Traces (BullMQ's telemetry interface, `bullmq-otel`): given, the queues
   * trace their operations and each submission gets an `enqueue run` span,
   * child of the active context (the API request's), whose context its job
   * carries to the worker. Undefined: no tracing at all.
   */
  telemetry?: Telemetry | undefined;
}

/** Creates a BullMQ queue of runs (one shard's: `keys.shardPrefix(shard)`) on a connection. */
export function createRunQueue(
  redis: RedisClient,
  prefix: string,
  telemetry?: Telemetry | undefined,
): Queue<RunJobData> {
  // Tether keeps its own event log; BullMQ's shared event stream is kept short.
  return new Queue<RunJobData>(QUEUE_NAME, {
    connection: redis,
    prefix,
    streams: { events: { maxLen: 100 } },
    ...(telemetry ? { telemetry } : {}),
  });
}

/**
 * What the API does with runs: submit, read, answer, cancel. Stateless: any
 * number of API processes share the work through Redis.
 */
export class RunService implements RunJobs {
  readonly store: RunStore;
  /** The BullMQ queue of each shard, by shard number. */
  readonly queues: readonly Queue<RunJobData>[];
  readonly #redis: RedisClient;
  readonly #keys: TetherKeys;
  readonly #attempts: number;
  readonly #backoffMs: number;
  readonly #idempotencySeconds: number;
  readonly #queueConnection: RedisClient;
  readonly #telemetry: Telemetry | undefined;
  /** Every queue this service has opened, by prefix: the shards', and older ones runs still name. */
  readonly #byPrefix = new Map<string, Queue<RunJobData>>();
  readonly #errorListeners: ((error: Error) => void)[] = [];
  /** Submissions of this turn of the event loop, written together. */
  #pending: PendingSubmission[] = [];
  /** The run engine's steps outside an attempt (an answer, an output, a cancel, the crew's), on this service's jobs. */
  readonly engine: RunEngine;

  constructor(options: RunServiceOptions) {
    this.#redis = options.redis;
    this.#keys = options.keys;
    this.store = options.store;
    this.#attempts = options.attempts ?? 3;
    this.#backoffMs = options.backoffMs ?? 2_000;
    this.#idempotencySeconds = options.idempotencySeconds ?? 24 * 3600;
    if (!Number.isInteger(this.#attempts) || this.#attempts < 1 || this.#attempts > 100) {
      throw new RangeError(
        `RunService option "attempts" must be an integer from 1 to 100, got ${this.#attempts}`,
      );
    }
    this.#queueConnection = options.queueConnection ?? options.redis;
    this.#telemetry = options.telemetry;
    this.queues = Array.from({ length: options.keys.shards }, (_, shard) => {
      return this.#queue(options.keys.shardPrefix(shard));
    });
    // A crew parent whose last child has reported resumes now, on any worker.
    this.engine = new RunEngine({
      store: this.store,
      jobs: this,
      webhooks: options.webhooks,
      onWebhookError: options.onWebhookError,
    });
    this.store.onParentReady((parentRunId) => this.engine.promote(parentRunId));
  }

  /**
   * Queues the jobs of a crew parent's children (created, and recorded in the
   * parent's delegation). Idempotent: only children still queued get a job,
   * and one that has a job keeps it (BullMQ refuses a second job with the
   * same id).
   */
  async queueChildren(
    children: readonly NewRun[],
    options: { requestId?: string | undefined } = {},
  ): Promise<void> {
    if (children.length === 0) return;
    const records = await this.store.getMany(children.map((child) => child.id));
    const toQueue = children.filter((_, i) => records[i]?.status === 'queued');
    await Promise.all(
      this.queues.map((queue) => {
        const jobs = toQueue
          .filter((child) => child.queue === queue.opts.prefix)
          .map((child) => ({
            name: 'run',
            data: jobData(child, options.requestId),
            opts: this.#jobOptions(child.id),
          }));
        return jobs.length === 0 ? undefined : queue.addBulk(jobs);
      }),
    );
  }

  /**
   * Creates and enqueues a run. With an idempotency key, the same key and body
   * give the same run (`created: false`); the same key with another body is a
   * conflict. `hashOf` is what tells one body from another when it is not
   * `body` itself: the body as submitted, where `body` has its secrets sealed
   * (sealing is random, so two seals of one request differ).
   */
  async submit(
    tenant: string,
    body: StoredBody,
    options: {
      idempotencyKey?: string | undefined;
      session?: SessionLink | undefined;
      hashOf?: unknown;
      /** The submitting request's id, carried in the job to the worker's log lines. */
      requestId?: string | undefined;
      /** A retry: the run it starts again (see {@link retry}). */
      retryOf?: string | undefined;
      /** When the run starts (epoch ms): one later than now makes it `scheduled` until then. */
      runAtMs?: number | undefined;
      /** A deadline to start by (epoch ms): not started by then, the run ends `expired`. */
      expiresAtMs?: number | undefined;
      /** A schedule's run: the schedule's id, kept on the record. */
      scheduleId?: string | undefined;
      /**
       * The run's id, made by the caller (`runIdAt`) so that a step that may run twice creates
       * the run once: a second submit with it answers the run made by the first (`created: false`).
       */
      runId?: string | undefined;
      /** An event the run's log holds right after `run.queued`, appended in the same step. */
      next?: RunEventInput | undefined;
    } = {},
  ): Promise<{ run: RunRecord; created: boolean }> {
    const session = options.session;
    const id = options.runId ?? (session ? newSessionRunId(session.id) : newId('run'));
    if (options.runId !== undefined) {
      const existing = await this.store.getRecord(options.runId);
      if (existing) return { run: await this.#requeue(existing), created: false };
    }
    const queue = this.#keys.shardPrefix(this.#keys.shardOf(id));
    // Only an idempotent request needs its body's hash (to tell a replay from a conflict).
    // A message to a session is the same request only to the same session, with the same strategy.
    const submitted = options.hashOf ?? body;
    const hashed = session
      ? { body: submitted, sessionId: session.id, multitask: session.multitask }
      : submitted;
    const bodyHash = options.idempotencyKey === undefined ? undefined : hashBody(hashed);
    if (options.idempotencyKey !== undefined) {
      const key = this.#keys.idempotency(tenant, options.idempotencyKey);
      const claimed = await this.#redis.set(key, `${id} ${bodyHash}`, 'EX', this.#idempotencySeconds, 'NX');
      if (claimed !== 'OK') {
        const [existingId, existingHash] = ((await this.#redis.get(key)) ?? '').split(' ');
        if (existingHash !== bodyHash) {
          throw new QueueError(
            'ERR_IDEMPOTENCY_CONFLICT',
            'This Idempotency-Key was already used with a different request body; use a new key for a new run.',
          );
        }
        const existing = existingId ? await this.store.get(existingId) : undefined;
        if (existing) return { run: existing, created: false };
        // The first request is still being created (or its run has expired): answer with what it will be.
        throw new QueueError(
          'ERR_IDEMPOTENCY_IN_PROGRESS',
          'A request with this Idempotency-Key is still in progress; retry shortly.',
        );
      }
    }
    const createdAtMs = Date.now();
    // A start time already past starts the run now.
    const runAtMs =
      options.runAtMs !== undefined && options.runAtMs > createdAtMs ? options.runAtMs : undefined;
    const { expiresAtMs } = options;
    // Watched before it exists: an entry for a run that never came to be is dropped by the sweep.
    if (expiresAtMs !== undefined) await this.store.watchExpiry(id, expiresAtMs);
    await this.#enqueue(options.requestId, {
      id,
      tenant,
      spec: body,
      createdAtMs,
      bodyHash,
      queue,
      retryOf: options.retryOf,
      runAtMs,
      expiresAtMs,
      scheduleId: options.scheduleId,
      next: options.next,
      session: session && {
        id: session.id,
        multitask: session.multitask,
        input: JSON.stringify({
          role: 'user',
          content: body.input,
          runId: id,
          at: new Date(createdAtMs).toISOString(),
        }),
      },
    });
    // What was just written, without reading it back.
    const run: RunRecord = {
      id,
      tenant,
      status: runAtMs === undefined ? 'queued' : 'scheduled',
      title: runTitle(body.input),
      createdAt: new Date(createdAtMs).toISOString(),
      attempts: 0,
      todos: [],
      cancelRequested: false,
      spec: body,
      queue,
    };
    if (bodyHash) run.bodyHash = bodyHash;
    if (body.metadata) run.metadata = body.metadata;
    if (session) run.sessionId = session.id;
    if (options.retryOf) run.retryOf = options.retryOf;
    if (runAtMs !== undefined) run.runAt = new Date(runAtMs).toISOString();
    if (expiresAtMs !== undefined) run.expiresAt = new Date(expiresAtMs).toISOString();
    if (options.scheduleId) run.scheduleId = options.scheduleId;
    return { run, created: true };
  }

  /**
   * Creates a batch of runs (bodies checked by the caller, in order): all of them or none. The
   * batch's record goes first, with its total, so a run that ends before the last is created
   * counts against it; then the runs, written and queued as concurrent submissions are (a few
   * round trips for a thousand). A run that could not be created undoes the batch: the runs that
   * were are cancelled and removed, and the batch goes, before the error is thrown.
   */
  async submitBatch(
    tenant: string,
    bodies: readonly StoredBody[],
    options: { metadata?: Record<string, unknown> | undefined; requestId?: string | undefined } = {},
  ): Promise<{ batchId: string; runIds: string[] }> {
    const batchId = newId('bat');
    const keys = this.#keys.batch(batchId);
    const createdAtMs = Date.now();
    const runs: NewRun[] = bodies.map((spec) => {
      const id = newBatchRunId(batchId);
      const queue = this.#keys.shardPrefix(this.#keys.shardOf(id));
      return { id, tenant, spec, createdAtMs, queue, batch: batchId };
    });
    const runIds = runs.map((run) => run.id);
    await this.#redis
      .multi()
      .hset(keys.record, {
        id: batchId,
        tenant,
        total: String(runs.length),
        ended: '0',
        createdAt: String(createdAtMs),
        ...(options.metadata ? { metadata: JSON.stringify(options.metadata) } : {}),
      })
      .rpush(keys.runs, ...runIds)
      .exec();
    const results = await Promise.allSettled(runs.map((run) => this.#enqueue(options.requestId, run)));
    const failure = results.find((result) => result.status === 'rejected');
    if (failure) {
      await Promise.allSettled(
        runs.map(async (run, index) => {
          if (results[index]?.status !== 'fulfilled') return;
          await this.cancel(tenant, run.id).catch(() => undefined);
          await this.delete(tenant, run.id);
        }),
      );
      await this.#redis.del(keys.record, keys.runs);
      throw (failure as PromiseRejectedResult).reason;
    }
    return { batchId, runIds };
  }

  /**
   * A run created with a caller's id by a process that died before it queued the job: the job
   * is added now (BullMQ keeps one job per id, so a job that is there stays as it is). A run of a
   * session waits for its turn in the session, which the session's head promotes: left alone.
   */
  async #requeue(run: RunRecord): Promise<RunRecord> {
    if (run.status !== 'queued' || run.sessionId !== undefined || run.queue === undefined) return run;
    const queue = this.#queue(run.queue);
    if (await queue.getJob(run.id)) return run;
    await queue.add('run', { runId: run.id, tenant: run.tenant }, this.#jobOptions(run.id));
    return run;
  }

  /**
   * Starts a failed or cancelled run again, as a new run with the same spec
   * (the stored body, its submitted files put back when the worker had moved
   * them out) and `retryOf` naming it. Refused (`ERR_RUN_NOT_RETRYABLE`) for
   * any other status, a session's run and a crew child. An idempotency key
   * answers the same new run for the same run again, as `submit` does.
   */
  async retry(
    tenant: string,
    runId: string,
    options: { idempotencyKey?: string | undefined; requestId?: string | undefined } = {},
  ): Promise<{ run: RunRecord; created: boolean }> {
    const old = await this.get(tenant, runId);
    const refuse = (why: string) => new QueueError('ERR_RUN_NOT_RETRYABLE', `Run ${runId} ${why}`);
    if (old.status !== 'failed' && old.status !== 'cancelled') {
      throw refuse(`is ${old.status}: only a failed or cancelled run can be retried.`);
    }
    if (old.sessionId) {
      throw refuse(
        `belongs to session ${old.sessionId}: send the message again (POST /v1/sessions/${old.sessionId}/runs).`,
      );
    }
    if (old.parentRunId) throw refuse(`is a crew child of ${old.parentRunId}: retry its root run instead.`);
    if (!old.spec) {
      throw refuse('has no stored spec (it ended before specs were kept for retries): submit it again.');
    }
    const files = await this.store.keptFiles(runId);
    const spec: StoredBody = files ? { ...old.spec, files: { ...files, ...old.spec.files } } : old.spec;
    return this.submit(tenant, spec, {
      idempotencyKey: options.idempotencyKey,
      hashOf: { retryOf: runId },
      requestId: options.requestId,
      retryOf: runId,
    });
  }

  /**
   * Creates and queues a run together with the others submitted in the same
   * turn of the event loop: their records in one round trip, their jobs in
   * another (`addBulk`). Under load an API process takes many requests per
   * turn, and each would otherwise cost two writes of its own to Redis.
   */
  async #enqueue(requestId: string | undefined, run: NewRun): Promise<void> {
    const span = this.#telemetry && enqueueSpan(this.#telemetry, run);
    try {
      await new Promise<void>((resolve, reject) => {
        this.#pending.push({ run, job: { requestId, traceMetadata: span?.metadata }, resolve, reject });
        if (this.#pending.length === 1) setImmediate(() => void this.#flush());
      });
    } catch (error) {
      span?.span.recordException(error instanceof Error ? error : String(error));
      span?.span.setAttribute('error.type', error instanceof Error ? error.name : 'error');
      throw error;
    } finally {
      span?.span.end();
    }
  }

  async #flush(): Promise<void> {
    const batch = this.#pending.splice(0, MAX_BATCH);
    if (this.#pending.length > 0) setImmediate(() => void this.#flush());
    let results: Awaited<ReturnType<RunStore['createMany']>>;
    try {
      results = await this.store.createMany(batch.map((entry) => entry.run));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
      return;
    }
    const created: PendingSubmission[] = [];
    batch.forEach((entry, index) => {
      const result = results[index];
      if (result instanceof Error) entry.reject(result);
      else if (result === 'no_session') {
        entry.reject(new QueueError('ERR_SESSION_NOT_FOUND', `No session ${entry.run.session?.id}.`));
      } else if (result === 'busy') {
        entry.reject(
          new QueueError(
            'ERR_SESSION_BUSY',
            `Session ${entry.run.session?.id} has a live run, and this message asked to be refused then (multitask: "reject"). Send it again once the run has ended, or with multitask "enqueue" or "interrupt".`,
          ),
        );
      } else if (result === false) {
        entry.reject(
          new QueueError('ERR_QUEUE_ENQUEUE', `The run id ${entry.run.id} is taken; submit again.`),
        );
      } else created.push(entry);
    });
    if (created.length === 0) return;
    try {
      // One round trip per shard (each shard's keys share one hash slot).
      await Promise.all(
        this.queues.map((queue) => {
          const jobs = created
            .filter(({ run }) => run.queue === queue.opts.prefix)
            .map(({ run, job }) => ({
              name: 'run',
              data: jobData(run, job.requestId),
              opts: this.#jobOptions(run.id, job.traceMetadata, run.runAtMs),
            }));
          if (jobs.length === 0) return undefined;
          // With traces, addBulk even for one job: `add` puts its own span's context over the job's.
          if (jobs.length === 1 && !this.#telemetry) {
            const [job] = jobs as [(typeof jobs)[number]];
            return queue.add(job.name, job.data, job.opts);
          }
          return queue.addBulk(jobs);
        }),
      );
    } catch (error) {
      // Marked failed, so a job that did get in finds an ended run and does nothing.
      await Promise.all(created.map(({ run }) => this.engine.failUnqueued(run, error).catch(() => false)));
      for (const entry of created) entry.reject(error);
      return;
    }
    for (const entry of created) entry.resolve();
  }

  #jobOptions(runId: string, traceMetadata?: string | undefined, runAtMs?: number | undefined) {
    return {
      jobId: runId,
      // A delayed run's job: BullMQ's delayed set, until its time (`RunEngine.startOnTime` then).
      ...(runAtMs !== undefined ? { delay: Math.max(0, runAtMs - Date.now()) } : {}),
      attempts: this.#attempts,
      backoff: { type: RETRY_BACKOFF_TYPE, delay: this.#backoffMs },
      removeOnComplete: true,
      removeOnFail: true,
      // The trace context the worker's processing of the job continues (BullMQ's telemetry).
      ...(traceMetadata ? { telemetry: { metadata: traceMetadata } } : {}),
    };
  }

  /** The run, if it belongs to `tenant`; otherwise `ERR_RUN_NOT_FOUND` (never "forbidden": ids are not disclosed). */
  async get(tenant: string, runId: string): Promise<RunRecord> {
    const run = await this.store.get(runId);
    if (!run || run.tenant !== tenant) throw new QueueError('ERR_RUN_NOT_FOUND', `No run ${runId}.`);
    return run;
  }

  /** The run's record alone (see `RunStore.getRecord`), if it belongs to `tenant`; otherwise `ERR_RUN_NOT_FOUND`. */
  async #record(tenant: string, runId: string): Promise<RunRecord> {
    const run = await this.store.getRecord(runId);
    if (!run || run.tenant !== tenant) throw new QueueError('ERR_RUN_NOT_FOUND', `No run ${runId}.`);
    return run;
  }

  /** A tenant's runs, newest first, by pages, by status and metadata (see `RunStore.list`). */
  list(tenant: string, options: ListOptions) {
    return this.store.list(tenant, options);
  }

  /** Answers a clarify question: the first answer wins, then the run resumes on any worker. */
  async answer(tenant: string, runId: string, requestId: string, answer: string): Promise<void> {
    const run = await this.#record(tenant, runId);
    const result = await this.engine.answer(runId, requestId, answer, { run });
    if (result !== 'ok') throw answerRefusal(runId, requestId, result);
  }

  /**
   * Answers a clarify question with the answer token of its `clarify.requested` webhook delivery
   * instead of a tenant's key: once, and only that question (`ERR_ANSWER_TOKEN_INVALID`,
   * `ERR_ANSWER_TOKEN_USED`). `tokenHash` is the token's SHA-256 (hex).
   *
   * The script checks the token before anything else, and nothing is read before it: a token that
   * is not the question's is refused alike, with the same work, whether the run and the question
   * exist or not (and whose they are).
   */
  async answerWithToken(runId: string, requestId: string, answer: string, tokenHash: string): Promise<void> {
    const result = await this.engine.answer(runId, requestId, answer, { tokenHash });
    if (result !== 'ok') throw answerRefusal(runId, requestId, result);
  }

  /**
   * Posts the output of a client tool call: the first output wins; the last
   * of the turn's calls to get one resumes the run on any worker.
   */
  async postToolOutput(
    tenant: string,
    runId: string,
    requestId: string,
    output: string,
    isError = false,
  ): Promise<void> {
    const run = await this.#record(tenant, runId);
    const result = await this.engine.postToolOutput(run, requestId, output, isError);
    if (result !== 'ok' && result !== 'last') throw toolOutputRefusal(runId, requestId, result);
  }

  /**
   * A decision on a tool call the run waits on (its approval request): the first wins, the last
   * of the turn's resumes the run on any worker. `decision.by` names who took it. `check` looks at
   * the run (read whole, its pending approvals with it) first and throws to refuse the decision.
   */
  async decide(
    tenant: string,
    runId: string,
    requestId: string,
    decision: ApprovalDecision,
    check?: (run: RunRecord) => void,
  ): Promise<void> {
    const run = check ? await this.get(tenant, runId) : await this.#record(tenant, runId);
    check?.(run);
    const result = await this.engine.decide(runId, requestId, decision, { run });
    if (result !== 'ok' && result !== 'last') throw decisionRefusal(runId, requestId, result);
  }

  /**
   * A message from the user for a live run of the tenant's, taken at its next turn boundary
   * (`ERR_RUN_ENDED` once it has ended). The message's id.
   */
  async steer(tenant: string, runId: string, content: string): Promise<string> {
    await this.#record(tenant, runId);
    return this.engine.steer(runId, content);
  }

  /**
   * Decides with the answer token of its `approval.requested` webhook delivery instead of a
   * tenant's key: once, and only that call (`ERR_ANSWER_TOKEN_INVALID`, `ERR_ANSWER_TOKEN_USED`),
   * checked before anything is read, as {@link answerWithToken}.
   */
  async decideWithToken(
    runId: string,
    requestId: string,
    decision: ApprovalDecision,
    tokenHash: string,
  ): Promise<void> {
    const result = await this.engine.decide(runId, requestId, decision, { tokenHash });
    if (result !== 'ok' && result !== 'last') throw decisionRefusal(runId, requestId, result);
  }

  /**
   * The BullMQ job of a run, in the queue its record names (read here when
   * `record` is not given). Undefined once the job or the run is gone.
   */
  async getJob(runId: string, record?: RunRecord): Promise<Job<RunJobData> | undefined> {
    const queue = record ? (record.queue ?? this.#keys.queuePrefix) : await this.store.queueOf(runId);
    if (queue === undefined) return undefined;
    return (await this.#queue(queue).getJob(runId)) ?? undefined;
  }

  /** The queue of a BullMQ prefix: a current shard's, or one a run was queued on before a resize. */
  #queue(prefix: string): Queue<RunJobData> {
    let queue = this.#byPrefix.get(prefix);
    if (!queue) {
      queue = createRunQueue(this.#queueConnection, prefix, this.#telemetry);
      queue.on('error', (error) => {
        for (const listener of this.#errorListeners) listener(error);
      });
      this.#byPrefix.set(prefix, queue);
    }
    return queue;
  }

  /** The jobs of every shard in each of `states`, added up. */
  async jobCounts(...states: JobType[]): Promise<Record<string, number>> {
    const total: Record<string, number> = {};
    for (const counts of await Promise.all(this.queues.map((queue) => queue.getJobCounts(...states)))) {
      for (const [state, count] of Object.entries(counts)) total[state] = (total[state] ?? 0) + count;
    }
    return total;
  }

  /** Told of each queue's `error` events (BullMQ reports every reconnect attempt as one). */
  onQueueError(listener: (error: Error) => void): void {
    this.#errorListeners.push(listener);
  }

  /**
   * Cancels a run. A queued or suspended run is taken off the queue and ends
   * here; a running one is stopped by its worker, which hears the broadcast.
   * Either way `run.cancelled` is its last event. An `interrupt` stops a
   * running run at its next safe point instead of at once: when it next saves
   * its checkpoint, after the tool call or model turn in flight.
   */
  async cancel(tenant: string, runId: string, mode: 'cancel' | 'interrupt' = 'cancel'): Promise<RunStatus> {
    const run = await this.get(tenant, runId);
    const before = await this.engine.cancel(run, mode);
    if (before === 'missing') throw new QueueError('ERR_RUN_NOT_FOUND', `No run ${runId}.`);
    if (TERMINAL_STATUSES.includes(before)) {
      throw new QueueError('ERR_RUN_FINISHED', `Run ${runId} has already ended (${before}).`);
    }
    return before;
  }

  /**
   * Gives a scheduled run of the tenant's a new start time (epoch ms; one already past starts it
   * now): the run as it is then. `ERR_RUN_NOT_SCHEDULED` once its time has come, it has ended or a
   * cancel was asked for; `ERR_RUN_NOT_FOUND` for a run of another tenant.
   */
  async reschedule(tenant: string, runId: string, runAtMs: number): Promise<RunRecord> {
    const run = await this.get(tenant, runId);
    const result = await this.engine.reschedule(run, Math.max(runAtMs, Date.now()));
    if (result === 'missing') throw new QueueError('ERR_RUN_NOT_FOUND', `No run ${runId}.`);
    if (result !== 'ok') {
      const why = result === 'cancel' ? 'is being cancelled' : `is ${result}`;
      throw new QueueError(
        'ERR_RUN_NOT_SCHEDULED',
        `Run ${runId} ${why}: only a scheduled run can be given a new time.`,
      );
    }
    return this.get(tenant, runId);
  }

  /**
   * Deletes an ended run (or a scheduled one, cancelled first): its record, events and other keys,
   * and its crew children's (and theirs), and its entries in the tenant's index. Refused
   * (409) while the run or one of its children is active (any status but
   * completed, failed or cancelled: `ERR_RUN_ACTIVE`), for a session's run
   * (`ERR_RUN_IN_SESSION`: it goes with its session) and for a crew child
   * (`ERR_RUN_CREW_CHILD`: it goes with its root). The caller removes the
   * workspace. An ended run never becomes active again, so the check and the
   * removal need not be one step.
   */
  async delete(tenant: string, runId: string): Promise<RunRecord> {
    let run = await this.get(tenant, runId);
    // A scheduled run has not started: its delete cancels it (its job removed), then removes it.
    if (run.status === 'scheduled' && !run.sessionId && !run.parentRunId) {
      await this.engine.cancel(run, 'cancel');
      run = await this.get(tenant, runId);
    }
    if (run.sessionId) {
      throw new QueueError(
        'ERR_RUN_IN_SESSION',
        `Run ${runId} belongs to session ${run.sessionId}: delete the session instead (DELETE /v1/sessions/${run.sessionId}).`,
      );
    }
    if (run.parentRunId) {
      throw new QueueError(
        'ERR_RUN_CREW_CHILD',
        `Run ${runId} is a crew child of ${run.parentRunId}: delete its root run ${run.rootRunId ?? run.parentRunId} instead.`,
      );
    }
    const tree = await this.#tree(runId);
    const records = await this.store.getMany(tree);
    for (const [i, record] of records.entries()) {
      if (record && !TERMINAL_STATUSES.includes(record.status)) {
        const which = i === 0 ? `Run ${runId}` : `Crew child ${tree[i]} of run ${runId}`;
        throw new QueueError(
          'ERR_RUN_ACTIVE',
          `${which} is still active (${record.status}): cancel it (POST /v1/runs/${runId}/cancel) and delete it once it has ended.`,
        );
      }
    }
    await this.store.remove(tenant, tree);
    return run;
  }

  /** The run and every crew child under it, the run first. */
  async #tree(runId: string): Promise<string[]> {
    const ids = [runId];
    for (let i = 0; i < ids.length; i++) ids.push(...(await this.store.childIds(ids[i] as string)));
    return ids;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#byPrefix.values()].map((queue) => queue.close()));
  }
}

/** A run submitted into a session: which, and what to do when the session has a live run. */
export interface SessionLink {
  id: string;
  multitask: 'enqueue' | 'reject' | 'interrupt';
}

/**
 * Why an answer was refused, as the error to throw. A token that is not the question's says only
 * that (the same message whatever the run and the question: see `answerWithToken`).
 */
function answerRefusal(runId: string, requestId: string, result: Exclude<AnswerResult, 'ok'>): QueueError {
  switch (result) {
    case 'bad_token':
      return new QueueError(
        'ERR_ANSWER_TOKEN_INVALID',
        'This answer token does not answer this clarify request: a token answers only the question of the webhook delivery that carried it.',
      );
    case 'token_used':
      return new QueueError(
        'ERR_ANSWER_TOKEN_USED',
        `This answer token answered clarify request ${requestId} already; a token answers once.`,
      );
    case 'no_run':
      return new QueueError('ERR_RUN_NOT_FOUND', `No run ${runId}.`);
    case 'no_request':
      return new QueueError('ERR_CLARIFY_UNKNOWN', `Run ${runId} has no clarify request ${requestId}.`);
    case 'answered':
      return new QueueError(
        'ERR_CLARIFY_ALREADY_ANSWERED',
        `Clarify request ${requestId} was already answered.`,
      );
    case 'timed_out':
      return new QueueError(
        'ERR_CLARIFY_TIMED_OUT',
        `Clarify request ${requestId} timed out; the run continued without an answer.`,
      );
    case 'expired':
      return new QueueError(
        'ERR_CLARIFY_EXPIRED',
        `The deadline of clarify request ${requestId} has passed.`,
      );
    case 'ended':
      return new QueueError(
        'ERR_CLARIFY_NOT_PENDING',
        `Run ${runId} has ended; its question no longer waits.`,
      );
  }
}

/** Why an output was refused, as the error to throw. */
function toolOutputRefusal(
  runId: string,
  requestId: string,
  result: Exclude<ToolOutputResult, 'ok' | 'last'>,
): QueueError {
  switch (result) {
    case 'no_run':
      return new QueueError('ERR_RUN_NOT_FOUND', `No run ${runId}.`);
    case 'no_request':
      return new QueueError('ERR_TOOL_OUTPUT_UNKNOWN', `Run ${runId} has no client tool call ${requestId}.`);
    case 'received':
      return new QueueError(
        'ERR_TOOL_OUTPUT_ALREADY_POSTED',
        `The output of client tool call ${requestId} was posted already.`,
      );
    case 'timed_out':
      return new QueueError(
        'ERR_TOOL_OUTPUT_TIMED_OUT',
        `Client tool call ${requestId} timed out; the run went on without its output.`,
      );
    case 'expired':
      return new QueueError(
        'ERR_TOOL_OUTPUT_EXPIRED',
        `The deadline of client tool call ${requestId} has passed.`,
      );
    case 'ended':
      return new QueueError(
        'ERR_TOOL_OUTPUT_NOT_PENDING',
        `Run ${runId} has ended; its tool calls no longer wait.`,
      );
  }
}

function decisionRefusal(
  runId: string,
  requestId: string,
  result: Exclude<DecisionResult, 'ok' | 'last'>,
): QueueError {
  switch (result) {
    case 'bad_token':
      return new QueueError(
        'ERR_ANSWER_TOKEN_INVALID',
        'This answer token does not decide this approval request: a token decides only the request of the webhook delivery that carried it.',
      );
    case 'token_used':
      return new QueueError(
        'ERR_ANSWER_TOKEN_USED',
        `This answer token decided ${requestId} already; a token decides once.`,
      );
    case 'no_run':
      return new QueueError('ERR_RUN_NOT_FOUND', `No run ${runId}.`);
    case 'no_request':
      return new QueueError('ERR_APPROVAL_UNKNOWN', `Run ${runId} has no approval request ${requestId}.`);
    case 'decided':
      return new QueueError(
        'ERR_APPROVAL_ALREADY_DECIDED',
        `Approval request ${requestId} was decided already; the first decision won.`,
      );
    case 'timed_out':
      return new QueueError(
        'ERR_APPROVAL_TIMED_OUT',
        `Approval request ${requestId} timed out; the policy's onTimeout decided it.`,
      );
    case 'expired':
      return new QueueError(
        'ERR_APPROVAL_EXPIRED',
        `The deadline of approval request ${requestId} has passed.`,
      );
    case 'ended':
      return new QueueError(
        'ERR_APPROVAL_NOT_PENDING',
        `Run ${runId} has ended; its tool calls no longer wait for a decision.`,
      );
  }
}

/** A run's job data: its id and tenant, and what else it carries only when there is something. */
function jobData(run: NewRun, requestId: string | undefined): RunJobData {
  const data: RunJobData = { runId: run.id, tenant: run.tenant };
  if (run.crew?.parentRunId) data.parentRunId = run.crew.parentRunId;
  if (requestId) data.requestId = requestId;
  if (run.runAtMs !== undefined) data.scheduled = true;
  return data;
}

/**
 * The `enqueue run` span of a submission, child of the active context (the
 * API request's), and its context serialised for the job: the worker's
 * processing of the job continues the trace from it.
 */
function enqueueSpan(telemetry: Telemetry, run: NewRun) {
  const { tracer, contextManager } = telemetry;
  const active = contextManager.active();
  const span = tracer.startSpan('enqueue run', { kind: SpanKind.PRODUCER }, active);
  span.setAttributes({ 'tether.run.id': run.id, 'tether.queue': run.queue ?? '' });
  return { span, metadata: contextManager.getMetadata(span.setSpanOnContext(active)) };
}

/** A stable hash of a request body: the same fields in any order hash alike. */
export function hashBody(body: unknown): string {
  return createHash('sha256').update(stableStringify(body)).digest('hex');
}

function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
}
