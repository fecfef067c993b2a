import type {
  CreateSessionBody,
  CreateSessionResponse,
  CreateSessionRunBody,
  CreateSessionRunResponse,
  MessagePage,
  RunEvent,
  Session,
  SessionList,
  TranscriptEntryView,
} from '@tether/protocol';
import { invalidOption, isRecord, TetherNotFoundError, TetherProtocolError } from './errors.js';
import type { RequestOptions, RequestSpec, SubmitOptions } from './request.js';
import { compareEventIds, followEvents, type StreamOptions } from './stream.js';

/**
 * An event of a session's stream: a run event (`runId` names its run) whose
 * `id` is its **session event id**, `<runId>:<eventId>`.
 */
export type SessionEvent = RunEvent;

export interface SessionListOptions extends RequestOptions {
  /** 1 to 100 (the server's default is 20). */
  limit?: number;
  cursor?: string;
}

export interface SessionDeleteOptions extends RequestOptions {
  /** Cancel the session's live runs first; without it a session with a live run is a 409. */
  cancel?: boolean;
}

export interface MessagesOptions extends RequestOptions {
  /** 1 to 1,000 entries a page (the server's default is 100). */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

/** Options of `sessions.events`: the run stream's, with a session event id to resume after. */
export interface SessionEventsOptions extends Omit<StreamOptions, 'lastEventId'> {
  /** Resume after this session event id (`<runId>:<eventId>`, sent as `Last-Event-ID`). */
  after?: string;
}

/** What the sessions API needs of the client that owns it. */
export interface SessionTransport {
  baseUrl: string;
  /** One request under the client's retry policy, its JSON body parsed (undefined when empty). */
  json(spec: RequestSpec): Promise<unknown>;
  /** One connection to an SSE route, as `client.stream` opens it: the 2xx response, or a typed error. */
  openStream(
    path: string,
    token: string | undefined,
    lastEventId: string | undefined,
    signal: AbortSignal,
  ): Promise<Response>;
  /** The idempotency key of a send: the given one, or one of the client's making when it retries. */
  idempotencyKey(given: string | undefined): string | undefined;
}

/**
 * `client.sessions`: conversations of runs. A session's runs follow one
 * another, each starting from the session's transcript; one stream carries
 * every run's events.
 *
 * ```ts
 * const session = await client.sessions.create();
 * const run = await client.sessions.send(session.id, { input: 'Hello' });
 * for await (const event of client.sessions.events(session.id)) {
 *   if (event.type === 'message.delta') process.stdout.write(event.data.text);
 *   if (event.type === 'run.completed' && event.runId === run.id) break;
 * }
 * ```
 */
export class TetherSessions {
  readonly #transport: SessionTransport;

  constructor(transport: SessionTransport) {
    this.#transport = transport;
  }

  /** `POST /v1/sessions`: a new session, with its session-scoped `token`. */
  async create(body: CreateSessionBody = {}, options: RequestOptions = {}): Promise<CreateSessionResponse> {
    const result = await this.#transport.json({
      method: 'POST',
      path: '/v1/sessions',
      body,
      signal: options.signal,
      idempotent: false,
    });
    if (!isRecord(result) || typeof result.id !== 'string') {
      throw new TetherProtocolError('POST /v1/sessions answered without a session id');
    }
    return result as unknown as CreateSessionResponse;
  }

  /** `GET /v1/sessions/:id`. */
  async get(id: string, options: RequestOptions = {}): Promise<Session> {
    const path = sessionPath(id);
    const result = await this.#transport.json({
      method: 'GET',
      path,
      signal: options.signal,
      idempotent: true,
    });
    if (!isRecord(result) || typeof result.status !== 'string') {
      throw new TetherProtocolError(`GET ${path} answered without a session status`);
    }
    return result as unknown as Session;
  }

  /** `GET /v1/sessions`: the caller's sessions, newest first, one page (`nextCursor` is null on the last). */
  async list(options: SessionListOptions = {}): Promise<SessionList> {
    positiveInteger('sessions.list limit', options.limit);
    const result = await this.#transport.json({
      method: 'GET',
      path: '/v1/sessions',
      query: { limit: options.limit, cursor: options.cursor },
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as SessionList;
    throw new TetherProtocolError('GET /v1/sessions answered without a data array');
  }

  /**
   * `DELETE /v1/sessions/:id`: the session, its transcript, its runs and its
   * workspace are gone. A live run makes it a `TetherConflictError`
   * (`ERR_SESSION_BUSY`) unless `cancel` is set.
   */
  async delete(id: string, options: SessionDeleteOptions = {}): Promise<void> {
    await this.#transport.json({
      method: 'DELETE',
      path: sessionPath(id),
      query: { cancel: options.cancel === undefined ? undefined : String(options.cancel) },
      signal: options.signal,
      // Sent again after a lost connection, a delete that happened would answer 404.
      idempotent: false,
    });
  }

  /**
   * `POST /v1/sessions/:id/runs`: sends a message, a run of the session. Its
   * fields override the session's defaults; `multitask` says what happens when
   * a run of the session is live (`enqueue`, the default; `reject`: a
   * `TetherConflictError`; `interrupt`). With retries on and no key given, the
   * client makes an `Idempotency-Key`, so a retried send is one run.
   */
  async send(
    id: string,
    body: CreateSessionRunBody,
    options: SubmitOptions = {},
  ): Promise<CreateSessionRunResponse> {
    const path = `${sessionPath(id)}/runs`;
    const key = this.#transport.idempotencyKey(options.idempotencyKey);
    const result = await this.#transport.json({
      method: 'POST',
      path,
      body,
      headers: key === undefined ? {} : { 'idempotency-key': key },
      signal: options.signal,
      idempotent: key !== undefined,
    });
    if (!isRecord(result) || typeof result.id !== 'string') {
      throw new TetherProtocolError(`POST ${path} answered without a run id`);
    }
    return result as unknown as CreateSessionRunResponse;
  }

  /** `GET /v1/sessions/:id/messages`: one page of the transcript, in order. */
  async messages(id: string, options: MessagesOptions = {}): Promise<MessagePage> {
    positiveInteger('sessions.messages limit', options.limit);
    const path = `${sessionPath(id)}/messages`;
    const result = await this.#transport.json({
      method: 'GET',
      path,
      query: { limit: options.limit, cursor: options.cursor },
      signal: options.signal,
      idempotent: true,
    });
    if (isRecord(result) && Array.isArray(result.data)) return result as unknown as MessagePage;
    throw new TetherProtocolError(`GET ${path} answered without a data array`);
  }

  /**
   * The whole transcript, page after page (`limit` entries a request), from
   * `cursor` or the start.
   */
  async *allMessages(
    id: string,
    options: MessagesOptions = {},
  ): AsyncGenerator<TranscriptEntryView, void, undefined> {
    let cursor = options.cursor;
    for (;;) {
      const page = await this.messages(id, { ...options, ...(cursor === undefined ? {} : { cursor }) });
      yield* page.data;
      if (page.nextCursor === null || page.data.length === 0) return;
      cursor = page.nextCursor;
    }
  }

  /**
   * Follows `GET /v1/sessions/:id/events` (SSE): every event of every run of
   * the session, in order, each once, reconnecting with `Last-Event-ID` after a
   * dropped connection (as `client.stream` does). It does not end between
   * runs: it ends when the session is deleted, when the signal aborts, or when
   * the caller breaks out of the loop.
   */
  events(id: string, options: SessionEventsOptions = {}): AsyncGenerator<SessionEvent, void, undefined> {
    const path = `${sessionPath(id)}/events`;
    const { after, token, ...rest } = options;
    return followEvents(
      {
        url: `${this.#transport.baseUrl}${path}`,
        open: (lastEventId, signal) => this.#transport.openStream(path, token, lastEventId, signal),
        seen: isSessionReplay,
        // A session's stream has no last event: it stays open between runs.
        isLast: () => false,
        // The server ends the stream cleanly when the session is gone (or it shuts down): ask which.
        askAfterEveryCleanEnd: true,
        finished: async (signal) => {
          try {
            await this.get(id, signal ? { signal } : {});
            return false;
          } catch (error) {
            if (error instanceof TetherNotFoundError) return true;
            throw error;
          }
        },
        endless: (failures) => `the session's event stream ended ${failures} times`,
      },
      { ...rest, ...(after === undefined ? {} : { lastEventId: after }) },
    );
  }
}

/**
 * Whether session event `id` is at or before `last` in the same run: a replay.
 * Events of another run are new; the server resumes right after the cursor,
 * in the session's order of runs, which ids alone do not tell.
 */
function isSessionReplay(id: string, last: string): boolean {
  const [run, event] = splitCursor(id);
  const [lastRun, lastEvent] = splitCursor(last);
  return run === lastRun && compareEventIds(event, lastEvent) <= 0;
}

function splitCursor(cursor: string): [string, string] {
  const colon = cursor.lastIndexOf(':');
  return colon < 0 ? [cursor, ''] : [cursor.slice(0, colon), cursor.slice(colon + 1)];
}

function sessionPath(id: string): string {
  if (typeof id !== 'string' || id === '') throw invalidOption('session id must be a non-empty string');
  return `/v1/sessions/${encodeURIComponent(id)}`;
}

function positiveInteger(field: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isInteger(value) && value > 0)) {
    throw invalidOption(`${field} must be an integer > 0 (got ${value})`);
  }
}
