import type { RunEvent } from '@tether/protocol';
import { isRedisConnectionError, type RedisClient } from '../redis/connection.js';
import type { TetherKeys } from '../redis/keys.js';
import { parsePublishedEvent } from './replies.js';

export type EventListener = (event: RunEvent) => void;

/**
 * Live events of runs (and the runs added to sessions) through one Redis
 * subscriber connection, however many listeners: a channel is subscribed
 * while it has listeners and dropped with the last one.
 *
 * When the connection comes back after an outage, the hub subscribes again to
 * every channel that has listeners, and drops the channels whose last listener
 * left while Redis could not be told.
 */
export class EventHub {
  readonly #subscriber: RedisClient;
  readonly #keys: TetherKeys;
  /** By channel: how its messages are decoded (once, for every listener), and its listeners. */
  readonly #channels = new Map<
    string,
    { decode: (message: string) => unknown; listeners: Set<(value: never) => void> }
  >();
  readonly #pending = new Map<string, Promise<unknown>>();
  /** Channels that could not be unsubscribed (Redis was unreachable): dropped when it is back. */
  readonly #stale = new Set<string>();

  /** `subscriber` must be a connection of its own: it enters subscriber mode. */
  constructor(subscriber: RedisClient, keys: TetherKeys) {
    this.#subscriber = subscriber;
    this.#keys = keys;
    subscriber.on('message', (channel: string, message: string) => {
      const entry = this.#channels.get(channel);
      if (!entry) return;
      const value = entry.decode(message) as never;
      for (const listener of entry.listeners) listener(value);
    });
    subscriber.on('ready', () => this.#resync());
  }

  /**
   * Listens to a run's live events; resolves once Redis confirms the
   * subscription, or rejects (the listener is not kept) when Redis cannot be
   * reached. Returns the unsubscribe function.
   */
  subscribe(runId: string, listener: EventListener): Promise<() => Promise<void>> {
    return this.#listen(this.#keys.run(runId).eventsChannel, parsePublishedEvent, listener);
  }

  /** Listens for the runs added to a session (their ids), as `subscribe` does for a run's events. */
  subscribeSessionRuns(sessionId: string, listener: (runId: string) => void): Promise<() => Promise<void>> {
    return this.#listen(this.#keys.session(sessionId).runsChannel, (message) => message, listener);
  }

  async #listen<T>(
    channel: string,
    decode: (message: string) => T,
    listener: (value: T) => void,
  ): Promise<() => Promise<void>> {
    let entry = this.#channels.get(channel);
    this.#stale.delete(channel);
    let subscribing: Promise<unknown> | undefined;
    if (!entry) {
      entry = { decode, listeners: new Set() };
      this.#channels.set(channel, entry);
      subscribing = this.#after(channel, () => this.#subscriber.subscribe(channel));
    } else {
      subscribing = this.#pending.get(channel);
    }
    const added = listener as (value: never) => void;
    entry.listeners.add(added);
    try {
      await subscribing;
    } catch (error) {
      this.#forget(channel, added);
      throw error;
    }
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      if (!this.#forget(channel, added)) return;
      try {
        await this.#after(channel, () => this.#subscriber.unsubscribe(channel));
      } catch (error) {
        if (!isRedisConnectionError(error)) throw error;
        // Redis is unreachable: ioredis would subscribe to it again when it is back.
        if (!this.#channels.has(channel)) this.#stale.add(channel);
      }
    };
  }

  /** Removes a listener; true when it was the channel's last. */
  #forget(channel: string, listener: (value: never) => void): boolean {
    const current = this.#channels.get(channel);
    if (!current?.listeners.delete(listener) || current.listeners.size > 0) return false;
    this.#channels.delete(channel);
    return true;
  }

  /** The connection is (again) ready: subscribe to what has listeners, drop what was left behind. */
  #resync(): void {
    for (const channel of this.#channels.keys()) {
      // A failure here means Redis went away again: the next `ready` tries again.
      this.#after(channel, () => this.#subscriber.subscribe(channel)).catch(() => {});
    }
    for (const channel of [...this.#stale]) {
      this.#after(channel, async () => {
        if (this.#channels.has(channel) || !this.#stale.has(channel)) return;
        await this.#subscriber.unsubscribe(channel);
        this.#stale.delete(channel);
      }).catch(() => {});
    }
  }

  /** Runs subscribe/unsubscribe calls of one channel in order. */
  #after(channel: string, step: () => Promise<unknown>): Promise<unknown> {
    const previous = this.#pending.get(channel) ?? Promise.resolve();
    const next = previous.then(step, step);
    this.#pending.set(channel, next);
    const done = () => {
      if (this.#pending.get(channel) === next) this.#pending.delete(channel);
    };
    // Settled either way; the caller handles the rejection.
    next.then(done, done);
    return next;
  }

  /** How many channels (runs and sessions) have live listeners. */
  get channels(): number {
    return this.#channels.size;
  }

  /** How many listeners in all. */
  get listeners(): number {
    let count = 0;
    for (const entry of this.#channels.values()) count += entry.listeners.size;
    return count;
  }
}
