import type { ServerResponse } from 'node:http';
import { type SessionEvent, SessionFollower } from '@tether/store/sessions';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { SseResponse, type StreamEnd } from '../runs/events/sse-response.js';

/**
 * One SSE client following a session: every run's events in order (see
 * `SessionFollower`), each as `id:` (its session cursor, `<runId>:<eventId>`),
 * `event:` and `data:`. The stream stays open between runs and ends when the
 * session is deleted. A client that reads too slowly is dropped, as on a run's
 * stream: it reconnects with `Last-Event-ID` and misses nothing.
 */
export class SessionStream {
  readonly tenant: string;
  readonly #res: ServerResponse;
  readonly #sse: SseResponse;
  readonly #log: FastifyBaseLogger;
  readonly #follower: SessionFollower;
  readonly #onEnd: (stream: SessionStream, why: StreamEnd) => void;

  constructor(options: {
    app: FastifyInstance;
    sessionId: string;
    tenant: string;
    res: ServerResponse;
    after: { runId: string; eventId: string } | undefined;
    log: FastifyBaseLogger;
    onEnd: (stream: SessionStream, why: StreamEnd) => void;
  }) {
    this.tenant = options.tenant;
    this.#res = options.res;
    this.#sse = new SseResponse({
      res: options.res,
      maxBufferBytes: options.app.config.sseMaxBufferBytes,
      log: options.log,
      slow: { message: 'dropping a slow session event-stream client' },
      onFinish: (why) => this.#finish(why),
    });
    this.#log = options.log;
    this.#onEnd = options.onEnd;
    this.#follower = new SessionFollower({
      store: options.app.store,
      hub: options.app.hub,
      sessionId: options.sessionId,
      after: options.after,
      onEvent: (event) => this.#write(event),
      onStop: (why, error) => {
        if (why === 'error') this.#log.warn({ err: error }, 'session event stream failed');
        if (why === 'gone') this.end('terminal');
        else this.#sse.drop(why === 'slow' ? 'slow' : 'error');
      },
    });
  }

  async start(): Promise<void> {
    this.#sse.watchClose();
    try {
      await this.#follower.start();
    } catch (error) {
      this.#log.warn({ err: error }, 'session event stream failed');
      this.#sse.drop('error');
    }
  }

  #write(event: SessionEvent): boolean {
    if (this.#sse.over || !this.#sse.hasRoom()) return false;
    this.#res.write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    return true;
  }

  /** The heartbeat comment; skipped, not dropped, while the client is behind (its next event drops it). */
  ping(): void {
    if (this.#sse.withinBound()) this.#sse.ping();
  }

  end(why: StreamEnd): void {
    this.#sse.end(why);
  }

  /** The stream's own clean-up once its response is over (see `SseResponse`). */
  #finish(why: StreamEnd): void {
    this.#follower.stop();
    this.#onEnd(this, why);
  }
}
