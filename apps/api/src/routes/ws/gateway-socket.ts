import {
  runSessionTag,
  type SessionDefaults,
  sessionTag,
  TERMINAL_EVENT_TYPES,
  WS_CLOSE_CODES,
  type WsClientFrame,
  type WsServerFrame,
} from '@tether/protocol';
import { parseSessionCursor, type SessionEvent, SessionFollower } from '@tether/store/sessions';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import { ApiError } from '../../errors.js';
import { classify } from '../../plugins/errors.js';
import { rateLimitedMessage } from '../../plugins/rate-limit.js';
import { checkSessionTokenBody } from '../../session-token.js';
import { editCheck } from '../runs/approvals/check-edit.js';
import type { StreamEnd } from '../runs/events/sse-response.js';
import { runSpec } from '../runs/spec.js';
import { checkSubmission } from '../runs/submission.js';
import type { EventFrames } from './event-frames.js';
import { messageRunBody, parseClientFrame } from './frames.js';
import { FrameWriter, type TextFrame } from './text-frame.js';

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);

/** Events read per request while finding the questions still open at a cursor. */
const PAGE = 500;

/**
 * Frames received and not yet served that make the socket stop reading (the
 * client's further frames wait in its own buffers, TCP's backpressure) until
 * they are served: with `TETHER_WS_MAX_FRAME_BYTES`, what a socket holds unserved.
 */
const MAX_UNSERVED_FRAMES = 8;

type Cursor = { runId: string; eventId: string };

/** A session the socket follows. */
interface Following {
  /** Undefined until started. */
  follower: SessionFollower | undefined;
  /** Where the follower started (a restart goes on from `last` when an event came since). */
  after: Cursor | undefined;
  /** The id of the last event delivered: parsed into `after` only when the follower starts again. */
  last: string | undefined;
  fromRun: string | undefined;
  /** Questions asked and not yet resolved: request id → the run that asked. */
  pending: Map<string, string>;
}

/**
 * One client of the WebSocket gateway. Frames are served one at a time, in
 * the order they came. Each session the socket follows (by `subscribe`, or
 * by sending it a `message`) has its own `SessionFollower`; every event it
 * reads goes out as an `event` frame, followed by what it means for the
 * client: `clarify_request`, `clarify_resolved` (answered, timed out, or
 * cancelled: the run ended while the question was open), `tool_request` (a
 * client tool call to answer with `tool_response`) and `done`.
 *
 * A client that reads too slowly (more than `TETHER_SSE_MAX_BUFFER_BYTES`
 * unsent) is dropped with 1013, like a slow SSE client: it reconnects and
 * subscribes with `after`. One that has not answered the previous protocol
 * ping when the next is due is cut.
 *
 * What a client sends is bounded too. Every frame but `ping` counts against
 * the tenant's rate limit, as the REST request doing the same would: past it
 * the frame is refused with `ERR_RATE_LIMITED` and `retryAfterMs`, and the
 * socket stays open. More than `TETHER_WS_MAX_FRAMES_PER_SECOND` frames within
 * a second close the socket with 1008. And at {@link MAX_UNSERVED_FRAMES}
 * frames waiting to be served, the socket stops reading until they are.
 */
export class GatewaySocket {
  readonly tenant: string;
  readonly #app: FastifyInstance;
  readonly #ws: WebSocket;
  readonly #request: FastifyRequest;
  /** The session a session token limits the socket to. */
  readonly #scope: string | undefined;
  readonly #maxBufferBytes: number;
  readonly #following = new Map<string, Following>();
  readonly #onEnd: (socket: GatewaySocket, why: StreamEnd) => void;
  readonly #eventFrames: EventFrames;
  readonly #writer: FrameWriter;
  /** The frames not yet served, in order. */
  #work: Promise<void> = Promise.resolve();
  #unserved = 0;
  /** The second (`floor(ms / 1000)`) whose frames {@link #framesThisSecond} counts. */
  #second = 0;
  #framesThisSecond = 0;
  #answeredPing = true;
  #over = false;

  constructor(options: {
    app: FastifyInstance;
    ws: WebSocket;
    request: FastifyRequest;
    /** The encoded `event` frames, shared by the process's sockets. */
    eventFrames: EventFrames;
    onEnd: (socket: GatewaySocket, why: StreamEnd) => void;
  }) {
    this.#app = options.app;
    this.#ws = options.ws;
    this.#request = options.request;
    this.tenant = options.request.tenant;
    this.#scope = options.request.sessionScope;
    this.#maxBufferBytes = options.app.config.sseMaxBufferBytes;
    this.#onEnd = options.onEnd;
    this.#eventFrames = options.eventFrames;
    this.#writer = new FrameWriter(options.ws);
  }

  start(): void {
    this.#ws.on('message', (data, isBinary) => {
      if (this.#over || !this.#withinFrameRate()) return;
      if (++this.#unserved === MAX_UNSERVED_FRAMES) this.#ws.pause();
      this.#work = this.#work
        .then(() => this.#receive(data, isBinary))
        .finally(() => {
          if (this.#unserved-- === MAX_UNSERVED_FRAMES && !this.#over) this.#ws.resume();
        });
    });
    this.#ws.on('pong', () => {
      this.#answeredPing = true;
    });
    this.#ws.on('close', () => this.#finish('client'));
  }

  /** The heartbeat: a protocol ping, unless the previous one is still unanswered, which cuts the socket. */
  ping(): void {
    if (this.#over) return;
    if (!this.#answeredPing) {
      this.#request.log.info('cutting a WebSocket that did not answer its ping');
      this.#ws.terminate();
      this.#finish('error');
      return;
    }
    this.#answeredPing = false;
    this.#ws.ping();
  }

  /** Closes the socket: 1001 at shutdown. */
  end(why: StreamEnd): void {
    if (this.#over) return;
    if (why === 'shutdown') this.#ws.close(WS_CLOSE_CODES.shutdown, 'server shutting down');
    else this.#ws.close(WS_CLOSE_CODES.tryAgainLater, 'reconnect and subscribe with after');
    this.#finish(why);
  }

  /**
   * The event subscriber lost its connection: live events may have been missed.
   * Each follower starts again after the last event it delivered (from the log, then live).
   */
  async resync(): Promise<void> {
    for (const [sessionId, following] of this.#following) {
      following.follower?.stop();
      await this.#startFollower(sessionId, following);
    }
  }

  /** Counts a frame received; past the socket's cap per second, closes it with 1008 (false). */
  #withinFrameRate(): boolean {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.#second) {
      this.#second = second;
      this.#framesThisSecond = 0;
    }
    const max = this.#app.config.wsMaxFramesPerSecond;
    if (++this.#framesThisSecond <= max) return true;
    this.#request.log.info({ max }, 'closing a WebSocket that sent too many frames');
    this.#ws.close(WS_CLOSE_CODES.tooManyFrames, `too many frames: at most ${max} per second`);
    this.#finish('client');
    return false;
  }

  async #receive(data: RawData, isBinary: boolean): Promise<void> {
    if (this.#over) return;
    try {
      const frame = parseClientFrame(toBuffer(data), isBinary, this.#app.config.jsonMaxDepth);
      if (frame.type !== 'ping') {
        const retryAfterMs = this.#app.countTenantRequest(this.tenant);
        if (retryAfterMs !== undefined) {
          const message = `${rateLimitedMessage(this.#app.config, retryAfterMs)} (see retryAfterMs); nothing was done.`;
          this.#send({ type: 'error', code: 'ERR_RATE_LIMITED', message, retryAfterMs });
          return;
        }
      }
      await this.#serve(frame);
    } catch (error) {
      const { status, code, message } = classify(error as Error, this.#request);
      if (status >= 500) this.#request.log.error({ err: error }, 'WebSocket frame failed');
      this.#send({ type: 'error', code, message });
    }
  }

  async #serve(frame: WsClientFrame): Promise<void> {
    const app = this.#app;
    switch (frame.type) {
      case 'ping':
        this.#send({ type: 'pong' });
        return;
      case 'message':
        await this.#message(frame);
        return;
      case 'subscribe': {
        this.#checkScope(frame.sessionId);
        await app.sessions.record(this.tenant, frame.sessionId);
        const after = frame.after === null ? undefined : parseSessionCursor(frame.after);
        if (after && runSessionTag(after.runId) !== sessionTag(frame.sessionId)) {
          throw new ApiError('ERR_WS_FRAME', `frame.after is not an event id of session ${frame.sessionId}.`);
        }
        await this.#follow(frame.sessionId, { after });
        return;
      }
      case 'clarify_response':
        this.#checkScope(frame.sessionId);
        await app.sessions.answer(this.tenant, frame.sessionId, frame.requestId, frame.answer);
        return;
      case 'tool_response':
        this.#checkScope(frame.sessionId);
        await app.sessions.postToolOutput(
          this.tenant,
          frame.sessionId,
          frame.requestId,
          frame.output,
          frame.isError ?? false,
        );
        return;
      case 'approval_response': {
        this.#checkScope(frame.sessionId);
        const { decision } = frame;
        const check = decision.decision === 'edit' ? editCheck(frame.requestId, decision) : undefined;
        const decided = { ...decision, by: this.tenant };
        await app.sessions.decide(this.tenant, frame.sessionId, frame.requestId, decided, check, frame.runId);
        return;
      }
      case 'steer':
        this.#checkScope(frame.sessionId);
        await app.sessions.steer(this.tenant, frame.sessionId, frame.content);
        return;
      case 'cancel':
        this.#checkScope(frame.sessionId);
        await app.sessions.cancelLive(this.tenant, frame.sessionId);
        return;
    }
  }

  /** A message: a run of the session (of a new one, announced first), then `run_started`. */
  async #message(frame: Extract<WsClientFrame, { type: 'message' }>): Promise<void> {
    const app = this.#app;
    if (frame.sessionId === null && this.#scope !== undefined) {
      throw new ApiError(
        'ERR_WS_SCOPE',
        `This socket's session token covers session ${this.#scope} only: a new session needs an API key.`,
      );
    }
    if (frame.sessionId !== null) this.#checkScope(frame.sessionId);
    const body = messageRunBody(frame);
    const { multitask: _multitask, ...own } = body;
    let sessionId = frame.sessionId;
    let defaults: SessionDefaults | undefined;
    if (sessionId === null) {
      // Checked before the session exists, so a bad message leaves nothing behind.
      checkSubmission(own, app.config);
      sessionId = (await app.sessions.create(this.tenant)).id;
      this.#send({ type: 'session', sessionId, token: app.sessionTokens.issue(sessionId, this.tenant) });
    } else {
      const session = await app.sessions.record(this.tenant, sessionId);
      if (body.multitask === 'steer' && session.queue.length > 0) {
        // Into the live run, as a `steer` frame: its event frames say when it takes the message.
        await app.sessions.steerLive(session, this.tenant, own.input);
        if (!this.#following.has(sessionId)) await this.#follow(sessionId, { fromRun: session.queue[0] });
        return;
      }
      if (this.#scope !== undefined) checkSessionTokenBody(own);
      checkSubmission({ ...session.defaults, ...own }, app.config);
      defaults = session.defaults;
    }
    const sealed = await runSpec(app, this.tenant, body, defaults);
    // The socket's upgrade request names every run its messages start, in the workers' log lines.
    const { run, created } = await app.sessions.submit(this.tenant, sessionId, sealed, {
      requestId: this.#request.id,
    });
    app.metrics.runsSubmitted.inc({ created: String(created) });
    this.#send({ type: 'run_started', sessionId, runId: run.id });
    // Its events follow, from the run's first, unless the socket follows the session already.
    if (!this.#following.has(sessionId)) await this.#follow(sessionId, { fromRun: run.id });
  }

  #checkScope(sessionId: string): void {
    if (this.#scope !== undefined && sessionId !== this.#scope) {
      throw new ApiError(
        'ERR_WS_SCOPE',
        `This socket's session token covers session ${this.#scope} only, not ${sessionId}.`,
      );
    }
  }

  /** Follows the session from `after` (or `fromRun`'s first event), in place of any follower it had. */
  async #follow(sessionId: string, start: { after?: Cursor | undefined; fromRun?: string }): Promise<void> {
    this.#following.get(sessionId)?.follower?.stop();
    const following: Following = {
      follower: undefined,
      after: start.after,
      last: undefined,
      fromRun: start.fromRun,
      pending: new Map(),
    };
    if (start.after) await this.#openQuestions(following, start.after);
    this.#following.set(sessionId, following);
    await this.#startFollower(sessionId, following);
  }

  async #startFollower(sessionId: string, following: Following): Promise<void> {
    const last = following.last === undefined ? undefined : parseSessionCursor(following.last);
    if (last) {
      following.after = last;
      following.fromRun = undefined;
    }
    const follower = new SessionFollower({
      store: this.#app.store,
      hub: this.#app.hub,
      sessionId,
      after: following.after,
      fromRun: following.fromRun,
      onEvent: (event) => this.#deliver(sessionId, following, event),
      onStop: (why, error) => {
        if (this.#following.get(sessionId) === following) this.#following.delete(sessionId);
        if (why === 'gone') return;
        if (why === 'error') this.#request.log.warn({ err: error }, 'WebSocket session follower failed');
        this.#drop(why === 'slow' ? 'slow' : 'error');
      },
    });
    following.follower = follower;
    await follower.start();
    // Closed meanwhile (its end stopped the followers it had then): this one must not outlive it.
    if (this.#over) follower.stop();
  }

  /**
   * The questions of the cursor's run still open at the cursor, so that a
   * client that subscribes after a `clarify.requested` still hears how it
   * was resolved.
   */
  async #openQuestions(following: Following, after: Cursor): Promise<void> {
    for (let from = '0'; ; ) {
      const page = await this.#app.store.readEvents(after.runId, from, PAGE);
      for (const event of page) {
        this.#track(following, event);
        if (event.id === after.eventId) return;
      }
      if (page.length < PAGE) return;
      from = (page.at(-1) as SessionEvent).id;
    }
  }

  /** What an event changes in the open questions; the `clarify_resolved` outcomes it implies. */
  #track(following: Following, event: SessionEvent): [string, 'answered' | 'timed_out' | 'cancelled'][] {
    switch (event.type) {
      case 'clarify.requested':
        following.pending.set(event.data.requestId, event.runId);
        return [];
      case 'clarify.answered':
      case 'clarify.timed_out':
        following.pending.delete(event.data.requestId);
        return [[event.data.requestId, event.type === 'clarify.answered' ? 'answered' : 'timed_out']];
      default: {
        if (!TERMINAL.has(event.type)) return [];
        const ended: [string, 'cancelled'][] = [];
        for (const [requestId, runId] of following.pending) {
          if (runId !== event.runId) continue;
          following.pending.delete(requestId);
          ended.push([requestId, 'cancelled']);
        }
        return ended;
      }
    }
  }

  /** One event of a followed session: `event`, then what it means. False stops the follower. */
  #deliver(sessionId: string, following: Following, event: SessionEvent): boolean {
    following.last = event.id;
    if (!this.#sendEncoded(this.#eventFrames.get(sessionId, event))) return false;
    if (event.type === 'clarify.requested') {
      const { requestId, question, choices } = event.data;
      this.#send({
        type: 'clarify_request',
        sessionId,
        data: choices.length > 0 ? { requestId, question, choices } : { requestId, question },
      });
    }
    if (event.type === 'tool.requested') {
      this.#send({ type: 'tool_request', sessionId, runId: event.runId, data: event.data });
    }
    if (event.type === 'approval.requested') {
      // A crew child's call, told on its root: the frame names the child, the run it is decided on.
      const { childRunId, ...data } = event.data;
      this.#send({ type: 'approval_request', sessionId, runId: childRunId ?? event.runId, data });
    }
    for (const [requestId, outcome] of this.#track(following, event)) {
      this.#send({ type: 'clarify_resolved', sessionId, requestId, outcome });
    }
    switch (event.type) {
      case 'run.completed':
        return this.#send({
          type: 'done',
          sessionId,
          runId: event.runId,
          status: 'completed',
          output: event.data.output,
        });
      case 'run.failed':
        return this.#send({ type: 'done', sessionId, runId: event.runId, status: 'failed' });
      case 'run.cancelled':
        return this.#send({ type: 'done', sessionId, runId: event.runId, status: 'cancelled' });
      default:
        return !this.#over;
    }
  }

  /** Sends a frame; drops the client if too much is unsent already. False once the socket is over. */
  #send(frame: WsServerFrame): boolean {
    return this.#sendEncoded(JSON.stringify(frame));
  }

  #sendEncoded(frame: string | TextFrame): boolean {
    if (this.#over) return false;
    if (this.#ws.bufferedAmount > this.#maxBufferBytes) {
      this.#request.log.info({ unsent: this.#ws.bufferedAmount }, 'dropping a slow WebSocket client');
      this.#drop('slow');
      return false;
    }
    if (typeof frame === 'string') this.#ws.send(frame, { binary: false });
    else this.#writer.write(frame);
    return true;
  }

  #drop(why: StreamEnd): void {
    if (this.#over) return;
    this.#ws.close(
      WS_CLOSE_CODES.tryAgainLater,
      why === 'slow' ? 'too slow: reconnect and subscribe with after' : 'event stream failed: reconnect',
    );
    this.#finish(why);
  }

  #finish(why: StreamEnd): void {
    if (this.#over) return;
    this.#over = true;
    // Reading again, so that the close handshake completes (the frames still sent are dropped).
    if (this.#ws.isPaused) this.#ws.resume();
    for (const following of this.#following.values()) following.follower?.stop();
    this.#following.clear();
    this.#onEnd(this, why);
  }
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
