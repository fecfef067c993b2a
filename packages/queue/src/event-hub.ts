import type { RunEvent } from '@tether/protocol';
import type { Redis } from 'ioredis';
import type { TetherKeys } from './keys.js';
import { parsePublishedEvent } from './run-store.js';

export type EventListener = (event: RunEvent) => void;

/**
 * Live events of runs through one Redis subscriber connection, however many
 * listeners: a run's channel is subscribed while it has listeners and dropped
 * with the last one.
 */
export class EventHub {
  readonly #subscriber: Redis;
  readonly #keys: TetherKeys;
  readonly #listeners = new Map<string, Set<EventListener>>();
  readonly #pending = new Map<string, Promise<unknown>>();

  /** `subscriber` must be a connection of its own: it enters subscriber mode. */
  constructor(subscriber: Redis, keys: TetherKeys) {
    this.#subscriber = subscriber;
    this.#keys = keys;
    subscriber.on('message', (channel: string, message: string) => {
      const runId = channel.slice(channel.lastIndexOf(':') + 1);
      const listeners = this.#listeners.get(runId);
      if (!listeners) return;
      const event = parsePublishedEvent(message);
      for (const listener of listeners) listener(event);
    });
  }

  /** Listens to a run's live events; resolves once Redis confirms the subscription. Returns the unsubscribe function. */
  async subscribe(runId: string, listener: EventListener): Promise<() => Promise<void>> {
    let listeners = this.#listeners.get(runId);
    const channel = this.#keys.run(runId).eventsChannel;
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(runId, listeners);
      const subscribing = this.#after(runId, () => this.#subscriber.subscribe(channel));
      listeners.add(listener);
      await subscribing;
    } else {
      listeners.add(listener);
      await this.#pending.get(runId);
    }
    let done = false;
    return async () => {
      if (done) return;
      done = true;
      const current = this.#listeners.get(runId);
      if (!current) return;
      current.delete(listener);
      if (current.size === 0) {
        this.#listeners.delete(runId);
        await this.#after(runId, () => this.#subscriber.unsubscribe(channel));
      }
    };
  }

  /** Runs subscribe/unsubscribe calls of one channel in order. */
  #after(runId: string, step: () => Promise<unknown>): Promise<unknown> {
    const previous = this.#pending.get(runId) ?? Promise.resolve();
    const next = previous.then(step, step);
    this.#pending.set(runId, next);
    void next.finally(() => {
      if (this.#pending.get(runId) === next) this.#pending.delete(runId);
    });
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
