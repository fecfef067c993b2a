import type { RedisClient } from '../redis/connection.js';
import * as scripts from './commands/scripts.js';

export interface LeaseOptions {
  redis: RedisClient;
  /** The lease's key (from keys.ts, with its hash tag). */
  key: string;
  /** This process's id, unique in the deployment. */
  holder: string;
  /** How long the lease lasts without a renewal (ms); it is renewed every third of that. Default 15,000. */
  ttlMs?: number;
  /** Told when taking or renewing the lease failed (Redis unreachable): the lease counts as lost. */
  onError?: ((error: unknown) => void) | undefined;
}

/**
 * One process of many holds this lease at a time: a key set with `NX PX` by
 * whoever finds it free, renewed by its holder every third of its life
 * (`holdLease`), given up when the holder stops (`releaseLease`). A holder that
 * dies loses it when it expires; any process then takes it at its next look.
 *
 * `held` is what the last look found, so a holder that cannot reach Redis
 * stops counting itself the holder at once, and two processes may both think
 * they hold it only for the moment between one's loss and its next look.
 */
export class Lease {
  readonly key: string;
  readonly holder: string;
  readonly ttlMs: number;
  readonly #redis: RedisClient;
  readonly #onError: ((error: unknown) => void) | undefined;
  #held = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: LeaseOptions) {
    this.#redis = options.redis;
    this.key = options.key;
    this.holder = options.holder;
    this.ttlMs = options.ttlMs ?? 15_000;
    this.#onError = options.onError;
    if (!Number.isInteger(this.ttlMs) || this.ttlMs < 100) {
      throw new RangeError(`Lease option "ttlMs" must be an integer of at least 100, got ${this.ttlMs}`);
    }
  }

  /** Whether this process held the lease at its last look. */
  get held(): boolean {
    return this.#held;
  }

  /**
   * Looks now (takes or renews the lease), then every third of its life until
   * `stop`; resolves with what the first look found.
   */
  start(): Promise<boolean> {
    if (this.#timer || this.#stopped) return Promise.resolve(this.#held);
    this.#timer = setInterval(() => void this.look(), Math.floor(this.ttlMs / 3));
    this.#timer.unref();
    return this.look();
  }

  /** Takes the lease if free, renews it if ours; resolves with whether it is ours now. */
  async look(): Promise<boolean> {
    if (this.#stopped) return false;
    try {
      const reply = await scripts.holdLease.run(this.#redis, {
        keys: { lease: this.key },
        args: { holder: this.holder, ttlMs: this.ttlMs },
      });
      this.#held = reply === 1 && !this.#stopped;
    } catch (error) {
      this.#held = false;
      this.#onError?.(error);
    }
    return this.#held;
  }

  /** Stops looking and gives the lease up if this process holds it. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    const held = this.#held;
    this.#held = false;
    if (!held) return;
    await scripts.releaseLease
      .run(this.#redis, { keys: { lease: this.key }, args: { holder: this.holder } })
      .catch((error: unknown) => this.#onError?.(error));
  }
}
