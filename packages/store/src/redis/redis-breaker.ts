/**
 * A circuit breaker over a process's Redis connections: it says whether a
 * request that needs Redis should be tried at all, so that while Redis is
 * unreachable requests fail at once instead of waiting on reconnects.
 *
 * - Closed (Redis available): every watched connection is `ready`, and a PING
 *   every `heartbeatMs` is answered within `pingTimeoutMs` (which notices a
 *   Redis that hangs with its connections open: SIGSTOP, `DEBUG SLEEP`, a
 *   network that drops packets).
 * - Open: a connection closed, or a PING went unanswered. Probes (every
 *   connection `ready`, and a PING answered in time) run after
 *   `minProbeIntervalMs`, doubling up to `maxProbeIntervalMs` (1 s), and at once
 *   whenever a connection becomes ready again; the first probe that passes
 *   closes the breaker.
 *
 * A breaker made while its connections are still connecting starts open
 * without an outage: the outage begins (`onOpen`) at the first connection
 * error, and a first connect that succeeds ends nothing (no `onClose`).
 * `onOpen` and `onClose` are called once per outage, for its one warning and
 * its one line of recovery in the log.
 *
 * A Redis Cluster client is watched through its masters (see `watchCluster`):
 * the breaker is closed while every master that serves slots answers.
 */
import type { Cluster } from 'ioredis';
import { type WatchedConnection, watchCluster } from './cluster-watch.js';

export type { WatchedConnection } from './cluster-watch.js';

/** An outage as the breaker saw it begin. */
export interface RedisOutage {
  /** What opened the breaker, such as `connection "commands" closed`. */
  reason: string;
  /** When (epoch ms). */
  since: number;
}

export interface RedisBreakerOptions {
  /** The connections that must all be ready, by a name for the log. */
  connections: Readonly<Record<string, WatchedConnection>>;
  /** The connection that heartbeats and probes PING. Default: the first. */
  pingConnection?: string;
  /** While closed, PING this often (ms; 0: never). Default 1,000. */
  heartbeatMs?: number;
  /** A PING unanswered for this long fails (ms). Default 1,000. */
  pingTimeoutMs?: number;
  /** The first probe after the breaker opens (ms), doubled after each failed one. Default 100. */
  minProbeIntervalMs?: number;
  /** The longest wait between probes (ms). Default 1,000. */
  maxProbeIntervalMs?: number;
  /** Called when an outage begins. */
  onOpen?: (outage: RedisOutage) => void;
  /** Called when it ends, with how long it lasted. */
  onClose?: (outage: RedisOutage & { downMs: number }) => void;
}

/** The breaker's state: `closed` lets requests through, `open` refuses them. */
export type BreakerState = 'closed' | 'open';

export class RedisBreaker {
  readonly #connections: [string, WatchedConnection][];
  readonly #pinged: WatchedConnection;
  readonly #heartbeatMs: number;
  readonly #pingTimeoutMs: number;
  readonly #minProbeMs: number;
  readonly #maxProbeMs: number;
  readonly #onOpen: (outage: RedisOutage) => void;
  readonly #onClose: (outage: RedisOutage & { downMs: number }) => void;
  readonly #unlisten: (() => void)[] = [];
  #outage: (RedisOutage & { announced: boolean }) | undefined;
  #probeMs: number;
  #probeTimer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #probing = false;
  /** A connection became ready during a probe: probe again at once if that one fails. */
  #probeAgain = false;
  /** A PING sent and not yet answered, and the connection's epoch when it was sent. */
  #unanswered: { ping: Promise<unknown>; epoch: number } | undefined;
  /** How many times the PINGed connection has become ready. */
  #epoch = 0;
  #disposed = false;

  constructor(options: RedisBreakerOptions) {
    this.#connections = Object.entries(options.connections).map(([name, connection]) => [
      name,
      isCluster(connection) ? watchCluster(connection) : connection,
    ]);
    const first = this.#connections[0];
    if (!first) throw new RangeError('RedisBreaker option "connections" must name at least one connection');
    const pinged = options.pingConnection ?? first[0];
    const connection = this.#connections.find(([name]) => name === pinged)?.[1];
    if (!connection) {
      throw new RangeError(`RedisBreaker option "pingConnection" names no connection: ${pinged}`);
    }
    this.#pinged = connection;
    this.#heartbeatMs = nonNegative('heartbeatMs', options.heartbeatMs ?? 1_000);
    this.#pingTimeoutMs = positive('pingTimeoutMs', options.pingTimeoutMs ?? 1_000);
    this.#minProbeMs = positive('minProbeIntervalMs', options.minProbeIntervalMs ?? 100);
    this.#maxProbeMs = positive('maxProbeIntervalMs', options.maxProbeIntervalMs ?? 1_000);
    if (this.#maxProbeMs < this.#minProbeMs) {
      throw new RangeError(
        `RedisBreaker option "maxProbeIntervalMs" must be at least minProbeIntervalMs (${this.#minProbeMs}), got ${this.#maxProbeMs}`,
      );
    }
    this.#probeMs = this.#minProbeMs;
    this.#onOpen = options.onOpen ?? (() => {});
    this.#onClose = options.onClose ?? (() => {});

    for (const [name, watched] of this.#connections) {
      const listen = (event: string, listener: () => void) => {
        watched.on(event, listener);
        this.#unlisten.push(() => watched.off(event, listener));
      };
      listen('close', () => this.trip(`connection "${name}" closed`));
      listen('end', () => this.trip(`connection "${name}" ended`));
      listen('error', () => this.trip(`connection "${name}" failed`));
      listen('ready', () => {
        if (watched === this.#pinged) this.#epoch++;
        this.#probeNow();
      });
    }
    if (this.#allReady()) this.#startHeartbeat();
    else {
      // Still connecting: not an outage unless a connection fails.
      this.#outage = { reason: 'connecting', since: Date.now(), announced: false };
      this.#scheduleProbe(this.#probeMs);
    }
  }

  /** Whether a request that needs Redis should be tried now. */
  get available(): boolean {
    return this.#outage === undefined && this.#allReady();
  }

  get state(): BreakerState {
    return this.#outage === undefined ? 'closed' : 'open';
  }

  /** The current outage, while the breaker is open (after a connection failed). */
  get outage(): RedisOutage | undefined {
    const outage = this.#outage;
    return outage?.announced ? { reason: outage.reason, since: outage.since } : undefined;
  }

  /** Opens the breaker (if closed) for `reason`; probes decide when it closes. */
  trip(reason: string): void {
    if (this.#disposed) return;
    if (this.#outage === undefined) {
      this.#outage = { reason, since: Date.now(), announced: false };
      this.#probeMs = this.#minProbeMs;
      this.#stopHeartbeat();
    }
    if (!this.#outage.announced) {
      this.#outage.reason = reason;
      this.#outage.announced = true;
      this.#onOpen({ reason, since: this.#outage.since });
    }
    this.#scheduleProbe(this.#probeMs);
  }

  /** Stops its timers and listeners (before the connections are closed, so that is not an outage). */
  dispose(): void {
    this.#disposed = true;
    this.#stopHeartbeat();
    clearTimeout(this.#probeTimer);
    this.#probeTimer = undefined;
    for (const unlisten of this.#unlisten.splice(0)) unlisten();
  }

  #allReady(): boolean {
    return this.#connections.every(([, watched]) => watched.status === 'ready');
  }

  #scheduleProbe(ms: number): void {
    if (this.#probeTimer || this.#disposed) return;
    this.#probeTimer = setTimeout(() => {
      this.#probeTimer = undefined;
      void this.#probe();
    }, ms);
    this.#probeTimer.unref();
  }

  /** A connection became ready: probe now rather than at the next interval. */
  #probeNow(): void {
    if (this.#outage === undefined || this.#disposed) return;
    if (this.#probing) {
      this.#probeAgain = true;
      return;
    }
    clearTimeout(this.#probeTimer);
    this.#probeTimer = undefined;
    this.#scheduleProbe(0);
  }

  async #probe(): Promise<void> {
    if (this.#probing || this.#outage === undefined) return;
    this.#probing = true;
    this.#probeAgain = false;
    try {
      const passed = this.#allReady() && (await this.#ping());
      if (this.#disposed || this.#outage === undefined) return;
      if (passed) {
        const { reason, since, announced } = this.#outage;
        this.#outage = undefined;
        this.#startHeartbeat();
        if (announced) this.#onClose({ reason, since, downMs: Date.now() - since });
        return;
      }
      this.#probeMs = Math.min(this.#probeMs * 2, this.#maxProbeMs);
      this.#scheduleProbe(this.#probeAgain ? 0 : this.#probeMs);
    } finally {
      this.#probing = false;
    }
  }

  /**
   * True when a PING is answered within the timeout. While one is unanswered
   * on the same connection no other is sent, but waited for (a Redis that
   * hangs gets no pile of them); after a reconnect a new one is sent.
   */
  async #ping(): Promise<boolean> {
    let ping = this.#unanswered?.epoch === this.#epoch ? this.#unanswered.ping : undefined;
    if (!ping) {
      const sent: Promise<unknown> = this.#pinged.ping().finally(() => {
        if (this.#unanswered?.ping === sent) this.#unanswered = undefined;
      });
      this.#unanswered = { ping: sent, epoch: this.#epoch };
      ping = sent;
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.#pingTimeoutMs);
    });
    try {
      return await Promise.race([ping.then(() => true), timeout]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  #startHeartbeat(): void {
    if (this.#heartbeatMs === 0 || this.#heartbeat || this.#disposed) return;
    this.#heartbeat = setInterval(() => void this.#beat(), this.#heartbeatMs);
    this.#heartbeat.unref();
  }

  #stopHeartbeat(): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  async #beat(): Promise<void> {
    if (this.#outage !== undefined || this.#probing) return;
    if (!this.#allReady()) {
      const down = this.#connections.find(([, watched]) => watched.status !== 'ready');
      this.trip(`connection "${down?.[0]}" is ${down?.[1].status}`);
      return;
    }
    if (!(await this.#ping()) && this.#outage === undefined) {
      this.trip(`PING unanswered for ${this.#pingTimeoutMs} ms`);
    }
  }
}

function isCluster(connection: WatchedConnection): connection is WatchedConnection & Cluster {
  return (connection as { isCluster?: unknown }).isCluster === true;
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`RedisBreaker option "${name}" must be a positive number of ms, got ${value}`);
  }
  return value;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`RedisBreaker option "${name}" must be 0 or a positive number of ms, got ${value}`);
  }
  return value;
}
