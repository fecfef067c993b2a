import type { RedisClient } from './connection.js';

/**
 * A process's copy of something per tenant that is read far more often than it changes (the
 * event types its webhook endpoints want, its default approval policy): kept for `ttlMs`, or
 * until a change is published on `channel` (the tenant, as the message), whichever comes first.
 * Loads of one tenant at the same time share one read. Changes published while the subscriber
 * connection was down were missed, so every copy is dropped when it is ready again.
 */
export interface TenantCacheOptions<T> {
  /** Reads the tenant's value from Redis. */
  load: (tenant: string) => Promise<T>;
  /** How long a copy is kept without a change heard (ms). */
  ttlMs: number;
  /** The pub/sub channel changes are published on (the tenant as the message). */
  channel: string;
  /** A connection in subscriber mode (shared); without one, copies last `ttlMs`. */
  subscriber?: RedisClient | undefined;
}

export class TenantCache<T> {
  readonly #load: (tenant: string) => Promise<T>;
  readonly #ttlMs: number;
  readonly #channel: string;
  readonly #subscriber: RedisClient | undefined;
  readonly #copies = new Map<string, { value: T; until: number }>();
  readonly #loading = new Map<string, Promise<T>>();
  /** One more per change heard: a read that began before a change does not keep what it read. */
  #changes = 0;
  readonly #onMessage = (channel: string, tenant: string) => {
    if (channel !== this.#channel) return;
    this.#changes++;
    this.#copies.delete(tenant);
    this.#loading.delete(tenant);
  };
  readonly #onReady = () => {
    this.#changes++;
    this.#copies.clear();
    this.#loading.clear();
    this.#subscriber?.subscribe(this.#channel).catch(() => {});
  };

  constructor(options: TenantCacheOptions<T>) {
    this.#load = options.load;
    this.#ttlMs = options.ttlMs;
    this.#channel = options.channel;
    this.#subscriber = options.subscriber;
    if (this.#subscriber) {
      this.#subscriber.on('message', this.#onMessage);
      this.#subscriber.on('ready', this.#onReady);
    }
  }

  /** Resolves once changes are heard (the subscription is confirmed). */
  async listen(): Promise<void> {
    await this.#subscriber?.subscribe(this.#channel);
  }

  /** The tenant's value: the copy while it lasts, else read (once, however many ask at a time). */
  get(tenant: string): Promise<T> {
    const copy = this.#copies.get(tenant);
    if (copy && copy.until > Date.now()) return Promise.resolve(copy.value);
    let loading = this.#loading.get(tenant);
    if (!loading) {
      const read = this.#read(tenant).finally(() => {
        if (this.#loading.get(tenant) === read) this.#loading.delete(tenant);
      });
      loading = read;
      this.#loading.set(tenant, loading);
    }
    return loading;
  }

  /** Drops this process's copy of the tenant's value (after a change it made itself). */
  forget(tenant: string): void {
    this.#changes++;
    this.#copies.delete(tenant);
    this.#loading.delete(tenant);
  }

  async #read(tenant: string): Promise<T> {
    const changes = this.#changes;
    const value = await this.#load(tenant);
    if (changes === this.#changes) this.#copies.set(tenant, { value, until: Date.now() + this.#ttlMs });
    return value;
  }

  /** Stops listening for changes. */
  close(): void {
    this.#subscriber?.off('message', this.#onMessage);
    this.#subscriber?.off('ready', this.#onReady);
  }
}
