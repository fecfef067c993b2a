import type { RedisClient, TetherKeys } from '@tether/store/redis';

/** What `@fastify/rate-limit` asks of a store (its `incr`, `read` and `child`). */
export interface RateLimitStore {
  incr(key: string, callback: StoreCallback, timeWindow: number, max: number): void;
  read(key: string, callback: StoreCallback, timeWindow: number, max: number): void;
  child(routeOptions: { routeInfo?: { method: string; url: string } }): RateLimitStore;
}

type StoreCallback = (error: Error | null, result: { current: number; ttl: number }) => void;

export interface SharedCountersOptions {
  redis: RedisClient;
  /** Names the counters in Redis. */
  keys: Pick<TetherKeys, 'rateLimit'>;
  /** How often local counts are added to the shared ones (ms). */
  syncIntervalMs: number;
  /** Told about the first failed sync of a streak (the counts are kept and retried every interval). */
  onError: (error: unknown) => void;
  /** Counters kept in memory at most; the idle ones of past windows go first. Default 100,000. */
  maxKeys?: number;
}

interface Counter {
  /** The window's number: `floor(now / windowMs)`. */
  window: number;
  windowMs: number;
  /** The shared count as Redis last answered it (every instance's requests, ours included). */
  shared: number;
  /** Requests counted here and not yet sent. */
  unsent: number;
  /** Requests counted here and being sent. */
  sending: number;
}

/**
 * Request counts per key and fixed window (aligned to the epoch, so every API
 * instance has the same windows), shared through Redis without a round trip
 * per request: a request is counted here at once, and every `syncIntervalMs`
 * one pipeline adds the local counts to the shared ones (`INCRBY`, expiring
 * with the window) and learns the totals. The counters share a hash slot
 * (see `TetherKeys.rateLimit`), so that pipeline is valid on a cluster.
 *
 * With one API instance the count is exact. With several, an instance sees the
 * others' requests up to one sync interval late, so together they may let
 * through a little more than the limit: at most what the other instances
 * receive in one interval. When Redis is unreachable each instance keeps
 * limiting on what it knows, and sends its counts once Redis is back.
 */
export class SharedCounters {
  readonly #options: SharedCountersOptions;
  readonly #counters = new Map<string, Counter>();
  #timer: NodeJS.Timeout | undefined;
  #syncing: Promise<void> | undefined;
  #closed = false;
  /** A sync has failed and none has succeeded since: the next failures are not reported again. */
  #failing = false;

  constructor(options: SharedCountersOptions) {
    if (!Number.isInteger(options.syncIntervalMs) || options.syncIntervalMs < 1) {
      throw new RangeError(`syncIntervalMs must be a positive integer, got ${options.syncIntervalMs}`);
    }
    this.#options = options;
  }

  /** Counts a request of `key`; returns the window's count so far and the ms left in it. */
  increment(key: string, windowMs: number, now = Date.now()): { current: number; ttl: number } {
    const counter = this.#counter(key, windowMs, now);
    counter.unsent++;
    this.#schedule();
    return state(counter, now);
  }

  /** The window's count so far without counting a request. */
  peek(key: string, windowMs: number, now = Date.now()): { current: number; ttl: number } {
    const counter = this.#live(key, windowMs, now);
    return counter ? state(counter, now) : { current: 0, ttl: 0 };
  }

  /** Sends the counts not yet sent and waits for the answer. */
  async sync(): Promise<void> {
    while (this.#syncing) await this.#syncing;
    this.#syncing = this.#send().finally(() => {
      this.#syncing = undefined;
      // Counts given back by a failed sync are tried again after the interval.
      for (const counter of this.#counters.values()) {
        if (counter.unsent > 0) {
          this.#schedule();
          break;
        }
      }
    });
    await this.#syncing;
  }

  /** Stops the timer and sends what is left (once: after a failure here, nothing is retried). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.sync().catch((error: unknown) => this.#options.onError(error));
  }

  /** The key's counter of the current window, if it has one. */
  #live(key: string, windowMs: number, now: number): Counter | undefined {
    const counter = this.#counters.get(key);
    return counter && counter.windowMs === windowMs && counter.window === Math.floor(now / windowMs)
      ? counter
      : undefined;
  }

  #counter(key: string, windowMs: number, now: number): Counter {
    const live = this.#live(key, windowMs, now);
    if (live) return live;
    // A new window starts from zero (a past window's unsent counts no longer matter).
    if (!this.#counters.has(key) && this.#counters.size >= (this.#options.maxKeys ?? 100_000)) {
      this.#makeRoom(now);
    }
    const counter = { window: Math.floor(now / windowMs), windowMs, shared: 0, unsent: 0, sending: 0 };
    this.#counters.set(key, counter);
    return counter;
  }

  #schedule(): void {
    if (this.#timer || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.sync().then(
        () => {
          this.#failing = false;
        },
        (error: unknown) => {
          if (!this.#failing) this.#options.onError(error);
          this.#failing = true;
        },
      );
    }, this.#options.syncIntervalMs);
    this.#timer.unref();
  }

  async #send(): Promise<void> {
    const now = Date.now();
    const batch: [string, Counter, number][] = [];
    for (const [key, counter] of this.#counters) {
      if (counter.unsent === 0) continue;
      if (counter.window !== Math.floor(now / counter.windowMs)) {
        counter.unsent = 0;
        continue;
      }
      batch.push([key, counter, counter.unsent]);
      counter.sending += counter.unsent;
      counter.unsent = 0;
    }
    this.#prune(now);
    if (batch.length === 0) return;
    const pipeline = this.#options.redis.pipeline();
    for (const [key, counter, count] of batch) {
      const redisKey = this.#options.keys.rateLimit(key, counter.windowMs, counter.window);
      pipeline.incrby(redisKey, count);
      // Kept a little past its window, for instances whose clocks run slightly behind.
      pipeline.pexpireat(redisKey, (counter.window + 1) * counter.windowMs + 10_000);
    }
    let replies: [Error | null, unknown][];
    try {
      replies = (await pipeline.exec()) ?? [];
    } catch (error) {
      for (const [, counter, count] of batch) requeue(counter, count);
      throw error;
    }
    let failure: Error | undefined;
    batch.forEach(([, counter, count], i) => {
      const [error, total] = replies[2 * i] ?? [new Error('no reply')];
      if (error) {
        failure ??= error;
        requeue(counter, count);
        return;
      }
      counter.sending -= count;
      counter.shared = Math.max(counter.shared, Number(total) - counter.sending);
    });
    if (failure) throw failure;
  }

  /** At the cap: past windows go first, then the longest-kept counter (its key starts again from what Redis says). */
  #makeRoom(now: number): void {
    this.#prune(now);
    const oldest = this.#counters.keys().next();
    if (this.#counters.size >= (this.#options.maxKeys ?? 100_000) && !oldest.done) {
      this.#counters.delete(oldest.value);
    }
  }

  /** Forgets counters of past windows with nothing left to send. */
  #prune(now: number): void {
    for (const [key, counter] of this.#counters) {
      const past = counter.window !== Math.floor(now / counter.windowMs);
      if (past && counter.unsent === 0 && counter.sending === 0) this.#counters.delete(key);
    }
  }
}

/** What the limiter sees: every request of the window known here, and the ms left in it. */
function state(counter: Counter, now: number): { current: number; ttl: number } {
  return {
    current: counter.shared + counter.sending + counter.unsent,
    ttl: (counter.window + 1) * counter.windowMs - now,
  };
}

function requeue(counter: Counter, count: number): void {
  counter.sending -= count;
  counter.unsent += count;
}

/** A `@fastify/rate-limit` store over shared counters; routes with their own limits get their own keys. */
export function sharedCounterStore(counters: SharedCounters, keyPrefix = ''): RateLimitStore {
  return {
    incr(key, callback, timeWindow) {
      callback(null, counters.increment(keyPrefix + key, timeWindow));
    },
    read(key, callback, timeWindow) {
      callback(null, counters.peek(keyPrefix + key, timeWindow));
    },
    child(routeOptions) {
      const route = routeOptions.routeInfo;
      return sharedCounterStore(counters, route ? `${keyPrefix}${route.method}${route.url}-` : keyPrefix);
    },
  };
}
