/**
 * One SSE client following one run: replay, then live, without gaps or
 * duplicates.
 *
 * 1. Subscribe to the run's live events first (the hub resolves once Redis
 *    has confirmed), buffering what arrives.
 * 2. Read the backlog after the client's cursor from the event log, page by
 *    page, and write it.
 * 3. Write the buffered events, then every live event as it comes, skipping
 *    any whose id is not after the last id written.
 *
 * An event is appended and published in the same Lua script, so an event
 * missing from the backlog read in step 2 was published after step 1 and is in
 * the buffer; one present in both is written once, because ids only grow.
 * The stream ends after the terminal event. A client that reads too slowly
 * (more than `maxBufferBytes` unsent) is dropped, not buffered without bound:
 * it reconnects with `Last-Event-ID` and misses nothing.
 */
import type { ServerResponse } from 'node:http';
import { type RunEvent, TERMINAL_EVENT_TYPES, TERMINAL_STATUSES } from '@tether/protocol';
import type { EventHub, RunStore } from '@tether/store/runs';
import type { FastifyBaseLogger } from 'fastify';
import { compareEventIds } from './event-ids.js';
import { SseResponse, type StreamEnd } from './sse-response.js';

/** Events read from the log per request while replaying. */
const PAGE = 500;
/** Live events held while the backlog is written; a run that outpaces its replay this much drops the client. */
const MAX_BUFFERED = 10_000;
/** How long a replay waits for a client to take what was written before it drops the client. */
const DRAIN_TIMEOUT_MS = 30_000;

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);

/**
 * Frames by event object: the hub hands the same object to every client of a
 * run, so it is serialised and UTF-8 encoded once, not once per client.
 */
const frames = new WeakMap<RunEvent, Buffer>();

/** An event as an SSE frame: `id:`, `event:` and the whole event as `data:`. */
export function sseFrame(event: RunEvent): Buffer {
  let frame = frames.get(event);
  if (frame === undefined) {
    frame = Buffer.from(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    frames.set(event, frame);
  }
  return frame;
}

export interface EventStreamOptions {
  runId: string;
  tenant: string;
  res: ServerResponse;
  store: RunStore;
  hub: EventHub;
  /** Events after this cursor are sent (`0`: the whole log). */
  after: string;
  maxBufferBytes: number;
  log: FastifyBaseLogger;
  /** Called once, when the stream is over for any reason. */
  onEnd: (stream: EventStream, why: StreamEnd) => void;
}

export class EventStream {
  readonly runId: string;
  readonly tenant: string;
  readonly #options: EventStreamOptions;
  readonly #res: ServerResponse;
  readonly #sse: SseResponse;
  #lastId: string;
  #replaying = true;
  #buffer: RunEvent[] = [];
  #unsubscribe: (() => Promise<void>) | undefined;

  constructor(options: EventStreamOptions) {
    this.#options = options;
    this.runId = options.runId;
    this.tenant = options.tenant;
    this.#res = options.res;
    this.#lastId = options.after;
    this.#sse = new SseResponse({
      res: options.res,
      maxBufferBytes: options.maxBufferBytes,
      log: options.log,
      slow: { message: 'dropping a slow event-stream client', fields: { runId: options.runId } },
      onFinish: (why) => this.#finish(why),
    });
  }

  /** Runs the stream: replay, then live. Resolves once it is live (or over). */
  async start(): Promise<void> {
    const { store, hub, runId } = this.#options;
    this.#sse.watchClose();
    try {
      const unsubscribe = await hub.subscribe(runId, this.#onLive);
      this.#unsubscribe = unsubscribe;
      if (this.#sse.over) {
        await unsubscribe();
        return;
      }
      if (!(await this.#replay())) return;
      this.#replaying = false;
      const buffered = this.#buffer;
      this.#buffer = [];
      for (const event of buffered) if (!this.#deliver(event)) return;
      // The run may have ended before we subscribed with its terminal event gone from
      // the log, or it may end while its last event is still on the way to our
      // subscriber connection: a terminal status means the log holds the rest.
      const run = await store.get(runId);
      if (this.#sse.over) return;
      if (!run || TERMINAL_STATUSES.includes(run.status)) {
        if (!(await this.#replay())) return;
        this.end('terminal');
      }
    } catch (error) {
      if (this.#sse.over) return;
      this.#options.log.warn({ err: error, runId }, 'event stream failed');
      this.#sse.drop('error');
    }
  }

  /**
   * Writes the log after the last id written, waiting for the socket to drain
   * whenever its buffer is full (the backlog may be large; live events wait in
   * the buffer meanwhile). False once the stream is over.
   */
  async #replay(): Promise<boolean> {
    const { store, runId } = this.#options;
    for (;;) {
      const page = await store.readEvents(runId, this.#lastId, PAGE);
      for (const event of page) {
        if (!this.#deliver(event)) return false;
        if (this.#res.writableNeedDrain && !(await this.#drained())) {
          this.#sse.drop('slow');
          return false;
        }
        if (this.#sse.over) return false;
      }
      if (this.#sse.over) return false;
      if (page.length < PAGE) return true;
    }
  }

  /** Resolves true once the socket has drained (or closed), false after the timeout. */
  #drained(): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (drained: boolean) => () => {
        clearTimeout(timer);
        this.#res.off('drain', onDrain);
        this.#res.off('close', onDrain);
        resolve(drained);
      };
      const onDrain = done(true);
      const timer = setTimeout(done(false), DRAIN_TIMEOUT_MS);
      this.#res.on('drain', onDrain);
      this.#res.on('close', onDrain);
    });
  }

  readonly #onLive = (event: RunEvent): void => {
    if (this.#sse.over) return;
    if (!this.#replaying) {
      this.#deliver(event);
      return;
    }
    this.#buffer.push(event);
    if (this.#buffer.length > MAX_BUFFERED) this.#sse.drop('slow');
  };

  /** Writes one event unless already written; false once the stream is over. */
  #deliver(event: RunEvent): boolean {
    if (this.#sse.over) return false;
    if (compareEventIds(event.id, this.#lastId) <= 0) return true;
    if (!this.#sse.hasRoom()) return false;
    this.#lastId = event.id;
    this.#res.write(sseFrame(event));
    if (TERMINAL.has(event.type)) {
      this.end('terminal');
      return false;
    }
    return true;
  }

  /** The heartbeat comment, which also keeps proxies from closing an idle connection. */
  ping(): void {
    this.#sse.ping();
  }

  /** Ends the response cleanly (the client sees the end of the stream). */
  end(why: StreamEnd): void {
    this.#sse.end(why);
  }

  /** The stream's own clean-up once its response is over (see `SseResponse`). */
  #finish(why: StreamEnd): void {
    this.#buffer = [];
    const unsubscribe = this.#unsubscribe;
    this.#unsubscribe = undefined;
    unsubscribe?.().catch((error: unknown) =>
      this.#options.log.warn({ err: error, runId: this.runId }, 'could not unsubscribe'),
    );
    this.#options.onEnd(this, why);
  }

  /** The id of the last event written (the cursor a reconnecting client sends back). */
  get lastId(): string {
    return this.#lastId;
  }

  get over(): boolean {
    return this.#sse.over;
  }
}
