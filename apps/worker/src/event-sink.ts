import { type RunEventInput, TetherError } from '@tether/protocol';
import type { RunStore } from '@tether/store/runs';

export interface EventSinkOptions {
  store: RunStore;
  runId: string;
  /** The worker's fencing token: events of a worker that lost the run are dropped. */
  token: string;
  /** How long streamed text may gather before it is written as one `message.delta`. Default 50 ms. */
  deltaFlushMs?: number;
  /** Told about each write failure as it happens. */
  onError: (error: unknown) => void;
}

/**
 * Writes an attempt's events to the run's log in the order they were emitted,
 * in as few Redis calls as possible:
 * - a background write starts on the next turn of the event loop, so the events
 *   emitted together (a model turn's usage and message) go out in one call, and
 *   none at all when a checkpoint save follows at once;
 * - events emitted while a write is in flight go out together in the next one;
 * - the events not yet written when the attempt saves a checkpoint, suspends or
 *   ends are handed to that step (`take()`), which appends them in the same
 *   script, before its own change;
 * - streamed text (`message.delta`) is gathered for a few milliseconds into one
 *   event; any other event first takes the text gathered before it.
 *
 * A failed write is not dropped silently: `take()` and `flush()` throw a
 * retryable error, so the attempt stops and is retried from its last
 * checkpoint, emitting the events after it again.
 */
export class EventSink {
  readonly #options: EventSinkOptions;
  #pending: RunEventInput[] = [];
  #inFlight: Promise<void> | undefined;
  #text = '';
  #timer: NodeJS.Timeout | undefined;
  #scheduled: NodeJS.Immediate | undefined;
  #failure: unknown;
  /** While a caller waits to take the pending events, no new background write starts. */
  #holding = false;

  constructor(options: EventSinkOptions) {
    this.#options = options;
  }

  readonly emit = (event: RunEventInput): void => {
    if (event.type === 'message.delta') {
      this.#text += event.data.text;
      this.#timer ??= setTimeout(() => {
        this.#takeText();
        this.#write();
      }, this.#options.deltaFlushMs ?? 50);
      return;
    }
    this.#takeText();
    this.#pending.push(event);
    this.#scheduled ??= setImmediate(() => {
      this.#scheduled = undefined;
      this.#write();
    });
  };

  /**
   * Waits for the write in flight, then returns (and forgets) every event not
   * yet written, for the caller to append in its own step. Throws if a write failed.
   */
  async take(): Promise<RunEventInput[]> {
    this.#takeText();
    if (this.#scheduled) {
      clearImmediate(this.#scheduled);
      this.#scheduled = undefined;
    }
    this.#holding = true;
    try {
      while (this.#inFlight) await this.#inFlight;
    } finally {
      this.#holding = false;
    }
    this.#check();
    const events = this.#pending;
    this.#pending = [];
    return events;
  }

  /** Writes every event emitted so far; throws if one could not be written. */
  async flush(): Promise<void> {
    const events = await this.take();
    if (events.length > 0)
      await this.#options.store.appendEvents(this.#options.runId, events, this.#options.token);
  }

  #takeText(): void {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#text === '') return;
    this.#pending.push({ type: 'message.delta', data: { text: this.#text } });
    this.#text = '';
  }

  /** Starts a write of everything pending, unless one is in flight (it starts the next when done). */
  #write(): void {
    if (this.#inFlight || this.#holding || this.#pending.length === 0) return;
    const { store, runId, token, onError } = this.#options;
    const events = this.#pending;
    this.#pending = [];
    this.#inFlight = store
      .appendEvents(runId, events, token)
      .then(
        () => undefined,
        (error: unknown) => {
          this.#failure ??= error;
          onError(error);
        },
      )
      .finally(() => {
        this.#inFlight = undefined;
        this.#write();
      });
  }

  #check(): void {
    if (this.#failure !== undefined) {
      throw new TetherError(
        'ERR_EVENT_LOG_WRITE',
        `An event could not be written to the run's log: ${String(this.#failure)}`,
        { retryable: true, cause: this.#failure },
      );
    }
  }
}
