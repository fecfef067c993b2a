import type {
  ApprovalDecisionBody,
  Batch,
  CancelBatchResponse,
  CancelRunResponse,
  CreateBatchResponse,
  CreateRunBody,
  CreateRunResponse,
  EventPage,
  ModelCatalog,
  RescheduleRunBody,
  Run,
  RunEvent,
  RunFileList,
  RunList,
  RunStatus,
  SteerMessageResponse,
  TenantBudgetsView,
  ToolCatalog,
  UsageReport,
} from '@tether/protocol';
import { APPROVAL_DECISIONS, TERMINAL_STATUSES, TetherError } from '@tether/protocol';
import {
  errorFromResponse,
  invalidOption,
  isRecord,
  TetherApiError,
  TetherConnectionError,
  TetherProtocolError,
  TetherRateLimitError,
  TetherTimeoutError,
} from './errors.js';
import { TetherMcpServers } from './mcp-servers.js';
import { TetherMemory } from './memory.js';
import type { RequestOptions, RequestSpec, SubmitOptions } from './request.js';
import {
  type ResultType,
  type RunBodyWithOutput,
  type RunToCompletionOptions,
  type RunWithResult,
  runToCompletion,
} from './run-to-completion.js';
import { TetherSchedules } from './schedules.js';
import { TetherSessions } from './sessions.js';
import { TetherSkills } from './skills.js';
import { sleep } from './sleep.js';
import { followRunEvents, type StreamOptions } from './stream.js';
import { type RunTree, readRunTree, type TreeOptions } from './tree.js';
import { TetherWebhooks } from './webhooks.js';

/** A page of the event log, its events typed as the discriminated `RunEvent` union. */
export type RunEventPage = Omit<EventPage, 'data'> & { data: RunEvent[] };

/** When and how often a failed request is sent again. */
export interface RetryOptions {
  /** Retries after the first attempt (default 2; 0 turns retrying off). */
  limit?: number;
  /** Backoff before the first retry, doubled each time (default 300 ms). */
  initialDelayMs?: number;
  /** Longest backoff (default 5 s). */
  maxDelayMs?: number;
  /** A 429 whose `Retry-After` is longer than this is thrown instead of waited out (default 60 s). */
  maxRetryAfterMs?: number;
}

export interface TetherClientOptions {
  /** The API's address, such as `http://127.0.0.1:3000` (a path prefix is kept). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /** Per request: until the body is read, or for streams until the response starts (default 30 s). */
  timeoutMs?: number;
  /**
   * Retries with exponential backoff: a 429 (after its `Retry-After`) for any
   * request; a lost connection, a timeout or a 502/503/504 only for requests
   * that are safe to repeat (GETs, and submits with an idempotency key).
   * `false` or `0` turns it off.
   */
  retry?: number | false | RetryOptions;
}

export interface ListOptions extends RequestOptions {
  status?: RunStatus;
  limit?: number;
  cursor?: string;
  /**
   * Only runs whose metadata has every pair (string equality, ANDed), sent as
   * `metadata.<key>=<value>`: at most 8 pairs, keys of 1 to 128 characters,
   * values of at most 256. A filtered page may hold fewer than `limit` runs
   * with a `nextCursor` to go on.
   */
  metadata?: Record<string, string>;
}

export interface EventsPageOptions extends RequestOptions {
  /** Events after this id. */
  after?: string;
  limit?: number;
}

export interface WaitOptions extends RequestOptions {
  /**
   * `terminal` (default): until the run finishes. `input`: also stop when it
   * waits for an answer. A run waiting for its crew children
   * (`waiting_for_children`) is live: the polling goes on.
   */
  until?: 'terminal' | 'input';
  /** First poll interval, doubled after each unchanged poll (default 500 ms). */
  intervalMs?: number;
  /** Longest poll interval (default 5 s). */
  maxIntervalMs?: number;
}

interface ResolvedRetry {
  limit: number;
  initialDelayMs: number;
  maxDelayMs: number;
  maxRetryAfterMs: number;
}

const TERMINAL: ReadonlySet<RunStatus> = new Set(TERMINAL_STATUSES);
const RETRY_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * A typed client of the Tether HTTP API.
 *
 * ```ts
 * const client = new TetherClient({ baseUrl: 'http://127.0.0.1:3000', apiKey });
 * const { id } = await client.submit({ input: 'Summarise README.md' });
 * for await (const event of client.stream(id)) console.log(event.type);
 * ```
 */
export class TetherClient {
  readonly baseUrl: string;
  /** Sessions: conversations of runs (`/v1/sessions`). */
  readonly sessions: TetherSessions;
  /** Runs driven from here to their end. */
  readonly runs: {
    /**
     * Submits `body`, answers each client tool call through `onToolCall`
     * (`tool.requested` → `POST /v1/runs/:id/tool-outputs/:requestId`),
     * decides each approval request through `onApprovalRequest`
     * (`approval.requested` → `POST /v1/runs/:id/approvals/:requestId`), and
     * resolves with the run once it has ended. With `output`, its `result` is typed: `Static<S>`
     * of a TypeBox `output.schema`, else the type parameter `R` (default `unknown`).
     */
    runToCompletion<R = never, S extends Record<string, unknown> = Record<string, unknown>>(
      body: RunBodyWithOutput<S>,
      options?: RunToCompletionOptions,
    ): Promise<RunWithResult<ResultType<R, S>>>;
  };
  /** Memory: what runs saved for later runs, per scope (`/v1/memory`). */
  readonly memory: TetherMemory;
  /** The tenant's skills (`/v1/skills`). */
  readonly skills: TetherSkills;
  /** The tenant's registered MCP servers (`/v1/mcp-servers`). */
  readonly mcpServers: TetherMcpServers;
  /** The tenant's webhook endpoints and their deliveries (`/v1/webhooks`). */
  readonly webhooks: TetherWebhooks;
  /** The tenant's schedules and the runs they made (`/v1/schedules`). */
  readonly schedules: TetherSchedules;
  private readonly apiKey: string | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;
  private readonly retryPolicy: ResolvedRetry;

  constructor(options: TetherClientOptions) {
    if (!isRecord(options)) throw invalidOption('TetherClient needs an options object with a baseUrl');
    this.baseUrl = normaliseBaseUrl(options.baseUrl);
    if (options.apiKey !== undefined && (typeof options.apiKey !== 'string' || options.apiKey === '')) {
      throw invalidOption('apiKey must be a non-empty string when given');
    }
    this.apiKey = options.apiKey;
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function')
      throw invalidOption('fetch must be a function (no global fetch found)');
    // Browsers' fetch throws "Illegal invocation" when called as a method of another object.
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.timeoutMs = options.timeoutMs ?? 30_000;
    if (!(Number.isFinite(this.timeoutMs) && this.timeoutMs > 0)) {
      throw invalidOption(`timeoutMs must be a number > 0 (got ${options.timeoutMs})`);
    }
    this.retryPolicy = resolveRetry(options.retry);
    this.sessions = new TetherSessions({
      baseUrl: this.baseUrl,
      json: (spec) => this.json(spec),
      openStream: (path, token, lastEventId, signal) => this.openStream(path, token, lastEventId, signal),
      idempotencyKey: (given) =>
        given ?? (this.retryPolicy.limit > 0 ? globalThis.crypto.randomUUID() : undefined),
    });
    this.runs = {
      runToCompletion: <R = never, S extends Record<string, unknown> = Record<string, unknown>>(
        body: RunBodyWithOutput<S>,
        options?: RunToCompletionOptions,
      ) => runToCompletion<R, S>(this, body, options),
    };
    this.memory = new TetherMemory({ json: (spec) => this.json(spec) });
    this.skills = new TetherSkills({ json: (spec) => this.json(spec) });
    this.mcpServers = new TetherMcpServers({ json: (spec) => this.json(spec) });
    this.webhooks = new TetherWebhooks({ json: (spec) => this.json(spec) });
    this.schedules = new TetherSchedules({ json: (spec) => this.json(spec) });
  }

  /** `POST /v1/runs`: queues a run. */
  async submit(body: CreateRunBody, options: SubmitOptions = {}): Promise<CreateRunResponse> {
    const key =
      options.idempotencyKey ?? (this.retryPolicy.limit > 0 ? globalThis.crypto.randomUUID() : undefined);
    const result = await this.json({
      method: 'POST',
      path: '/v1/runs',
      body,
      headers: key === undefined ? {} : { 'idempotency-key': key },
      signal: options.signal,
      idempotent: key !== undefined,
    });
    if (!isRecord(result) || typeof result.id !== 'string') {
      throw new TetherProtocolError('POST /v1/runs answered without a run id');
    }
    return result as unknown as CreateRunResponse;
  }

  /** `GET /v1/runs/:id`. */
  async get(id: string, options: RequestOptions = {}): Promise<Run> {
    const result = await this.json({
      method: 'GET',
      path: runPath(id),
      signal: options.signal,
      idempotent: true,
    });
    if (!isRecord(result) || typeof result.status !== 'string') {
      throw new TetherProtocolError(`GET ${runPath(id)} answered without a run status`);
    }
    return result as unknown as Run;
  }

  /**
   * A crew run's tree: `GET /v1/runs/:id` for the run, then for each child it
   * lists (`children`), depth first, under the same key. A child gone by the
   * time it is read (404) stays as its parent listed it, marked
   * `unread: 'not_found'`; the
   * reading stops at `maxDepth` levels (5) and `maxRuns` runs (200), marking
   * what it left out.
   */
  async tree(id: string, options: TreeOptions = {}): Promise<RunTree & { run: Run }> {
    return readRunTree((runId, signal) => this.get(runId, signal ? { signal } : {}), id, options);
  }

  /** `GET /v1/runs`: the caller's runs, newest first, one page (`nextCursor` is null on the last). */
  async list(options: ListOptions = {}): Promise<RunList> {
    if (options.limit !== undefined && !(Number.isInteger(options.limit) && options.limit > 0)) {
      throw invalidOption(`list limit must be an integer > 0 (got ${options.limit})`);
    }
    const metadata: Record<string, string> = {};
    for (const [key, value] of Object.entries(options.metadata ?? {})) {
      if (key === '' || typeof value !== 'string') {
        throw invalidOption(
          `list metadata must map keys to strings (got ${JSON.stringify(key)}: ${typeof value})`,
        );
      }
      metadata[`metadata.${key}`] = value;
    }
    const result = await this.json({
      method: 'GET',
      path: '/v1/runs',
      query: { status: options.status, limit: options.limit, cursor: options.cursor, ...metadata },
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as RunList;
    throw new TetherProtocolError('GET /v1/runs answered without a data array');
  }

  /**
   * Polls `GET /v1/runs/:id` until the run is terminal (or, with
   * `until: 'input'`, waiting for an answer), backing off exponentially while
   * nothing changes.
   */
  async wait(id: string, options: WaitOptions = {}): Promise<Run> {
    const until = options.until ?? 'terminal';
    if (until !== 'terminal' && until !== 'input') {
      throw invalidOption(`wait until must be 'terminal' or 'input' (got ${String(until)})`);
    }
    const intervalMs = options.intervalMs ?? 500;
    const maxIntervalMs = options.maxIntervalMs ?? 5_000;
    if (!(intervalMs > 0)) throw invalidOption(`wait intervalMs must be > 0 (got ${intervalMs})`);
    if (!(maxIntervalMs >= intervalMs)) {
      throw invalidOption(`wait maxIntervalMs must be >= intervalMs (${intervalMs}) (got ${maxIntervalMs})`);
    }
    let delay = intervalMs;
    let previous: RunStatus | undefined;
    while (true) {
      const run = await this.get(id, { signal: options.signal });
      if (TERMINAL.has(run.status)) return run;
      if (until === 'input' && run.status === 'waiting_for_input') return run;
      if (run.status !== previous) {
        previous = run.status;
        delay = intervalMs;
      }
      await sleep(delay, options.signal);
      delay = Math.min(maxIntervalMs, delay * 2);
    }
  }

  /**
   * `POST /v1/runs/:id/cancel`: answers with the status the run had. A queued
   * or waiting run ends at once, a running one at its next step. A finished
   * run throws `TetherConflictError`.
   */
  async cancel(id: string, options: RequestOptions = {}): Promise<CancelRunResponse> {
    const result = await this.json({
      method: 'POST',
      path: `${runPath(id)}/cancel`,
      signal: options.signal,
      idempotent: false,
    });
    if (!isRecord(result) || typeof result.status !== 'string') {
      throw new TetherProtocolError(`POST ${runPath(id)}/cancel answered without a status`);
    }
    return result as unknown as CancelRunResponse;
  }

  /**
   * `POST /v1/batches`: many runs made all or none (1 to 1,000 bodies), the batch's id and its runs'
   * ids in the order given. A refused body throws the API's error, its message naming the index
   * (`runs[3]: …`). Not retried: a batch has no idempotency key.
   */
  async submitBatch(
    runs: readonly CreateRunBody[],
    options: { metadata?: Record<string, unknown>; signal?: AbortSignal | undefined } = {},
  ): Promise<CreateBatchResponse> {
    const result = await this.json({
      method: 'POST',
      path: '/v1/batches',
      body: { runs, ...(options.metadata ? { metadata: options.metadata } : {}) },
      signal: options.signal,
      idempotent: false,
    });
    if (!isRecord(result) || typeof result.id !== 'string' || !Array.isArray(result.runIds)) {
      throw new TetherProtocolError('POST /v1/batches answered without a batch id and run ids');
    }
    return result as unknown as CreateBatchResponse;
  }

  /** `GET /v1/batches/:id`: the batch's runs counted by status, and a page of them. */
  async batch(
    id: string,
    options: { cursor?: string; limit?: number; signal?: AbortSignal | undefined } = {},
  ): Promise<Batch> {
    const query = new URLSearchParams();
    if (options.cursor !== undefined) query.set('cursor', options.cursor);
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    const path = `/v1/batches/${encodeURIComponent(id)}${query.size > 0 ? `?${query}` : ''}`;
    const result = await this.json({ method: 'GET', path, signal: options.signal, idempotent: true });
    if (!isRecord(result) || typeof result.status !== 'string') {
      throw new TetherProtocolError(`GET ${path} answered without a batch status`);
    }
    return result as unknown as Batch;
  }

  /** `POST /v1/batches/:id/cancel`: cancels the batch's live runs; how many there were. */
  async cancelBatch(id: string, options: RequestOptions = {}): Promise<CancelBatchResponse> {
    const path = `/v1/batches/${encodeURIComponent(id)}/cancel`;
    const result = await this.json({ method: 'POST', path, signal: options.signal, idempotent: true });
    if (!isRecord(result) || typeof result.cancelled !== 'number') {
      throw new TetherProtocolError(`POST ${path} answered without a count`);
    }
    return result as unknown as CancelBatchResponse;
  }

  /**
   * `DELETE /v1/runs/:id`: an ended run, its events, crew children and
   * workspace are gone. An active run (or child), a session's run and a crew
   * child alone throw `TetherConflictError` (`ERR_RUN_ACTIVE`,
   * `ERR_RUN_IN_SESSION`, `ERR_RUN_CREW_CHILD`).
   */
  async delete(id: string, options: RequestOptions = {}): Promise<void> {
    await this.json({
      method: 'DELETE',
      path: runPath(id),
      signal: options.signal,
      // Sent again after a lost connection, a delete that happened would answer 404.
      idempotent: false,
    });
  }

  /**
   * `PATCH /v1/runs/:id`: a scheduled run's new start time, `{ runAt }` (ISO 8601) or
   * `{ delayMs }`; the run as it is then. A run that is not scheduled any more throws
   * `TetherConflictError` (`ERR_RUN_NOT_SCHEDULED`).
   */
  async reschedule(id: string, body: RescheduleRunBody, options: RequestOptions = {}): Promise<Run> {
    const result = await this.json({
      method: 'PATCH',
      path: runPath(id),
      body,
      signal: options.signal,
      // The same time sent again sets the same time.
      idempotent: true,
    });
    if (!isRecord(result) || typeof result.status !== 'string') {
      throw new TetherProtocolError(`PATCH ${runPath(id)} answered without a run status`);
    }
    return result as unknown as Run;
  }

  /**
   * `POST /v1/runs/:id/retry`: a failed or cancelled run starts again as a
   * new run (its `retryOf` names the old one); answers as `submit`. Any other
   * status throws `TetherConflictError` (`ERR_RUN_NOT_RETRYABLE`). With
   * retries on and no `idempotencyKey`, the client makes one, as `submit` does.
   */
  async retry(id: string, options: SubmitOptions = {}): Promise<CreateRunResponse> {
    const key =
      options.idempotencyKey ?? (this.retryPolicy.limit > 0 ? globalThis.crypto.randomUUID() : undefined);
    const result = await this.json({
      method: 'POST',
      path: `${runPath(id)}/retry`,
      headers: key === undefined ? {} : { 'idempotency-key': key },
      signal: options.signal,
      idempotent: key !== undefined,
    });
    if (!isRecord(result) || typeof result.id !== 'string') {
      throw new TetherProtocolError(`POST ${runPath(id)}/retry answered without a run id`);
    }
    return result as unknown as CreateRunResponse;
  }

  /**
   * `POST /v1/runs/:id/clarify/:requestId`: answers a pending question.
   * Already answered, timed out or not pending: `TetherConflictError`; unknown
   * run or request: `TetherNotFoundError`.
   */
  async answer(id: string, requestId: string, answer: string, options: RequestOptions = {}): Promise<void> {
    if (typeof answer !== 'string') throw invalidOption('answer must be a string');
    await this.json({
      method: 'POST',
      path: `${runPath(id)}/clarify/${encodeURIComponent(requestId)}`,
      body: { answer },
      signal: options.signal,
      idempotent: false,
    });
  }

  /**
   * `POST /v1/runs/:id/tool-outputs/:requestId`: the output of a client tool
   * call (`isError`: the call failed). Already posted, timed out or the run
   * ended: `TetherConflictError`; unknown run or request: `TetherNotFoundError`.
   */
  async postToolOutput(
    id: string,
    requestId: string,
    output: string,
    options: RequestOptions & { isError?: boolean } = {},
  ): Promise<void> {
    if (typeof output !== 'string') throw invalidOption('output must be a string');
    await this.json({
      method: 'POST',
      path: `${runPath(id)}/tool-outputs/${encodeURIComponent(requestId)}`,
      body: { output, isError: options.isError === true },
      signal: options.signal,
      idempotent: false,
    });
  }

  /**
   * `POST /v1/runs/:id/approvals/:requestId`: a decision on a tool call the run's approval policy
   * holds: `{ decision: 'approve' }`, `{ decision: 'edit', arguments }` or
   * `{ decision: 'reject', message? }`. Edited arguments the tool refuses: `TetherApiError` (400);
   * decided already, past the deadline or the run ended: `TetherConflictError`; unknown run or
   * request: `TetherNotFoundError`.
   */
  async decide(
    id: string,
    requestId: string,
    decision: ApprovalDecisionBody,
    options: RequestOptions = {},
  ): Promise<void> {
    if (!APPROVAL_DECISIONS.includes(decision?.decision)) {
      throw invalidOption(`decision must be one of ${APPROVAL_DECISIONS.join(', ')}`);
    }
    await this.json({
      method: 'POST',
      path: `${runPath(id)}/approvals/${encodeURIComponent(requestId)}`,
      body: decision,
      signal: options.signal,
      idempotent: false,
    });
  }

  /**
   * `POST /v1/runs/:id/messages`: a message from the user to a live run, without stopping it. The
   * run takes it at its next turn boundary (after the model turn under way and its tool results),
   * as the user's: `message.received` now, `message.delivered` then, or `message.undelivered` if
   * the run ends first. A waiting run takes it when it next wakes; the message does not wake it.
   * An ended run throws `TetherConflictError` (`ERR_RUN_ENDED`), as does one holding 20 messages
   * it has not taken (`ERR_RUN_MESSAGES_LIMIT`); an unknown run throws `TetherNotFoundError`. Never
   * repeated after a lost connection: a repeat could reach the run twice.
   */
  async steer(id: string, content: string, options: RequestOptions = {}): Promise<SteerMessageResponse> {
    if (typeof content !== 'string' || content === '') {
      throw invalidOption('content must be a non-empty string');
    }
    const result = await this.json({
      method: 'POST',
      path: `${runPath(id)}/messages`,
      body: { content },
      signal: options.signal,
      idempotent: false,
    });
    if (!isRecord(result) || typeof result.messageId !== 'string') {
      throw new TetherProtocolError(`POST ${runPath(id)}/messages answered without a message id`);
    }
    return { messageId: result.messageId };
  }

  /** `GET /v1/runs/:id/files`: the regular files the run left in its workspace, by path. */
  async files(id: string, options: RequestOptions = {}): Promise<RunFileList> {
    const result = await this.json({
      method: 'GET',
      path: `${runPath(id)}/files`,
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.files)) return result as unknown as RunFileList;
    throw new TetherProtocolError(`GET ${runPath(id)}/files answered without a files array`);
  }

  /** `GET /v1/runs/:id/files/<path>`: downloads one file of the run's workspace. */
  async file(id: string, path: string, options: RequestOptions = {}): Promise<Blob> {
    const segments = path.split('/').filter((s) => s !== '' && s !== '.');
    if (segments.length === 0) throw invalidOption('file path must name a file');
    return this.send(
      {
        method: 'GET',
        path: `${runPath(id)}/files/${segments.map(encodeURIComponent).join('/')}`,
        headers: { accept: '*/*' },
        signal: options.signal,
        idempotent: true,
      },
      (response) => response.blob(),
    );
  }

  /**
   * `GET /v1/usage`: the tenant's tokens, US dollars and runs from `from` to `to` (UTC days,
   * `YYYY-MM-DD`, inclusive; default the last 30 days), in total and by `groupBy` (`day`, `model`,
   * `profile` or `metadata.<key>`).
   */
  async usage(
    query: { from?: string | undefined; to?: string | undefined; groupBy?: string | undefined } = {},
    options: RequestOptions = {},
  ): Promise<UsageReport> {
    const result = await this.json({
      method: 'GET',
      path: '/v1/usage',
      query: { from: query.from, to: query.to, groupBy: query.groupBy },
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.rows)) return result as unknown as UsageReport;
    throw new TetherProtocolError('GET /v1/usage answered without rows');
  }

  /** `GET /v1/budgets`: the tenant's budgets in force, where they come from, and what it used of them. */
  async budgets(options: RequestOptions = {}): Promise<TenantBudgetsView> {
    const result = await this.json({
      method: 'GET',
      path: '/v1/budgets',
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && isRecord(result.used)) return result as unknown as TenantBudgetsView;
    throw new TetherProtocolError('GET /v1/budgets answered without used');
  }

  /** `GET /v1/tools`: the tool catalog. */
  async tools(options: RequestOptions = {}): Promise<ToolCatalog> {
    const result = await this.json({
      method: 'GET',
      path: '/v1/tools',
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.tools)) return result as unknown as ToolCatalog;
    throw new TetherProtocolError('GET /v1/tools answered without a tools array');
  }

  /**
   * `GET /v1/models`: the model profiles runs may name, the default, and
   * whether replay is allowed. Ask before starting something that needs a
   * model: `defaultProfile: null` with no profile named means the server
   * would refuse the run (`ERR_MODEL_PROFILE_REQUIRED`).
   */
  async models(options: RequestOptions = {}): Promise<ModelCatalog> {
    const result = await this.json({
      method: 'GET',
      path: '/v1/models',
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.profiles)) return result as unknown as ModelCatalog;
    throw new TetherProtocolError('GET /v1/models answered without a profiles array');
  }

  /**
   * `GET /v1/runs/:id/events` with `Accept: application/json`: up to `limit`
   * events after `after` (an event id; the start when omitted), and the cursor
   * of the next page, null once the run has ended and nothing follows. For
   * live events use `stream`.
   */
  async events(id: string, options: EventsPageOptions = {}): Promise<RunEventPage> {
    const result = await this.json({
      method: 'GET',
      path: `${runPath(id)}/events`,
      query: { after: options.after, limit: options.limit },
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as RunEventPage;
    throw new TetherProtocolError(`GET ${runPath(id)}/events answered without a data array`);
  }

  /**
   * Follows `GET /v1/runs/:id/events` (SSE): yields each event once, in order,
   * reconnecting with `Last-Event-ID` after a dropped connection, and ends after
   * the run's terminal event. Breaking out of the loop closes the connection.
   */
  stream(runId: string, options: StreamOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    const path = `${runPath(runId)}/events`;
    return followRunEvents(
      {
        url: `${this.baseUrl}${path}`,
        open: (lastEventId, signal) => this.openStream(path, options.token, lastEventId, signal),
        status: async (signal) => (await this.get(runId, { signal })).status,
      },
      options,
    );
  }

  /**
   * One connection to an SSE route (`GET path`), resuming after `lastEventId`
   * and with a read token when given. Not retried: the caller reconnects.
   */
  private openStream(
    path: string,
    token: string | undefined,
    lastEventId: string | undefined,
    signal: AbortSignal,
  ): Promise<Response> {
    return this.send(
      {
        method: 'GET',
        path,
        query: { token },
        headers: {
          accept: 'text/event-stream',
          ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
        },
        signal,
        idempotent: true,
        stream: true,
      },
      async (response) => response,
    );
  }

  private async json(spec: RequestSpec): Promise<unknown> {
    return this.send(spec, async (response) => {
      const text = await response.text();
      if (text === '') return undefined;
      try {
        return JSON.parse(text) as unknown;
      } catch (cause) {
        throw new TetherProtocolError(`${spec.method} ${spec.path} answered with a body that is not JSON`, {
          cause,
        });
      }
    });
  }

  /** One request with the retry policy; `read` consumes the (2xx) response. */
  private async send<T>(spec: RequestSpec, read: (response: Response) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(spec, read);
      } catch (error) {
        const delay = spec.stream ? undefined : this.retryDelay(error, attempt, spec);
        if (delay === undefined) throw error;
        await sleep(delay, spec.signal);
      }
    }
  }

  private async attempt<T>(spec: RequestSpec, read: (response: Response) => Promise<T>): Promise<T> {
    const url = this.url(spec.path, spec.query);
    const controller = new AbortController();
    const onAbort = () => controller.abort(spec.signal?.reason);
    if (spec.signal?.aborted) throw spec.signal.reason;
    spec.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () => controller.abort(new TetherTimeoutError(url, this.timeoutMs)),
      this.timeoutMs,
    );
    const headers: Record<string, string> = { accept: 'application/json', ...spec.headers };
    if (this.apiKey !== undefined) headers.authorization = `Bearer ${this.apiKey}`;
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    try {
      let response: Response;
      try {
        response = await this.fetchImpl(url, {
          method: spec.method,
          headers,
          body: spec.body === undefined ? null : JSON.stringify(spec.body),
          signal: controller.signal,
        });
      } catch (error) {
        throw failure(error, url, controller.signal, spec.signal);
      }
      if (!response.ok) throw await errorFromResponse(response, spec.method);
      // A stream lives on after this returns: only the wait for its first byte is timed.
      if (spec.stream) clearTimeout(timer);
      try {
        return await read(response);
      } catch (error) {
        if (error instanceof TetherError) throw error;
        throw failure(error, url, controller.signal, spec.signal);
      }
    } finally {
      clearTimeout(timer);
      // A stream's body still needs the caller's signal to close it.
      if (!spec.stream) spec.signal?.removeEventListener('abort', onAbort);
    }
  }

  private retryDelay(error: unknown, attempt: number, spec: RequestSpec): number | undefined {
    if (attempt >= this.retryPolicy.limit || spec.signal?.aborted) return undefined;
    const backoff = jitter(
      Math.min(this.retryPolicy.maxDelayMs, this.retryPolicy.initialDelayMs * 2 ** attempt),
    );
    if (error instanceof TetherRateLimitError) {
      const wait = error.retryAfterMs ?? backoff;
      return wait <= this.retryPolicy.maxRetryAfterMs ? wait : undefined;
    }
    if (!spec.idempotent) return undefined;
    if (error instanceof TetherConnectionError || error instanceof TetherTimeoutError) return backoff;
    if (error instanceof TetherApiError && RETRY_STATUSES.has(error.status)) return backoff;
    return undefined;
  }

  private url(path: string, query: RequestSpec['query']): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) params.set(key, String(value));
    }
    const search = params.toString();
    return `${this.baseUrl}${path}${search ? `?${search}` : ''}`;
  }
}

function runPath(id: string): string {
  if (typeof id !== 'string' || id === '') throw invalidOption('run id must be a non-empty string');
  return `/v1/runs/${encodeURIComponent(id)}`;
}

/** What a failed fetch (or body read) means: the caller's abort, our timeout, or a lost connection. */
function failure(error: unknown, url: string, own: AbortSignal, caller: AbortSignal | undefined): unknown {
  if (caller?.aborted) return caller.reason;
  if (own.aborted && own.reason instanceof TetherTimeoutError) return own.reason;
  return new TetherConnectionError(url, { cause: error });
}

function normaliseBaseUrl(value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    throw invalidOption('baseUrl is required, such as http://127.0.0.1:3000');
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidOption(
      `baseUrl must be an absolute http(s) URL such as http://127.0.0.1:3000 (got ${value})`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidOption(`baseUrl must use http or https (got ${url.protocol})`);
  }
  if (url.search || url.hash) throw invalidOption(`baseUrl must not have a query or fragment (got ${value})`);
  return url.href.replace(/\/+$/, '');
}

function resolveRetry(retry: TetherClientOptions['retry']): ResolvedRetry {
  const defaults: ResolvedRetry = {
    limit: 2,
    initialDelayMs: 300,
    maxDelayMs: 5_000,
    maxRetryAfterMs: 60_000,
  };
  if (retry === undefined) return defaults;
  if (retry === false) return { ...defaults, limit: 0 };
  const given: RetryOptions = typeof retry === 'number' ? { limit: retry } : retry;
  const merged: ResolvedRetry = {
    limit: given.limit ?? defaults.limit,
    initialDelayMs: given.initialDelayMs ?? defaults.initialDelayMs,
    maxDelayMs: given.maxDelayMs ?? defaults.maxDelayMs,
    maxRetryAfterMs: given.maxRetryAfterMs ?? defaults.maxRetryAfterMs,
  };
  if (!(Number.isInteger(merged.limit) && merged.limit >= 0)) {
    throw invalidOption(`retry.limit must be an integer >= 0 (got ${merged.limit})`);
  }
  for (const field of ['initialDelayMs', 'maxDelayMs', 'maxRetryAfterMs'] as const) {
    if (!(merged[field] >= 0)) throw invalidOption(`retry.${field} must be >= 0 (got ${merged[field]})`);
  }
  return merged;
}

/** Between half and all of `ms`, so clients that failed together do not retry together. */
function jitter(ms: number): number {
  return Math.round(ms * (0.5 + Math.random() * 0.5));
}
