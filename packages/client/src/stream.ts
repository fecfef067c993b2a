/**
 * Following an event stream (a run's, or a session's) across dropped connections.
 *
 * Strategy: open the stream (with `Last-Event-ID` after the first
 * connection), parse SSE from the body, and yield each event. When the
 * connection drops, stalls (no byte, not even a heartbeat, for `idleTimeoutMs`)
 * or ends before the feed's last event, wait with exponential backoff and open
 * a new one after the last id seen. Invariants:
 * - every event is yielded at most once: ids only increase in the event log, so
 *   an id the feed says was seen already is a replay and is dropped;
 * - the iterator ends right after the feed's last event (a run's
 *   `run.completed`, `run.failed`, `run.cancelled`), or when a connection ends
 *   cleanly with nothing new and the feed turns out to be finished already
 *   (the run ended, the session is gone);
 * - errors that reconnecting cannot fix (401, 404, a malformed event) are
 *   thrown at once; the backoff counter resets whenever an event arrives.
 */
import type { RunEvent, RunEventType, RunStatus } from '@tether/protocol';
import { RUN_EVENT_TYPES, TERMINAL_EVENT_TYPES, TERMINAL_STATUSES } from '@tether/protocol';
import {
  invalidOption,
  isRecord,
  TetherApiError,
  TetherConnectionError,
  TetherProtocolError,
  TetherTimeoutError,
} from './errors.js';
import { sleep } from './sleep.js';
import { type SseMessage, SseParser } from './sse-parser.js';

export interface StreamReconnectOptions {
  /** First wait before reconnecting, unless the server sent `retry:` (default 500 ms). */
  initialDelayMs?: number;
  /** Longest wait between attempts (default 10 s). */
  maxDelayMs?: number;
  /** Consecutive failed attempts (no new event) before giving up (default 10). */
  maxAttempts?: number;
}

/** Options of `TetherClient.stream`. */
export interface StreamOptions {
  /** Resume after this event id (sent as `Last-Event-ID`); events up to it are not yielded. */
  lastEventId?: string;
  /** Stops the iteration: the iterator throws the signal's reason. */
  signal?: AbortSignal;
  /** A run-scoped read token (from `submit`), sent as `?token=` instead of the API key. */
  token?: string;
  reconnect?: StreamReconnectOptions;
  /** Reconnect when no byte arrives for this long (default 45 s: three missed 15 s heartbeats). */
  idleTimeoutMs?: number;
}

/** What the stream needs from a client: open one connection, and read the run's status. */
export interface RunEventSource {
  /** Opens the SSE response (2xx, checked) or throws a typed error. */
  open(lastEventId: string | undefined, signal: AbortSignal): Promise<Response>;
  /** The run's current status, to tell a finished run from a dropped stream. */
  status(signal: AbortSignal | undefined): Promise<RunStatus>;
  /** For error messages. */
  url: string;
}

/**
 * A stream of events to follow across connections: how to open one, when a
 * replayed event is one already yielded, and when following is over. The run
 * stream and the session stream are both followed through it.
 */
export interface EventFeed {
  /** For error messages. */
  url: string;
  /** Opens the SSE response (2xx, checked) or throws a typed error. */
  open(lastEventId: string | undefined, signal: AbortSignal): Promise<Response>;
  /** True when the event `id` is at or before `last`: a replay, dropped. */
  seen(id: string, last: string): boolean;
  /** True when nothing follows this event: the iteration ends after yielding it. */
  isLast(event: RunEvent): boolean;
  /**
   * Asked when a connection ends cleanly with nothing new: true when there is
   * nothing more to follow (the run ended, the session is gone).
   */
  finished(signal: AbortSignal | undefined): Promise<boolean>;
  /**
   * Ask `finished` after every clean end, also one that brought new events (a
   * stream that ends cleanly only when it is over, or the server shuts down).
   */
  askAfterEveryCleanEnd?: boolean;
  /** Why giving up, after `failures` connections in a row ended without the end. */
  endless(failures: number): string;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(RUN_EVENT_TYPES);
const TERMINAL_TYPES: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);
const TERMINAL: ReadonlySet<RunStatus> = new Set(TERMINAL_STATUSES);

const DEFAULTS = { initialDelayMs: 500, maxDelayMs: 10_000, maxAttempts: 10, idleTimeoutMs: 45_000 };

/**
 * Yields the run's events in order, each once, until its terminal event.
 * See the module comment for the reconnect rules.
 */
export function followRunEvents(
  source: RunEventSource,
  options: StreamOptions = {},
): AsyncGenerator<RunEvent, void, undefined> {
  return followEvents(
    {
      url: source.url,
      open: (lastEventId, signal) => source.open(lastEventId, signal),
      seen: (id, last) => compareEventIds(id, last) <= 0,
      isLast: (event) => TERMINAL_TYPES.has(event.type),
      // The server had nothing after our last id: the run may be over already (we hold its terminal event's id).
      finished: async (signal) => TERMINAL.has(await source.status(signal)),
      endless: (failures) => `the event stream ended ${failures} times without the run's terminal event`,
    },
    options,
  );
}

/**
 * Yields a feed's events in order, each once, until `feed.isLast` or
 * `feed.finished` says it is over, reconnecting as the module comment says.
 */
export async function* followEvents(
  feed: EventFeed,
  options: Omit<StreamOptions, 'token'> = {},
): AsyncGenerator<RunEvent, void, undefined> {
  const { signal } = options;
  const initialDelayMs = nonNegative(
    'reconnect.initialDelayMs',
    options.reconnect?.initialDelayMs,
    DEFAULTS.initialDelayMs,
  );
  const maxDelayMs = nonNegative('reconnect.maxDelayMs', options.reconnect?.maxDelayMs, DEFAULTS.maxDelayMs);
  const maxAttempts = nonNegative(
    'reconnect.maxAttempts',
    options.reconnect?.maxAttempts,
    DEFAULTS.maxAttempts,
  );
  const idleTimeoutMs = positive('idleTimeoutMs', options.idleTimeoutMs, DEFAULTS.idleTimeoutMs);

  let lastId = options.lastEventId;
  let serverRetryMs: number | undefined;
  let failures = 0;

  while (true) {
    signal?.throwIfAborted();
    const connection = new AbortController();
    const onAbort = () => connection.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let received = 0;
    let cleanEnd = false;
    let lastError: unknown;
    try {
      const response = await feed.open(lastId, connection.signal);
      const type = response.headers.get('content-type') ?? '';
      if (!type.includes('text/event-stream')) {
        await response.body?.cancel().catch(() => undefined);
        throw new TetherProtocolError(
          `${feed.url} answered with ${type || 'no content type'}, not an SSE stream`,
        );
      }
      if (!response.body) throw new TetherProtocolError(`${feed.url} answered with an empty body`);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      const parser = new SseParser({
        onRetry: (ms) => {
          serverRetryMs = ms;
        },
      });
      try {
        while (true) {
          const chunk = await readWithin(reader, idleTimeoutMs, feed.url, connection);
          if (chunk.done) {
            cleanEnd = true;
            break;
          }
          for (const message of parser.feed(decoder.decode(chunk.value, { stream: true }))) {
            const event = toRunEvent(message);
            if (lastId !== undefined && feed.seen(event.id, lastId)) continue;
            lastId = event.id;
            received++;
            failures = 0;
            // An event type this client does not know yet is skipped, not yielded untyped.
            if (!KNOWN_TYPES.has(event.type)) continue;
            yield event;
            if (feed.isLast(event)) return;
          }
        }
      } finally {
        reader.cancel().catch(() => undefined);
      }
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (!isRetryable(error)) throw error;
      lastError = error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      connection.abort();
    }

    if (cleanEnd && (received === 0 || feed.askAfterEveryCleanEnd)) {
      // The server ended the stream and had nothing after our last id: ask
      // whether anything more can come, don't spin.
      try {
        if (await feed.finished(signal)) return;
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (!isRetryable(error)) throw error;
        lastError = error;
      }
    }

    failures++;
    if (failures > maxAttempts) {
      if (lastError !== undefined) throw lastError;
      throw new TetherConnectionError(feed.url, {
        detail: feed.endless(failures),
      });
    }
    const base = serverRetryMs ?? initialDelayMs;
    let delay = Math.min(maxDelayMs, base * 2 ** (failures - 1));
    const retryAfter = (lastError as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
    if (typeof retryAfter === 'number') delay = Math.max(delay, retryAfter);
    await sleep(delay, signal);
  }
}

/**
 * Orders two event log ids. Redis stream ids (`<ms>-<seq>`) and plain integers
 * compare numerically part by part; anything else compares as strings.
 */
export function compareEventIds(a: string, b: string): number {
  const pa = a.split('-');
  const pb = b.split('-');
  if (pa.every(isDigits) && pb.every(isDigits)) {
    for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
      const c = compareDigits(pa[i] ?? '0', pb[i] ?? '0');
      if (c !== 0) return c;
    }
    return 0;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

function isDigits(s: string): boolean {
  return /^\d+$/.test(s);
}

function compareDigits(x: string, y: string): number {
  const a = x.replace(/^0+(?=\d)/, '');
  const b = y.replace(/^0+(?=\d)/, '');
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function toRunEvent(message: SseMessage): RunEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.data);
  } catch (cause) {
    throw new TetherProtocolError(`event ${message.id ?? '(no id)'} has data that is not JSON`, { cause });
  }
  if (!isRecord(parsed))
    throw new TetherProtocolError(`event ${message.id ?? '(no id)'} is not a JSON object`);
  const id = typeof parsed.id === 'string' ? parsed.id : message.id;
  if (!id) throw new TetherProtocolError('the event stream sent an event without an id');
  const type = typeof parsed.type === 'string' ? parsed.type : message.event;
  // The contract sends the whole event as data; the SSE fields fill in what it leaves out.
  return { ...parsed, id, type: type as RunEventType } as RunEvent;
}

function isRetryable(error: unknown): boolean {
  if (error instanceof TetherApiError) return error.retryable;
  return error instanceof TetherConnectionError || error instanceof TetherTimeoutError;
}

async function readWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  ms: number,
  url: string,
  connection: AbortController,
): ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new TetherTimeoutError(url, ms, 'stream data');
      connection.abort(error);
      reject(error);
    }, ms);
  });
  try {
    return await Promise.race([reader.read(), idle]);
  } catch (error) {
    if (error instanceof TetherTimeoutError || connection.signal.aborted) throw error;
    // The body broke mid-stream (socket closed, `terminated`).
    throw new TetherConnectionError(url, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

function nonNegative(field: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(value >= 0)) throw invalidOption(`stream option ${field} must be >= 0 (got ${value})`);
  return value;
}

function positive(field: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(value > 0)) throw invalidOption(`stream option ${field} must be > 0 (got ${value})`);
  return value;
}
