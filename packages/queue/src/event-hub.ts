import type { RunEvent } from '@tether/protocol';
import { isRedisConnectionError, type RedisClient } from './connection.js';
import type { TetherKeys } from './keys.js';
import { parsePublishedEvent } from './replies.js';

export type EventListener = (event: RunEvent) => void;

/**
 * Live events of runs through one Redis subscriber connection, however many
 * listeners: a run's channel is subscribed while it has listeners and dropped
 * with the last one.
 *
 * When the connection comes back after an outage, the hub subscribes again to
 * every channel that has listeners, and drops the channels whose last listener
 * left while Redis could not be told.
 */
export class EventHub {
  readonly #subscriber: RedisClient;
  readonly #keys: TetherKeys;
  readonly #listeners = new Map<string, Set<EventListener>>();
  readonly #pending = new Map<string, Promise<unknown>>();
  /** Runs whose channel could not be unsubscribed (Redis was unreachable): dropped when it is back. */
  readonly #stale = new Set<string>();

  /** `subscriber` must be a connection of its own: it enters subscriber mode. */
  constructor(subscriber: RedisClient, keys: TetherKeys) {
    this.#subscriber = subscriber;
    this.#keys = keys;
    subscriber.on('message', (channel: string, message: string) => {
      const runId = channel.slice(channel.lastIndexOf(':') + 1);
      const listeners = this.#listeners.get(runId);
      if (!listeners) return;
      const event = parsePublishedEvent(message);
      for (const listener of listeners) listener(event);
    });
    subscriber.on('ready', () => this.#resync());
  }

  /**
   * Listens to a run's live events; resolves once Redis confirms the
   * subscription, or rejects (the listener is not kept) when Redis cannot be
   * reached. Returns the unsubscribe function.
   */
  async subscribe(runId: string, listener: EventListener): Promise<() => Promise<void>> {
    let listeners = this.#listeners.get(runId);
    const channel = this.#keys.run(runId).eventsChannel;
    this.#stale.delete(runId);
    let subscribing: Promise<unknown> | undefined;
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(runId, listeners);
      subscribing = this.#after(runId, () => this.#subscriber.subscribe(channel));
    } else {
      subscribing = this.#pending.get(runId);
    }
    listeners.add(listener);
    try {
      await subscribing;
    } catch (error) {
      this.#forget(runId, listener);
      throw error;
    }
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      if (!this.#forget(runId, listener)) return;
      try {
        await this.#after(runId, () => this.#subscriber.unsubscribe(channel));
      } catch (error) {
        if (!isRedisConnectionError(error)) throw error;
        // Redis is unreachable: ioredis would subscribe to it again when it is back.
        if (!this.#listeners.has(runId)) this.#stale.add(runId);
      }
    };
  }

  /** Removes a listener; true when it was the run's last. */
  #forget(runId: string, listener: EventListener): boolean {
    const current = this.#listeners.get(runId);
    if (!current?.delete(listener) || current.size > 0) return false;
    this.#listeners.delete(runId);
    return true;
  }

  /** The connection is (again) ready: subscribe to what has listeners, drop what was left behind. */
  #resync(): void {
    for (const runId of this.#listeners.keys()) {
      const channel = this.#keys.run(runId).eventsChannel;
      // A failure here means Redis went away again: the next `ready` tries again.
      this.#after(runId, () => this.#subscriber.subscribe(channel)).catch(() => {});
    }
    for (const runId of [...this.#stale]) {
      const channel = this.#keys.run(runId).eventsChannel;
      this.#after(runId, async () => {
        if (this.#listeners.has(runId) || !this.#stale.has(runId)) return;
        await this.#subscriber.unsubscribe(channel);
        this.#stale.delete(runId);
      }).catch(() => {});
    }
  }

  /** Runs subscribe/unsubscribe calls of one channel in order. */
  #after(runId: string, step: () => Promise<unknown>): Promise<unknown> {
    const previous = this.#pending.get(runId) ?? Promise.resolve();
    const next = previous.then(step, step);
    this.#pending.set(runId, next);
    const done = () => {
      if (this.#pending.get(runId) === next) this.#pending.delete(runId);
    };
    // Settled either way; the caller handles the rejection.
    next.then(done, done);
    return next;
  }

  /** How many runs have live listeners. */
  get channels(): number {
    return this.#listeners.size;
  }

  /** How many listeners in all. */
  get listeners(): number {
    let count = 0;
    for (const set of this.#listeners.values()) count += set.size;
    return count;
  }
}
