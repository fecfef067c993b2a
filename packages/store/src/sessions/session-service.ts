import {
  type ApprovalDecision,
  type CreateSessionBody,
  type CreateSessionRunBody,
  newId,
  type RunEventInput,
  runSessionTag,
  type Session,
  sessionTag,
  TERMINAL_STATUSES,
  type TranscriptEntryView,
} from '@tether/protocol';
import type { ChainableCommander } from 'ioredis';
import { QueueError } from '../errors.js';
import type { RunRecord, StoredBody } from '../runs/records.js';
import type { RunService } from '../runs/run-service.js';
import type { SessionRecord } from './session-store.js';
import * as sessions from './session-store.js';

export type { SessionRecord } from './session-store.js';

export interface SessionServiceOptions {
  runs: RunService;
  /** How long `delete(…, { cancel: true })` waits for the session's runs to stop (ms). Default 10 s. */
  cancelWaitMs?: number;
}

/**
 * What the API does with sessions: create, read, list, delete, and send a
 * message (a run of the session). Stateless, like `RunService`, on which it
 * builds: a session's run is a run, with its keys in the session's hash slot.
 */
export class SessionService {
  readonly #runs: RunService;
  readonly #cancelWaitMs: number;

  constructor(options: SessionServiceOptions) {
    this.#runs = options.runs;
    this.#cancelWaitMs = options.cancelWaitMs ?? 10_000;
  }

  get #store() {
    return this.#runs.store;
  }

  async create(tenant: string, body: CreateSessionBody = {}): Promise<Session> {
    const id = newId('ses');
    const createdAtMs = Date.now();
    await sessions.createSession(this.#store, {
      id,
      tenant,
      createdAtMs,
      defaults: body.defaults,
      metadata: body.metadata,
      files: body.files,
    });
    const at = new Date(createdAtMs).toISOString();
    return {
      id,
      status: 'idle',
      runs: 0,
      lastRunId: null,
      createdAt: at,
      updatedAt: at,
      metadata: body.metadata ?? {},
    };
  }

  /** The stored session, if it belongs to `tenant`; otherwise `ERR_SESSION_NOT_FOUND`. */
  async record(tenant: string, sessionId: string): Promise<SessionRecord> {
    const record = await sessions.readSession(this.#store, sessionId);
    if (!record || record.tenant !== tenant) {
      throw new QueueError('ERR_SESSION_NOT_FOUND', `No session ${sessionId}.`);
    }
    return record;
  }

  /** The session as clients see it: its status and question come from the run at the head of its queue. */
  async get(tenant: string, sessionId: string): Promise<Session> {
    return this.#view(await this.record(tenant, sessionId));
  }

  async list(
    tenant: string,
    options: { limit: number; cursor?: string | undefined },
  ): Promise<{ data: Session[]; nextCursor: string | null }> {
    const page = await sessions.listSessions(this.#store, tenant, options);
    return {
      data: await Promise.all(page.sessions.map((record) => this.#view(record))),
      nextCursor: page.nextCursor,
    };
  }

  /**
   * Sends a message: a run of the session, whose body's fields override the
   * session's defaults. With a live run already: `enqueue` (the default) runs
   * it after; `reject` is `ERR_SESSION_BUSY`; `interrupt` stops the runs ahead
   * (a running one at its next safe point), then it runs; `steer` here is
   * `enqueue` (the caller sends the input into a live run with `steer` instead,
   * before checking the body as a new run's). `hashOf`: the body as submitted,
   * when `body` has its secrets sealed (see `RunService.submit`).
   */
  async submit(
    tenant: string,
    sessionId: string,
    body: StoredBody & Pick<CreateSessionRunBody, 'multitask'>,
    options: {
      idempotencyKey?: string | undefined;
      hashOf?: CreateSessionRunBody | undefined;
      requestId?: string | undefined;
      /** When the run starts (epoch ms; see `RunService.submit`). */
      runAtMs?: number | undefined;
      /** A deadline to start by (epoch ms; see `RunService.submit`). */
      expiresAtMs?: number | undefined;
      /** A schedule's firing: the schedule's id and the run's id (see `RunService.submit`). */
      scheduleId?: string | undefined;
      runId?: string | undefined;
      next?: RunEventInput | undefined;
    } = {},
  ): Promise<{ run: RunRecord; created: boolean }> {
    const session = await this.record(tenant, sessionId);
    const { multitask = 'enqueue', ...own } = body;
    const spec: StoredBody = { ...session.defaults, ...own };
    // As the run's spec is built, from the body as submitted.
    const { multitask: _multitask, ...submitted } = options.hashOf ?? {};
    const hashOf = options.hashOf === undefined ? undefined : { ...session.defaults, ...submitted };
    const result = await this.#runs.submit(tenant, spec, {
      idempotencyKey: options.idempotencyKey,
      session: { id: sessionId, multitask: multitask === 'steer' ? 'enqueue' : multitask },
      hashOf,
      requestId: options.requestId,
      runAtMs: options.runAtMs,
      expiresAtMs: options.expiresAtMs,
      scheduleId: options.scheduleId,
      runId: options.runId,
      next: options.next,
    });
    if (multitask === 'interrupt' && result.created)
      await this.#interruptAhead(tenant, sessionId, result.run.id);
    return result;
  }

  /** A page of the transcript: `cursor` is the offset of the first entry (from 0). */
  async messages(
    tenant: string,
    sessionId: string,
    options: { limit: number; cursor?: string | undefined },
  ): Promise<{ data: TranscriptEntryView[]; nextCursor: string | null }> {
    await this.record(tenant, sessionId);
    const offset = options.cursor === undefined ? 0 : Number(options.cursor);
    const page = await sessions.readTranscript(this.#store, sessionId, offset, options.limit);
    return { data: page.entries, nextCursor: page.next === null ? null : String(page.next) };
  }

  /**
   * Answers a question of one of the session's runs, knowing only its request
   * id (as the WebSocket gateway's `clarify_response` does): the run that
   * asked it is found among the session's runs, newest first, in one round
   * trip (their keys share the session's slot); then as `RunService.answer`,
   * first answer wins. `ERR_CLARIFY_UNKNOWN` when no run of the session asked it.
   */
  async answer(tenant: string, sessionId: string, requestId: string, answer: string): Promise<string> {
    const runId = await this.#runOfRequest(tenant, sessionId, requestId, [
      'ERR_CLARIFY_UNKNOWN',
      'clarify request',
    ]);
    await this.#runs.answer(tenant, runId, requestId, answer);
    return runId;
  }

  /**
   * Posts the output of a client tool call of one of the session's runs,
   * knowing only its request id (as the gateway's `tool_response` does): the
   * run that asked is found as for {@link answer}, then as
   * `RunService.postToolOutput`, first output wins.
   * `ERR_TOOL_OUTPUT_UNKNOWN` when no run of the session asked it.
   */
  async postToolOutput(
    tenant: string,
    sessionId: string,
    requestId: string,
    output: string,
    isError = false,
  ): Promise<string> {
    const runId = await this.#runOfRequest(tenant, sessionId, requestId, [
      'ERR_TOOL_OUTPUT_UNKNOWN',
      'client tool call',
    ]);
    await this.#runs.postToolOutput(tenant, runId, requestId, output, isError);
    return runId;
  }

  /**
   * A decision on a call a run of the session holds (its approval request): on `runId` when given
   * (a crew child of one of the session's runs, whose id carries the session's tag), else found
   * among the session's runs; then decided as `POST /v1/runs/:id/approvals/:requestId` does
   * (`check`, as `RunService.decide`'s). The run's id.
   */
  async decide(
    tenant: string,
    sessionId: string,
    requestId: string,
    decision: ApprovalDecision,
    check?: (run: RunRecord) => void,
    runId?: string,
  ): Promise<string> {
    if (runId !== undefined) {
      await this.record(tenant, sessionId);
      if (runSessionTag(runId) !== sessionTag(sessionId)) {
        throw new QueueError('ERR_APPROVAL_UNKNOWN', `Session ${sessionId} has no run ${runId}.`);
      }
      await this.#runs.decide(tenant, runId, requestId, decision, check);
      return runId;
    }
    runId = await this.#runOfRequest(tenant, sessionId, requestId, [
      'ERR_APPROVAL_UNKNOWN',
      'approval request',
    ]);
    await this.#runs.decide(tenant, runId, requestId, decision, check);
    return runId;
  }

  /**
   * The session's run whose waitpoint holds request `requestId` (the newest that does, in one round
   * trip), else `unknown`'s error: its code, and what the request is in its message.
   */
  async #runOfRequest(
    tenant: string,
    sessionId: string,
    requestId: string,
    unknown: [code: 'ERR_CLARIFY_UNKNOWN' | 'ERR_TOOL_OUTPUT_UNKNOWN' | 'ERR_APPROVAL_UNKNOWN', what: string],
  ): Promise<string> {
    await this.record(tenant, sessionId);
    const runId = await this.#runThatHas(sessionId, (pipeline, run) =>
      pipeline.hexists(this.#store.keys.run(run).waitpoint, `s:${requestId}`),
    );
    if (runId === undefined) {
      throw new QueueError(unknown[0], `Session ${sessionId} has no ${unknown[1]} ${requestId}.`);
    }
    return runId;
  }

  /**
   * The session's newest run for which `probe` (queued on a pipeline) answers
   * 1, found in one round trip: the session's runs share its slot.
   */
  async #runThatHas(
    sessionId: string,
    probe: (pipeline: ChainableCommander, runId: string) => void,
  ): Promise<string | undefined> {
    const runIds = (
      await this.#store.redis.lrange(this.#store.keys.session(sessionId).runs, 0, -1)
    ).reverse();
    if (runIds.length === 0) return undefined;
    const pipeline = this.#store.redis.pipeline();
    for (const id of runIds) probe(pipeline, id);
    const replies = (await pipeline.exec()) ?? [];
    const at = replies.findIndex(([error, found]) => {
      if (error) throw error;
      return found === 1;
    });
    return at >= 0 ? runIds[at] : undefined;
  }

  /** Cancels the session's live runs (the active one and those queued behind it); returns their ids. */
  /**
   * A message for the session's live run (the head of its queue), taken at its next turn boundary
   * (see `RunService.steer`): `ERR_SESSION_IDLE` when it has none. The run's and message's ids.
   */
  async steer(
    tenant: string,
    sessionId: string,
    content: string,
  ): Promise<{ runId: string; messageId: string }> {
    return this.steerLive(await this.record(tenant, sessionId), tenant, content);
  }

  /** {@link steer}, the session's record read already. */
  async steerLive(
    session: SessionRecord,
    tenant: string,
    content: string,
  ): Promise<{ runId: string; messageId: string }> {
    const sessionId = session.id;
    const runId = session.queue[0];
    if (runId === undefined) {
      throw new QueueError(
        'ERR_SESSION_IDLE',
        `Session ${sessionId} has no live run to take a message: send it as a message of the session instead.`,
      );
    }
    return { runId, messageId: await this.#runs.steer(tenant, runId, content) };
  }

  async cancelLive(tenant: string, sessionId: string): Promise<string[]> {
    const session = await this.record(tenant, sessionId);
    // The runs behind first, so none of them starts when the active one ends.
    for (const runId of [...session.queue].reverse()) await this.#cancelQuietly(tenant, runId, 'cancel');
    return session.queue;
  }

  /**
   * Deletes the session, its transcript, its runs' records and events. With a
   * live run: `ERR_SESSION_BUSY`, unless `cancel`, which cancels the live runs
   * first and waits (up to `cancelWaitMs`) for them to end. The caller removes
   * the workspace.
   */
  async delete(tenant: string, sessionId: string, options: { cancel?: boolean } = {}): Promise<void> {
    let session = await this.record(tenant, sessionId);
    if (session.queue.length > 0) {
      if (!options.cancel) {
        throw new QueueError(
          'ERR_SESSION_BUSY',
          `Session ${sessionId} has a live run (${session.queue[0]}): cancel it first, or delete with ?cancel=true.`,
        );
      }
      await this.cancelLive(tenant, sessionId);
    }
    const deadline = Date.now() + this.#cancelWaitMs;
    for (;;) {
      const runIds = await this.#store.redis.lrange(this.#store.keys.session(sessionId).runs, 0, -1);
      const result = await sessions.deleteSession(this.#store, sessionId, tenant, runIds);
      if (result === 'ok' || result === 'missing') return;
      if (result === 'busy' && Date.now() > deadline) {
        throw new QueueError(
          'ERR_SESSION_BUSY',
          `Session ${sessionId} still has a live run ${Math.round(this.#cancelWaitMs / 1000)} s after its cancel; try again.`,
        );
      }
      if (result === 'busy') await new Promise((resolve) => setTimeout(resolve, 100));
      session = await this.record(tenant, sessionId);
    }
  }

  async #interruptAhead(tenant: string, sessionId: string, runId: string): Promise<void> {
    const { queue } = await this.record(tenant, sessionId);
    const ahead = queue.slice(0, Math.max(0, queue.indexOf(runId)));
    // The last ahead first, so none of them starts when the active one ends.
    for (const id of ahead.reverse()) await this.#cancelQuietly(tenant, id, 'interrupt');
  }

  async #cancelQuietly(tenant: string, runId: string, mode: 'cancel' | 'interrupt'): Promise<void> {
    try {
      await this.#runs.cancel(tenant, runId, mode);
    } catch (error) {
      // Ended (or gone) meanwhile: nothing to stop.
      if (
        !(error instanceof QueueError) ||
        (error.code !== 'ERR_RUN_FINISHED' && error.code !== 'ERR_RUN_NOT_FOUND')
      ) {
        throw error;
      }
    }
  }

  async #view(record: SessionRecord): Promise<Session> {
    const headId = record.queue[0];
    const head = headId ? await this.#store.get(headId) : undefined;
    const live = head && !TERMINAL_STATUSES.includes(head.status) ? head : undefined;
    const session: Session = {
      id: record.id,
      status: sessions.sessionStatus(live),
      runs: record.runs,
      lastRunId: record.lastRunId,
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
      metadata: record.metadata,
    };
    if (live?.pendingClarify) session.pendingClarify = { ...live.pendingClarify, runId: live.id };
    return session;
  }
}
