import { type RunEventInput, TetherError } from '@tether/protocol';
import type { RunStore } from '@tether/queue';

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
 * Writes an attempt's events to the run's log in the order they were emitted.
 * Streamed text (`message.delta`) is gathered for a few milliseconds and
 * written as one event, so a fast model does not write one Redis entry per
 * token; any other event first writes the text gathered before it.
 * `clarify.requested` is not written here: the suspension writes it in the same
 * step as the question, so it is never published before the question is stored.
 *
 * A failed write is not dropped silently: `flush()` (which runs before every
 * checkpoint save) throws a retryable error, so the attempt stops and is
 * retried from its last checkpoint, emitting the events after it again.
 */
export class EventSink {
  readonly #options: EventSinkOptions;
  #chain: Promise<void> = Promise.resolve();
  #text = '';
  #timer: NodeJS.Timeout | undefined;
  #failure: unknown;

  constructor(options: EventSinkOptions) {
    this.#options = options;
  }

  readonly emit = (event: RunEventInput): void => {
    if (event.type === 'clarify.requested') return;
    if (event.type === 'message.delta') {
      this.#text += event.data.text;
      this.#timer ??= setTimeout(() => this.#flushText(), this.#options.deltaFlushMs ?? 50);
      return;
    }
    this.#flushText();
    this.#write(event);
  };

  /** Resolves once every event emitted so far is written; throws if one could not be. */
  async flush(): Promise<void> {
    this.#flushText();
    await this.#chain;
    if (this.#failure !== undefined) {
      throw new TetherError(
        'ERR_EVENT_LOG_WRITE',
        `An event could not be written to the run's log: ${String(this.#failure)}`,
        {
          retryable: true,
          cause: this.#failure,
        },
      );
    }
  }

  #flushText(): void {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#text === '') return;
    const text = this.#text;
    this.#text = '';
    this.#write({ type: 'message.delta', data: { text } });
  }

  #write(event: RunEventInput): void {
    const { store, runId, token, onError } = this.#options;
    this.#chain = this.#chain.then(async () => {
      try {
        await store.append(runId, event, token);
      } catch (error) {
        this.#failure ??= error;
        onError(error);
      }
    });
  }
}
