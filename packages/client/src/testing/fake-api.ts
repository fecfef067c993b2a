/**
 * A fake Tether API on a real port (node:http), faithful to the contract of
 * issue 6 as far as the client can see it: bearer auth (401), run ownership
 * (404), idempotent submit (same key and body: same run; other body: 409),
 * pagination, clarify answers (200, 404, 409), decisions on approval requests
 * (200; 400 for edited arguments a test's check refuses; 409 once decided, timed
 * out, past the deadline or the run ended; 404), messages to a live run (202 with
 * `message.received`; 409 for an ended run and past 20 untaken; 404), cancel (202, 409), files, the
 * tool catalog, crew children (`children` on the parent, each a run with
 * `parentRunId`, `rootRunId`, `depth`), 429 with `Retry-After`, and the SSE event stream: `id:`,
 * `event:`, `data:` (the whole event), replay after `Last-Event-ID` or
 * `?after=`, then live, heartbeat comments, and the end after the terminal
 * event. `Accept: application/json` on the events route returns a page.
 *
 * Tests drive runs by hand (`append`, `setStatus`, `requestApprovals`, `deliverMessages`) or through
 * hooks (`onSubmit`, `onAnswer`, `onDecision`, `onMessage`), force failures (`dropStreamsAfter`, `stallStreamsAfter`,
 * `rateLimitNext`, `overlapReplay`), and await what the client did
 * (`waitFor`), never a sleep. Test-only: excluded from the build.
 */

import { EventEmitter } from 'node:events';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  ApprovalDecisionBody,
  ChildRun,
  CreateRunBody,
  ModelCatalog,
  PendingApproval,
  Run,
  RunEvent,
  RunEventData,
  RunEventType,
  RunFile,
  RunStatus,
  ToolInfo,
} from '@tether/protocol';
import {
  APPROVAL_LIMITS,
  runTitle,
  STEER_LIMITS,
  TERMINAL_EVENT_TYPES,
  TERMINAL_STATUSES,
} from '@tether/protocol';
import { FakeMemory } from './fake-memory.js';
import { FakeSchedules } from './fake-schedules.js';
import { FakeWebhooks } from './fake-webhooks.js';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface FakeRun {
  run: Run;
  body: CreateRunBody;
  tenant: string;
  events: RunEvent[];
  files: Map<string, string>;
  /** A crew parent's children, in the order it started them, as `GET /v1/runs/:id` lists them. */
  children: ChildRun[];
}

interface StreamClient {
  runId: string;
  res: ServerResponse;
  written: number;
  dropAfter: number | undefined;
  stallAfter: number | undefined;
}

const BASE_MS = 1_700_000_000_000;
const TERMINAL_TYPES: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);
const TERMINAL: ReadonlySet<RunStatus> = new Set(TERMINAL_STATUSES);

export class FakeApi extends EventEmitter {
  readonly requests: RecordedRequest[] = [];
  readonly runs = new Map<string, FakeRun>();
  /** Bearer key → tenant. Empty: no auth, every caller is tenant `default`. */
  readonly keys = new Map<string, string>();
  tools: ToolInfo[] = [];
  /** `GET /v1/models`'s answer (a default profile, replay allowed); undefined: the route is absent (an older server). */
  models: ModelCatalog | undefined = {
    profiles: [{ name: 'default', provider: 'openai', model: 'gpt-test', default: true }],
    defaultProfile: 'default',
    replay: true,
  };
  /** The memory routes' entries. */
  readonly memory = new FakeMemory();
  /** The webhook routes' endpoints and deliveries. */
  readonly webhooks = new FakeWebhooks();
  readonly schedules = new FakeSchedules();
  /** What `GET /v1/usage` and `GET /v1/budgets` answer, per tenant (set by the test). */
  readonly usage = new Map<string, { report: unknown; budgets: unknown }>();
  /** Called after a run is created (append events, set status). */
  onSubmit: ((run: FakeRun) => void) | undefined;
  /** Called after an answer is accepted and `clarify.answered` appended. */
  onAnswer: ((run: FakeRun, answer: string) => void) | undefined;
  /** Called after a decision is accepted and `approval.resolved` appended. */
  onDecision: ((run: FakeRun, requestId: string, decision: ApprovalDecisionBody) => void) | undefined;
  /** Called after a message for a live run is accepted and `message.received` appended. */
  onMessage: ((run: FakeRun, messageId: string, content: string) => void) | undefined;
  /**
   * Checks an edit's arguments as the API checks them against the tool's parameters: a message
   * naming the field (answered 400 `ERR_APPROVAL_ARGUMENTS_INVALID`), or undefined to take them.
   * Unset, every edit is taken.
   */
  checkEdit: ((tool: string, args: Record<string, unknown>) => string | undefined) | undefined;
  /** Per stream connection, in order: destroy the socket after writing this many events. */
  dropStreamsAfter: number[] = [];
  /** Per stream connection, in order: after this many events, write nothing more (no heartbeat either). */
  stallStreamsAfter: number[] = [];
  /** Replay this many events before `Last-Event-ID` too, as a careless server might. */
  overlapReplay = 0;
  /** End the response after the terminal event, as the contract says (off: a server that keeps it open). */
  endAfterTerminal = true;
  /** Heartbeat comment interval (ms). */
  heartbeatMs = 15_000;
  private rateLimits: Array<{ retryAfter: string | undefined }> = [];
  private readonly server: Server;
  private readonly streams = new Set<StreamClient>();
  private readonly idempotency = new Map<string, { runId: string; body: string }>();
  private seq = 0;
  private runSeq = 0;
  private approvalSeq = 0;
  private messageSeq = 0;
  private streamConnections = 0;
  baseUrl = '';

  constructor() {
    super();
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) sendError(res, 500, 'ERR_INTERNAL', String(error));
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.baseUrl = `http://127.0.0.1:${port}`;
    return this.baseUrl;
  }

  async close(): Promise<void> {
    for (const stream of this.streams) stream.res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The next `count` requests answer 429 (with `Retry-After: retryAfter` when given). */
  rateLimitNext(count: number, retryAfter?: string): void {
    for (let i = 0; i < count; i++) this.rateLimits.push({ retryAfter });
  }

  /** Creates a run directly (as if submitted), owned by `tenant`. */
  createRun(body: CreateRunBody = { input: 'task' }, tenant = 'default'): FakeRun {
    this.runSeq++;
    const id = `run_${String(this.runSeq).padStart(4, '0')}`;
    const run: FakeRun = {
      run: {
        id,
        status: 'queued',
        // As the API keeps it: the input's first line that is not blank.
        ...(body.input.trim() === '' ? {} : { title: runTitle(body.input) }),
        createdAt: new Date(BASE_MS + this.runSeq).toISOString(),
        attempts: 0,
        todos: [],
      },
      body,
      tenant,
      events: [],
      files: new Map(Object.entries(body.files ?? {})),
      children: [],
    };
    this.runs.set(id, run);
    this.append(id, 'run.queued', {});
    return run;
  }

  /**
   * Creates a crew child of `parentId` for task `index` (the tenant's, one level
   * deeper) and lists it on the parent. Append `child.started` to the parent
   * yourself when the test follows its stream.
   */
  createChild(parentId: string, index: number, body: CreateRunBody = { input: 'subtask' }): FakeRun {
    const parent = this.mustGet(parentId);
    const child = this.createRun(body, parent.tenant);
    child.run.parentRunId = parentId;
    child.run.rootRunId = parent.run.rootRunId ?? parentId;
    child.run.depth = (parent.run.depth ?? 0) + 1;
    parent.children.push({ id: child.run.id, index, status: child.run.status });
    return child;
  }

  /** Deletes a run's record, as retention would: it answers 404, and its parent no longer lists it. */
  removeRun(runId: string): void {
    this.mustGet(runId);
    this.runs.delete(runId);
  }

  /**
   * Appends an event to the run's log, updates the run as the real system would, and delivers it
   * live. Before a terminal event, each message the run has not taken gets its
   * `message.undelivered`, as the worker's last step appends them.
   */
  append<T extends RunEventType>(runId: string, type: T, data: RunEventData<T>): RunEvent {
    const fake = this.mustGet(runId);
    if (TERMINAL_TYPES.has(type)) {
      for (const messageId of untakenMessages(fake)) this.append(runId, 'message.undelivered', { messageId });
    }
    this.seq++;
    const event = {
      id: `${BASE_MS}-${this.seq}`,
      runId,
      type,
      at: new Date(BASE_MS + this.seq).toISOString(),
      data,
    } as RunEvent;
    fake.events.push(event);
    applyToRun(fake.run, event);
    for (const stream of this.streams) {
      if (stream.runId === runId) this.write(stream, event);
    }
    return event;
  }

  /** Writes raw SSE text to every open stream of the run (for malformed input). */
  writeRaw(runId: string, text: string): void {
    for (const stream of this.streams) if (stream.runId === runId) stream.res.write(text);
  }

  setStatus(runId: string, status: RunStatus): void {
    this.mustGet(runId).run.status = status;
  }

  /**
   * Makes the run wait on decisions, as a model turn the approval policy holds does: one
   * `approval.requested` each, in order. Each call names its tool and arguments; the rest defaults
   * to a fresh request id (`apr_0001`, …), the policy entry `tools: <tool>`, ten minutes from now
   * and `reject` at the deadline. A crew child's requests are told on its root too, with
   * `childRunId`, as the engine tells them.
   */
  requestApprovals(
    runId: string,
    calls: ReadonlyArray<Pick<PendingApproval, 'tool' | 'arguments'> & Partial<PendingApproval>>,
  ): PendingApproval[] {
    return calls.map((call, index) => {
      this.approvalSeq++;
      const approval: PendingApproval = {
        requestId: `apr_${String(this.approvalSeq).padStart(4, '0')}`,
        callId: `call_${index}`,
        reason: `tools: ${call.tool}`,
        expiresAt: new Date(Date.now() + 600_000).toISOString(),
        onTimeout: 'reject',
        ...call,
      };
      this.append(runId, 'approval.requested', approval);
      this.toRoot(runId, 'approval.requested', approval);
      return approval;
    });
  }

  /** A crew child's approval event, told on its tree's root with the child's id first. */
  private toRoot<T extends 'approval.requested' | 'approval.resolved'>(
    runId: string,
    type: T,
    data: RunEventData<T>,
  ): void {
    const root = this.mustGet(runId).run.rootRunId;
    if (root !== undefined) this.append(root, type, { childRunId: runId, ...data });
  }

  /** The deadline of a request passes: its policy's `onTimeout` decides it, as the worker would. */
  timeOutApproval(runId: string, requestId: string): void {
    const requested = this.approvalRequest(this.mustGet(runId), requestId);
    if (!requested) throw new Error(`fake api: no approval request ${requestId} on ${runId}`);
    this.append(runId, 'approval.resolved', {
      requestId,
      decision: requested.onTimeout,
      by: 'timeout',
      timedOut: true,
    });
  }

  /**
   * The run reaches a turn boundary: it takes every message it has not taken yet, oldest first,
   * each with its `message.delivered`. Returns their ids.
   */
  deliverMessages(runId: string): string[] {
    const taken = untakenMessages(this.mustGet(runId));
    for (const messageId of taken) this.append(runId, 'message.delivered', { messageId });
    return taken;
  }

  /** Resolves when `predicate` holds for `count` recorded requests (counting those already seen). */
  waitFor(predicate: (request: RecordedRequest) => boolean, count = 1): Promise<RecordedRequest[]> {
    const matching = () => this.requests.filter(predicate);
    return new Promise((resolve) => {
      const check = () => {
        const found = matching();
        if (found.length >= count) {
          this.off('request', check);
          resolve(found);
        }
      };
      this.on('request', check);
      check();
    });
  }

  /** Stream requests seen so far. */
  streamRequests(): RecordedRequest[] {
    return this.requests.filter(
      (r) => r.path.endsWith('/events') && r.headers.accept === 'text/event-stream',
    );
  }

  /**
   * The run as `GET /v1/runs/:id` shows it: a parent lists its children whose
   * record is kept, with their current status.
   */
  private view(fake: FakeRun): Run {
    if (fake.children.length === 0) return fake.run;
    const children: ChildRun[] = [];
    for (const child of fake.children) {
      const record = this.runs.get(child.id);
      if (record) children.push({ ...child, status: record.run.status });
    }
    return { ...fake.run, children };
  }

  private mustGet(runId: string): FakeRun {
    const fake = this.runs.get(runId);
    if (!fake) throw new Error(`fake api: no run ${runId}`);
    return fake;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const text = await readBody(req);
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body: text === '' ? undefined : safeJson(text),
    };
    this.requests.push(record);
    this.emit('request', record);

    const limit = this.rateLimits.shift();
    if (limit) {
      const headers: Record<string, string> =
        limit.retryAfter === undefined ? {} : { 'retry-after': limit.retryAfter };
      return sendError(res, 429, 'ERR_RATE_LIMITED', 'Too many requests', headers);
    }

    let tenant = 'default';
    if (this.keys.size > 0) {
      const match = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
      const found = match?.[1] === undefined ? undefined : this.keys.get(match[1]);
      const token = url.searchParams.get('token');
      const tokenRun = token?.startsWith('tok_') ? token.slice(4) : undefined;
      if (found !== undefined) tenant = found;
      else if (tokenRun !== undefined && url.pathname === `/v1/runs/${tokenRun}/events`) {
        tenant = this.runs.get(tokenRun)?.tenant ?? '';
      } else return sendError(res, 401, 'ERR_UNAUTHORIZED', 'Missing or unknown API key');
    }

    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== 'v1') return sendError(res, 404, 'ERR_NOT_FOUND', `No route ${url.pathname}`);

    if (parts[1] === 'tools' && parts.length === 2 && req.method === 'GET') {
      return sendJson(res, 200, {
        toolsets: [...new Set(this.tools.map((t) => t.toolset))],
        defaultToolsets: ['base'],
        tools: this.tools,
      });
    }
    if (parts[1] === 'models' && parts.length === 2 && req.method === 'GET' && this.models) {
      return sendJson(res, 200, this.models);
    }
    if (
      parts[1] === 'memory' &&
      this.memory.handle(req.method ?? 'GET', parts.slice(2), url, record.body, tenant, res)
    ) {
      return;
    }
    if (
      parts[1] === 'schedules' &&
      this.schedules.handle(req.method ?? 'GET', parts.slice(2), url, record.body, tenant, res)
    ) {
      return;
    }
    if (
      parts[1] === 'webhooks' &&
      this.webhooks.handle(req.method ?? 'GET', parts.slice(2), url, record.body, tenant, res)
    ) {
      return;
    }
    const usage = this.usage.get(tenant);
    if (
      (parts[1] === 'usage' || parts[1] === 'budgets') &&
      parts.length === 2 &&
      req.method === 'GET' &&
      usage
    ) {
      return sendJson(res, 200, parts[1] === 'usage' ? usage.report : usage.budgets);
    }
    if (parts[1] !== 'runs') return sendError(res, 404, 'ERR_NOT_FOUND', `No route ${url.pathname}`);

    if (parts.length === 2 && req.method === 'POST') return this.submit(req, res, record, tenant);
    if (parts.length === 2 && req.method === 'GET') return this.list(res, url, tenant);

    const runId = parts[2] ?? '';
    const fake = this.runs.get(runId);
    if (!fake || fake.tenant !== tenant)
      return sendError(res, 404, 'ERR_RUN_NOT_FOUND', `Run ${runId} not found`);

    if (parts.length === 3 && req.method === 'GET') return sendJson(res, 200, this.view(fake));
    if (parts[3] === 'cancel' && parts.length === 4 && req.method === 'POST') {
      if (TERMINAL.has(fake.run.status)) {
        return sendError(res, 409, 'ERR_RUN_FINISHED', `Run ${runId} is already ${fake.run.status}`);
      }
      const before = fake.run.status;
      this.append(runId, 'run.cancelled', { reason: 'cancelled by the user' });
      return sendJson(res, 202, { id: runId, status: before });
    }
    if (parts[3] === 'clarify' && parts.length === 5 && req.method === 'POST') {
      return this.answer(res, fake, parts[4] ?? '', record.body);
    }
    if (parts[3] === 'approvals' && parts.length === 5 && req.method === 'POST') {
      return this.decide(res, fake, parts[4] ?? '', record.body, tenant);
    }
    if (parts[3] === 'messages' && parts.length === 4 && req.method === 'POST') {
      return this.steer(res, fake, record.body);
    }
    if (parts[3] === 'events' && parts.length === 4 && req.method === 'GET') {
      const accept = req.headers.accept ?? '';
      if (accept.includes('application/json') && !accept.includes('text/event-stream')) {
        const lastEventId = req.headers['last-event-id'];
        return this.eventsPage(res, fake, url, typeof lastEventId === 'string' ? lastEventId : undefined);
      }
      return this.stream(req, res, fake, url);
    }
    if (parts[3] === 'files' && req.method === 'GET') {
      if (parts.length === 4) {
        const files: RunFile[] = [...fake.files]
          .map(([path, content]) => ({ path, size: Buffer.byteLength(content) }))
          .sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
        return sendJson(res, 200, { files, truncated: false });
      }
      const path = parts.slice(4).join('/');
      const content = fake.files.get(path);
      if (content === undefined) return sendError(res, 404, 'ERR_FILE_NOT_FOUND', `No file ${path}`);
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(content);
      return;
    }
    return sendError(res, 404, 'ERR_NOT_FOUND', `No route ${req.method} ${url.pathname}`);
  }

  private submit(req: IncomingMessage, res: ServerResponse, record: RecordedRequest, tenant: string): void {
    const body = record.body;
    if (!isObject(body) || typeof body.input !== 'string') {
      sendError(res, 400, 'ERR_VALIDATION', 'body/input must be a string');

      return;
    }
    const key = req.headers['idempotency-key'];
    const canonical = JSON.stringify(body);
    if (typeof key === 'string') {
      const seen = this.idempotency.get(`${tenant}:${key}`);
      if (seen && seen.body !== canonical) {
        sendError(res, 409, 'ERR_IDEMPOTENCY_CONFLICT', 'Idempotency-Key reused with a different body');

        return;
      }
      if (seen) {
        sendJson(res, 202, submitted(seen.runId));
        return;
      }
    }
    const fake = this.createRun(body as unknown as CreateRunBody, tenant);
    if (typeof key === 'string')
      this.idempotency.set(`${tenant}:${key}`, { runId: fake.run.id, body: canonical });
    sendJson(res, 202, submitted(fake.run.id));
    this.onSubmit?.(fake);
  }

  private list(res: ServerResponse, url: URL, tenant: string): void {
    const status = url.searchParams.get('status');
    const limit = Number(url.searchParams.get('limit') ?? '20');
    const cursor = url.searchParams.get('cursor');
    let runs = [...this.runs.values()]
      .filter((r) => r.tenant === tenant && (status === null || r.run.status === status))
      .map((r) => this.view(r))
      .sort((a, b) => (a.id < b.id ? 1 : -1));
    if (cursor !== null) runs = runs.filter((r) => r.id < cursor);
    const page = runs.slice(0, limit);
    const last = page.at(-1);
    sendJson(res, 200, { data: page, nextCursor: runs.length > limit && last ? last.id : null });
  }

  private answer(res: ServerResponse, fake: FakeRun, requestId: string, body: unknown): void {
    if (!isObject(body) || typeof body.answer !== 'string') {
      sendError(res, 400, 'ERR_VALIDATION', 'body/answer must be a string');

      return;
    }
    const asked = fake.events.some((e) => e.type === 'clarify.requested' && e.data.requestId === requestId);
    if (!asked) {
      sendError(res, 404, 'ERR_CLARIFY_NOT_FOUND', `No question ${requestId} on this run`);
      return;
    }
    if (fake.run.pendingClarify?.requestId !== requestId) {
      sendError(
        res,
        409,
        'ERR_CLARIFY_NOT_PENDING',
        `Question ${requestId} is answered, timed out or not pending`,
      );

      return;
    }
    this.append(fake.run.id, 'clarify.answered', { requestId, answer: body.answer });
    sendJson(res, 200, { ok: true });
    this.onAnswer?.(fake, body.answer);
  }

  /** As the API's route does: the first decision wins, and `approval.resolved` names the tenant. */
  private decide(res: ServerResponse, fake: FakeRun, requestId: string, body: unknown, tenant: string): void {
    const decision = decisionBody(body);
    if (typeof decision === 'string') {
      sendError(res, 400, 'ERR_VALIDATION', decision);
      return;
    }
    const runId = fake.run.id;
    const requested = this.approvalRequest(fake, requestId);
    if (!requested) {
      sendError(res, 404, 'ERR_APPROVAL_UNKNOWN', `Run ${runId} has no approval request ${requestId}.`);
      return;
    }
    const resolved = fake.events.find(
      (e): e is RunEvent<'approval.resolved'> =>
        e.type === 'approval.resolved' && e.data.requestId === requestId,
    );
    if (resolved?.data.timedOut) {
      const message = `Approval request ${requestId} timed out; the policy's onTimeout decided it.`;
      sendError(res, 409, 'ERR_APPROVAL_TIMED_OUT', message);
      return;
    }
    if (resolved) {
      const message = `Approval request ${requestId} was decided already; the first decision won.`;
      sendError(res, 409, 'ERR_APPROVAL_ALREADY_DECIDED', message);
      return;
    }
    if (TERMINAL.has(fake.run.status)) {
      const message = `Run ${runId} has ended; its tool calls no longer wait for a decision.`;
      sendError(res, 409, 'ERR_APPROVAL_NOT_PENDING', message);
      return;
    }
    if (Date.parse(requested.expiresAt) <= Date.now()) {
      const message = `The deadline of approval request ${requestId} has passed.`;
      sendError(res, 409, 'ERR_APPROVAL_EXPIRED', message);
      return;
    }
    const refused =
      decision.decision === 'edit' ? this.checkEdit?.(requested.tool, decision.arguments) : undefined;
    if (refused !== undefined) {
      sendError(res, 400, 'ERR_APPROVAL_ARGUMENTS_INVALID', `arguments: ${refused}`);
      return;
    }
    this.append(runId, 'approval.resolved', { requestId, by: tenant, ...decision });
    this.toRoot(runId, 'approval.resolved', { requestId, by: tenant, ...decision });
    sendJson(res, 200, { ok: true });
    this.onDecision?.(fake, requestId, decision);
  }

  /** As the API's route does: an ended run takes no message, a live one at most 20 untaken. */
  private steer(res: ServerResponse, fake: FakeRun, body: unknown): void {
    if (
      !isObject(body) ||
      Object.keys(body).join(',') !== 'content' ||
      typeof body.content !== 'string' ||
      body.content === '' ||
      // In characters, as the API's schema counts them (a surrogate pair is one).
      [...body.content].length > STEER_LIMITS.contentMaxLength
    ) {
      const bound = `1 to ${STEER_LIMITS.contentMaxLength} characters`;
      sendError(res, 400, 'ERR_VALIDATION', `body must be { content: string of ${bound} }`);
      return;
    }
    const runId = fake.run.id;
    if (TERMINAL.has(fake.run.status)) {
      sendError(res, 409, 'ERR_RUN_ENDED', `Run ${runId} has ended; it takes no more messages.`);
      return;
    }
    if (untakenMessages(fake).length >= STEER_LIMITS.pendingMax) {
      const message = `Run ${runId} holds ${STEER_LIMITS.pendingMax} messages it has not taken yet; send more once it has.`;
      sendError(res, 409, 'ERR_RUN_MESSAGES_LIMIT', message);
      return;
    }
    this.messageSeq++;
    const messageId = `msg_${String(this.messageSeq).padStart(4, '0')}`;
    this.append(runId, 'message.received', { messageId, content: body.content });
    sendJson(res, 202, { messageId });
    this.onMessage?.(fake, messageId, body.content);
  }

  private approvalRequest(fake: FakeRun, requestId: string): PendingApproval | undefined {
    const event = fake.events.find(
      (e): e is RunEvent<'approval.requested'> =>
        e.type === 'approval.requested' && e.data.requestId === requestId,
    );
    return event?.data;
  }

  /** As the API does: `nextCursor` is the last id, the same cursor when nothing is new, null once the run has ended. */
  private eventsPage(res: ServerResponse, fake: FakeRun, url: URL, lastEventId: string | undefined): void {
    const after = url.searchParams.get('after') ?? lastEventId ?? '0';
    const limit = Number(url.searchParams.get('limit') ?? '100');
    const start = after === '0' ? 0 : fake.events.findIndex((e) => e.id === after) + 1;
    const data = fake.events.slice(start, start + limit);
    const last = data.at(-1);
    const nextCursor = last
      ? TERMINAL_TYPES.has(last.type)
        ? null
        : last.id
      : TERMINAL.has(fake.run.status)
        ? null
        : after;
    sendJson(res, 200, { data, nextCursor });
  }

  private stream(req: IncomingMessage, res: ServerResponse, fake: FakeRun, url: URL): void {
    const index = this.streamConnections++;
    const lastEventId = req.headers['last-event-id'] ?? url.searchParams.get('after') ?? undefined;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    const client: StreamClient = {
      runId: fake.run.id,
      res,
      written: 0,
      dropAfter: this.dropStreamsAfter[index],
      stallAfter: this.stallStreamsAfter[index],
    };
    this.streams.add(client);
    const heartbeat = setInterval(() => {
      if (this.stalled(client)) return;
      res.write(': ping\n\n');
      this.emit('heartbeat', index);
    }, this.heartbeatMs);
    res.on('close', () => {
      clearInterval(heartbeat);
      this.streams.delete(client);
      this.emit('stream-closed', index);
    });
    let start = 0;
    if (typeof lastEventId === 'string') {
      start = fake.events.findIndex((e) => e.id === lastEventId) + 1;
      start = Math.max(0, start - this.overlapReplay);
    }
    for (const event of fake.events.slice(start)) {
      if (!this.streams.has(client)) break;
      this.write(client, event);
    }
    // A finished run whose replay held nothing new: the stream has nothing more to say.
    if (this.streams.has(client) && TERMINAL.has(fake.run.status) && this.endAfterTerminal) {
      this.streams.delete(client);
      res.end();
    }
  }

  private stalled(client: StreamClient): boolean {
    return client.stallAfter !== undefined && client.written >= client.stallAfter;
  }

  private write(client: StreamClient, event: RunEvent): void {
    if (this.stalled(client) || client.res.destroyed) return;
    const payload = `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
    client.written++;
    if (client.dropAfter !== undefined && client.written >= client.dropAfter) {
      this.streams.delete(client);
      // Reset the connection once the bytes have left, as a network drop mid-stream would.
      client.res.write(payload, () => client.res.socket?.destroy());
      return;
    }
    client.res.write(payload);
    if (TERMINAL_TYPES.has(event.type) && this.endAfterTerminal) {
      this.streams.delete(client);
      client.res.end();
    }
  }
}

function submitted(id: string) {
  return {
    id,
    status: 'queued' as const,
    links: { self: `/v1/runs/${id}`, events: `/v1/runs/${id}/events` },
    token: `tok_${id}`,
  };
}

/** The messages the run was sent and has neither taken nor given up on, oldest first. */
function untakenMessages(fake: FakeRun): string[] {
  const untaken: string[] = [];
  for (const event of fake.events) {
    if (event.type === 'message.received') untaken.push(event.data.messageId);
    else if (event.type === 'message.delivered' || event.type === 'message.undelivered') {
      const at = untaken.indexOf(event.data.messageId);
      if (at >= 0) untaken.splice(at, 1);
    }
  }
  return untaken;
}

/** What the event log's writer would do to the run record. */
function applyToRun(run: Run, event: RunEvent): void {
  switch (event.type) {
    case 'run.started':
      run.status = 'running';
      run.attempts = event.data.attempt;
      run.startedAt ??= event.at;
      break;
    case 'todo.updated':
      run.todos = event.data.todos;
      break;
    case 'clarify.requested':
      run.status = 'waiting_for_input';
      run.pendingClarify = { ...event.data };
      break;
    case 'clarify.answered':
    case 'clarify.timed_out':
      delete run.pendingClarify;
      run.status = 'running';
      break;
    case 'tool.requested':
      run.status = 'waiting_for_input';
      run.pendingToolCalls = [...(run.pendingToolCalls ?? []), { ...event.data }];
      break;
    case 'tool.output_received':
    case 'tool.timed_out': {
      const left = (run.pendingToolCalls ?? []).filter((call) => call.requestId !== event.data.requestId);
      if (left.length > 0) run.pendingToolCalls = left;
      else {
        delete run.pendingToolCalls;
        run.status = 'queued';
      }
      break;
    }
    case 'approval.requested':
      run.status = 'waiting_for_input';
      run.pendingApprovals = [...(run.pendingApprovals ?? []), { ...event.data }];
      break;
    case 'approval.resolved': {
      const left = (run.pendingApprovals ?? []).filter((a) => a.requestId !== event.data.requestId);
      if (left.length > 0) run.pendingApprovals = left;
      else {
        delete run.pendingApprovals;
        run.status = 'queued';
      }
      break;
    }
    case 'usage':
      run.usage = event.data;
      break;
    case 'child.started':
      run.status = 'waiting_for_children';
      break;
    case 'run.completed':
      run.status = 'completed';
      run.output = event.data.output;
      if (event.data.result !== undefined) run.result = event.data.result;
      run.finishedAt = event.at;
      break;
    case 'run.failed':
      run.status = 'failed';
      run.error = event.data.error;
      run.finishedAt = event.at;
      break;
    case 'run.cancelled':
      delete run.pendingClarify;
      delete run.pendingApprovals;
      run.status = 'cancelled';
      run.finishedAt = event.at;
      break;
    default:
      break;
  }
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

function sendError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { error: { code, message } }, { 'x-request-id': `req-${status}`, ...headers });
}

/** The decision a body holds, or what is wrong with it (the API's schema, as the fake needs it). */
function decisionBody(body: unknown): ApprovalDecisionBody | string {
  if (!isObject(body)) return 'body must be an object';
  const keys = Object.keys(body).sort().join(',');
  if (body.decision === 'approve' && keys === 'decision') return { decision: 'approve' };
  if (body.decision === 'edit' && keys === 'arguments,decision' && isObject(body.arguments)) {
    return { decision: 'edit', arguments: body.arguments };
  }
  if (body.decision === 'reject' && (keys === 'decision' || keys === 'decision,message')) {
    if (body.message === undefined) return { decision: 'reject' };
    if (typeof body.message === 'string' && body.message.length <= APPROVAL_LIMITS.messageMaxLength) {
      return { decision: 'reject', message: body.message };
    }
  }
  return 'body must be { decision: approve } | { decision: edit, arguments: {...} } | { decision: reject, message? }';
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
