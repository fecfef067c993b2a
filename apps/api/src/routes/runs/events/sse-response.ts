import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';

/** Why a stream ended (a run's or a session's SSE stream, or a gateway WebSocket). */
export type StreamEnd = 'terminal' | 'client' | 'slow' | 'shutdown' | 'resync' | 'error';

const PING = Buffer.from(': ping\n\n');

export interface SseResponseOptions {
  /** The response, its SSE headers sent (`openSse`). */
  res: ServerResponse;
  /** A client with more unsent bytes than this is dropped. */
  maxBufferBytes: number;
  log: FastifyBaseLogger;
  /** The line logged when a slow client is dropped, and the fields that name its stream. */
  slow: { message: string; fields?: Record<string, unknown> };
  /** Called once, when the response is over for any reason (the stream's own clean-up, then its `onEnd`). */
  onFinish: (why: StreamEnd) => void;
}

/**
 * The end of an SSE response, which a run's stream and a session's share: it
 * is over once, for the first reason given, whether it ended cleanly (`end`:
 * the client sees the end of the stream), was dropped (`drop`: the connection
 * closed, unsent data discarded) or the client went away. A client that reads
 * too slowly (more than `maxBufferBytes` unsent) is dropped, not buffered
 * without bound: it reconnects with `Last-Event-ID` and misses nothing.
 */
export class SseResponse {
  readonly #options: SseResponseOptions;
  readonly #res: ServerResponse;
  #over = false;

  constructor(options: SseResponseOptions) {
    this.#options = options;
    this.#res = options.res;
  }

  /** Ends the response when the client closes the connection; call when the stream starts. */
  watchClose(): void {
    this.#res.on('close', () => this.#finish('client'));
  }

  get over(): boolean {
    return this.#over;
  }

  /** Whether what the client has not taken yet is within the bound. */
  withinBound(): boolean {
    return this.#res.writableLength <= this.#options.maxBufferBytes;
  }

  /**
   * Whether the client keeps up (see `withinBound`); a client that does not is
   * dropped. Checked before a write, so one event larger than the bound still goes out.
   */
  hasRoom(): boolean {
    if (this.withinBound()) return true;
    const { log, slow } = this.#options;
    log.info({ ...slow.fields, unsent: this.#res.writableLength }, slow.message);
    this.drop('slow');
    return false;
  }

  /** The heartbeat comment, which also keeps proxies from closing an idle connection; a slow client is dropped. */
  ping(): void {
    if (this.#over || !this.hasRoom()) return;
    this.#res.write(PING);
  }

  /** Ends the response cleanly (the client sees the end of the stream). */
  end(why: StreamEnd): void {
    if (this.#over) return;
    this.#res.end();
    this.#finish(why);
  }

  /** Closes the connection without ending the response: unsent data is discarded. */
  drop(why: StreamEnd): void {
    if (this.#over) return;
    this.#res.destroy();
    this.#finish(why);
  }

  #finish(why: StreamEnd): void {
    if (this.#over) return;
    this.#over = true;
    this.#options.onFinish(why);
  }
}
