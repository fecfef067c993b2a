import type { ServerResponse } from 'node:http';
import { type SessionEvent, SessionFollower } from '@tether/queue';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { StreamEnd } from '../runs/events/event-stream.js';

const PING = Buffer.from(': ping\n\n');

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
  readonly #maxBufferBytes: number;
  readonly #log: FastifyBaseLogger;
  readonly #follower: SessionFollower;
  readonly #onEnd: (stream: SessionStream, why: StreamEnd) => void;
  #over = false;

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
    this.#maxBufferBytes = options.app.config.sseMaxBufferBytes;
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
        else this.#drop(why === 'slow' ? 'slow' : 'error');
      },
    });
  }

  async start(): Promise<void> {
    this.#res.on('close', () => this.#finish('client'));
    try {
      await this.#follower.start();
    } catch (error) {
      this.#log.warn({ err: error }, 'session event stream failed');
      this.#drop('error');
    }
  }

  #write(event: SessionEvent): boolean {
    if (this.#over) return false;
    if (this.#res.writableLength > this.#maxBufferBytes) {
      this.#log.info({ unsent: this.#res.writableLength }, 'dropping a slow session event-stream client');
      this.#drop('slow');
      return false;
    }
    this.#res.write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    return true;
  }

  ping(): void {
    if (!this.#over && this.#res.writableLength <= this.#maxBufferBytes) this.#res.write(PING);
  }

  end(why: StreamEnd): void {
    if (this.#over) return;
    this.#res.end();
    this.#finish(why);
  }

  #drop(why: StreamEnd): void {
    if (this.#over) return;
    this.#res.destroy();
    this.#finish(why);
  }

  #finish(why: StreamEnd): void {
    if (this.#over) return;
    this.#over = true;
    this.#follower.stop();
    this.#onEnd(this, why);
  }
}
