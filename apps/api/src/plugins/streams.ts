import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiConfig } from '../config.js';
import type { StreamEnd } from '../routes/runs/events/sse-response.js';

/** An open SSE stream, of a run or of a session. */
export interface LiveStream {
  readonly tenant: string;
  /** Writes the heartbeat comment. */
  ping(): void;
  /** Ends the response cleanly. */
  end(why: StreamEnd): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    streams: StreamRegistry;
  }
}

/**
 * The open SSE streams of this process (or its gateway WebSockets): the
 * per-tenant cap, one heartbeat timer for all of them, and their end at shutdown.
 */
export class StreamRegistry<S extends LiveStream = LiveStream> {
  readonly #streams = new Set<S>();
  readonly #perTenant = new Map<string, number>();
  readonly #maxPerTenant: number;
  readonly #heartbeatMs: number;
  #timer: NodeJS.Timeout | undefined;
  #closing = false;
  readonly #onEnded: (why: StreamEnd) => void;

  constructor(options: { maxPerTenant: number; heartbeatMs: number; onEnded?: (why: StreamEnd) => void }) {
    this.#maxPerTenant = options.maxPerTenant;
    this.#heartbeatMs = options.heartbeatMs;
    this.#onEnded = options.onEnded ?? (() => {});
  }

  /** Takes a slot of the tenant's cap; false when it is full (or the server is closing). */
  acquire(tenant: string): boolean {
    const count = this.#perTenant.get(tenant) ?? 0;
    if (this.#closing || count >= this.#maxPerTenant) return false;
    this.#perTenant.set(tenant, count + 1);
    return true;
  }

  /** Gives back a slot taken by `acquire` that no stream used. */
  release(tenant: string): void {
    const count = (this.#perTenant.get(tenant) ?? 1) - 1;
    if (count <= 0) this.#perTenant.delete(tenant);
    else this.#perTenant.set(tenant, count);
  }

  /** Tracks a stream whose slot was acquired; call `remove` from its end. */
  add(stream: S): void {
    this.#streams.add(stream);
    this.#timer ??= setInterval(() => {
      for (const open of this.#streams) open.ping();
    }, this.#heartbeatMs).unref();
  }

  remove(stream: S, why: StreamEnd): void {
    if (!this.#streams.delete(stream)) return;
    this.release(stream.tenant);
    this.#onEnded(why);
    if (this.#streams.size === 0 && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  get size(): number {
    return this.#streams.size;
  }

  /** The open streams, as a copy (safe to end them while iterating). */
  all(): S[] {
    return [...this.#streams];
  }

  /** Ends every stream cleanly; clients reconnect (elsewhere) with `Last-Event-ID`. */
  endAll(why: StreamEnd): void {
    for (const stream of [...this.#streams]) stream.end(why);
  }

  /** Refuses new streams and ends the open ones. */
  close(): void {
    this.#closing = true;
    this.endAll('shutdown');
  }
}

/**
 * Calls `listener` each time the event subscriber is ready again after losing
 * its connection: live events published meanwhile never reached it. Only a
 * connection that was lost since the last `ready` can have missed events: a
 * `ready` that follows no `close` (a ready check repeated while Redis loads,
 * say) calls nothing.
 */
export function onSubscriberResync(app: FastifyInstance, listener: () => void): void {
  let connected = app.subscriber.status === 'ready';
  let lost = false;
  app.subscriber.on('close', () => {
    if (connected) lost = true;
  });
  app.subscriber.on('ready', () => {
    if (lost) listener();
    connected = true;
    lost = false;
  });
}

export interface StreamsPluginOptions {
  config: Readonly<ApiConfig>;
}

const streamsPlugin: FastifyPluginAsync<StreamsPluginOptions> = async (app, { config }) => {
  const registry = new StreamRegistry({
    maxPerTenant: config.sseMaxPerTenant,
    heartbeatMs: config.sseHeartbeatMs,
    onEnded: (why) => app.metrics.sseEnded.inc({ reason: why }),
  });
  app.decorate('streams', registry);
  // Live events published while the subscriber was disconnected are lost to it:
  // end the streams so their clients resume from the log with Last-Event-ID.
  onSubscriberResync(app, () => {
    if (registry.size === 0) return;
    app.log.warn(
      { streams: registry.size },
      'event subscriber reconnected: ending streams so clients resume',
    );
    registry.endAll('resync');
  });
  // Streams never end on their own: end them before the server waits for open requests.
  app.addHook('preClose', async () => {
    registry.close();
  });
};

export default fp(streamsPlugin, {
  name: 'tether-streams',
  fastify: '5.x',
  dependencies: ['tether-redis', 'tether-metrics'],
});
