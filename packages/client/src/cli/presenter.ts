/**
 * Showing events to a person or a script, and asking their questions. With no
 * view, each event is one JSON line on stdout and nothing else is written
 * there. Otherwise the `RunView` renders events, and when an `ask` is given,
 * each `clarify.requested` is asked while events keep coming: events that
 * arrive meanwhile wait in a buffer (so they do not tear the prompt) and are
 * shown when it ends. The prompt ends early when the same question is
 * answered elsewhere or times out, or when its run ends.
 */
import type { RunEvent } from '@tether/protocol';
import { TERMINAL_EVENT_TYPES } from '@tether/protocol';
import type { TetherClient } from '../client.js';
import { TetherConflictError, TetherNotFoundError } from '../errors.js';
import type { ClarifyAnswer } from './clarify-prompt.js';
import type { Colors, Output } from './io.js';
import type { RunView } from './run-view.js';

const TERMINAL_TYPES: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);

/** A question as it arrived. */
export type ClarifyEvent = Extract<RunEvent, { type: 'clarify.requested' }>;

/**
 * Asks a question; resolves with the answer, `expired`, or `closed` once `signal` aborts; rejects
 * when it cannot be asked.
 */
export type Ask = (event: ClarifyEvent, signal: AbortSignal) => Promise<ClarifyAnswer>;

export interface PresenterOptions {
  client: TetherClient;
  stdout: Output;
  colors: Colors;
  /** Renders events; undefined: JSON lines. */
  view: RunView | undefined;
  /** Asks questions (also with JSON lines, after the event's line); undefined: they are shown, not asked. */
  ask?: Ask | undefined;
  /** Stops posting answers. */
  signal?: AbortSignal | undefined;
  /** A question could not be asked or answered (Ctrl-C at the prompt, the API refused). */
  onAskError: (error: unknown) => void;
  /** Each event, once it has been shown (after any prompt before it ended). */
  onShown?: ((event: RunEvent) => void) | undefined;
  now?: (() => number) | undefined;
}

interface PendingPrompt {
  requestId: string;
  controller: AbortController;
  buffer: RunEvent[];
  settled: Promise<void>;
}

export class EventPresenter {
  readonly #options: PresenterOptions;
  #pending: PendingPrompt | undefined;

  constructor(options: PresenterOptions) {
    this.#options = options;
  }

  /** Shows one event (or holds it while a question is asked). */
  handle(event: RunEvent): void {
    const pending = this.#pending;
    if (pending) {
      pending.buffer.push(event);
      const settles =
        (event.type === 'clarify.answered' || event.type === 'clarify.timed_out') &&
        event.data.requestId === pending.requestId;
      if (settles || TERMINAL_TYPES.has(event.type)) pending.controller.abort();
      return;
    }
    const { view, stdout, ask } = this.#options;
    const now = this.#options.now ?? Date.now;
    if (ask && event.type === 'clarify.requested' && Date.parse(event.data.expiresAt) > now()) {
      // The prompt shows the question; rendering it too would print it twice. JSON lines show every event.
      if (!view) stdout.write(`${JSON.stringify(event)}\n`);
      this.#ask(event, ask, view);
      return;
    }
    if (view) view.render(event);
    else stdout.write(`${JSON.stringify(event)}\n`);
    this.#options.onShown?.(event);
  }

  /** Resolves once no question is being asked (and the events held meanwhile are shown). */
  async settled(): Promise<void> {
    while (this.#pending) await this.#pending.settled;
  }

  /** Ends a question being asked, if any. */
  close(): void {
    this.#pending?.controller.abort();
  }

  #ask(event: ClarifyEvent, ask: Ask, view: RunView | undefined): void {
    const { client, colors: c, signal } = this.#options;
    const controller = new AbortController();
    const state: PendingPrompt = {
      requestId: event.data.requestId,
      controller,
      buffer: [],
      settled: Promise.resolve(),
    };
    this.#pending = state;
    state.settled = (async () => {
      try {
        const result = await ask(event, controller.signal);
        // At the deadline the prompt shows "(no answer in time)"; the server's `clarify.timed_out` follows.
        if (result.kind === 'answer') {
          try {
            // The server's `clarify.answered` event confirms the answer next.
            await client.answer(event.runId, event.data.requestId, result.answer, signal ? { signal } : {});
          } catch (error) {
            if (!(error instanceof TetherConflictError || error instanceof TetherNotFoundError)) throw error;
            view?.line(c.yellow(`  Too late: ${error.message}`));
          }
        }
      } catch (error) {
        // Aborted because the question was settled elsewhere or the run ended: not an error.
        if (!controller.signal.aborted) this.#options.onAskError(error);
      } finally {
        this.#pending = undefined;
        this.#options.onShown?.(event);
        for (const held of state.buffer) this.handle(held);
      }
    })();
  }
}
