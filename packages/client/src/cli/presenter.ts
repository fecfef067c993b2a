/**
 * Showing events to a person or a script, and asking their questions and
 * approval requests. With no view, each event is one JSON line on stdout and
 * nothing else is written there. Otherwise the `RunView` renders events, and
 * when an `ask` is given, each `clarify.requested` is asked while events keep
 * coming (when an `askApproval` is given, each `approval.requested` too, after
 * the view has shown the call): events that arrive meanwhile wait in a buffer
 * (so they do not tear the prompt) and are shown when it ends. The prompt ends
 * early when the same request is settled elsewhere (answered, decided, timed
 * out), or when its run ends.
 */
import type { ApprovalDecisionBody, RunEvent } from '@tether/protocol';
import { TERMINAL_EVENT_TYPES } from '@tether/protocol';
import type { TetherClient } from '../client.js';
import { TetherConflictError, TetherNotFoundError } from '../errors.js';
import type { ApprovalChoice } from './approval-prompt.js';
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

/** An approval request as it arrived. */
export type ApprovalEvent = Extract<RunEvent, { type: 'approval.requested' }>;

/**
 * Asks for a decision and posts it with `decide`; resolves once it is taken, `expired`, or
 * `closed` once `signal` aborts; rejects when it cannot be asked or posted.
 */
export type AskApproval = (
  event: ApprovalEvent,
  decide: (decision: ApprovalDecisionBody) => Promise<void>,
  signal: AbortSignal,
) => Promise<ApprovalChoice>;

export interface PresenterOptions {
  client: TetherClient;
  stdout: Output;
  colors: Colors;
  /** Renders events; undefined: JSON lines. */
  view: RunView | undefined;
  /** Asks questions (also with JSON lines, after the event's line); undefined: they are shown, not asked. */
  ask?: Ask | undefined;
  /** Asks for decisions on approval requests; undefined: they are shown, not asked. */
  askApproval?: AskApproval | undefined;
  /** Stops posting answers and decisions. */
  signal?: AbortSignal | undefined;
  /** A question or a decision could not be asked or posted (Ctrl-C at the prompt, the API refused). */
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

  /** Shows one event (or holds it while a question or an approval request is asked). */
  handle(event: RunEvent): void {
    const pending = this.#pending;
    if (pending) {
      pending.buffer.push(event);
      if (settledRequest(event) === pending.requestId || TERMINAL_TYPES.has(event.type)) {
        pending.controller.abort();
      }
      return;
    }
    const { view, stdout, ask, askApproval } = this.#options;
    const now = this.#options.now ?? Date.now;
    if (ask && event.type === 'clarify.requested' && Date.parse(event.data.expiresAt) > now()) {
      // The prompt shows the question; rendering it too would print it twice. JSON lines show every event.
      if (!view) stdout.write(`${JSON.stringify(event)}\n`);
      this.#ask(event, (signal) => this.#answer(event, ask, signal));
      return;
    }
    if (askApproval && event.type === 'approval.requested' && Date.parse(event.data.expiresAt) > now()) {
      // The view shows the call (its arguments may be long); the prompt under it is one line.
      if (view) view.render(event);
      else stdout.write(`${JSON.stringify(event)}\n`);
      this.#ask(event, (signal) => this.#decide(event, askApproval, signal));
      return;
    }
    if (view) view.render(event);
    else stdout.write(`${JSON.stringify(event)}\n`);
    this.#options.onShown?.(event);
  }

  /** Resolves once nothing is being asked (and the events held meanwhile are shown). */
  async settled(): Promise<void> {
    while (this.#pending) await this.#pending.settled;
  }

  /** Ends a question or an approval request being asked, if any. */
  close(): void {
    this.#pending?.controller.abort();
  }

  /** Asks (through `asking`) while holding the events that come meanwhile; shows them once it ends. */
  #ask(event: ClarifyEvent | ApprovalEvent, asking: (signal: AbortSignal) => Promise<void>): void {
    const { view, colors: c } = this.#options;
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
        await asking(controller.signal);
      } catch (error) {
        if (error instanceof TetherConflictError || error instanceof TetherNotFoundError) {
          // Settled elsewhere first, or the run ended: its own event says how.
          view?.line(c.yellow(`  Too late: ${error.message}`));
        } else if (!controller.signal.aborted) {
          // Aborted because the request was settled elsewhere or the run ended: not an error.
          this.#options.onAskError(error);
        }
      } finally {
        this.#pending = undefined;
        this.#options.onShown?.(event);
        for (const held of state.buffer) this.handle(held);
      }
    })();
  }

  async #answer(event: ClarifyEvent, ask: Ask, signal: AbortSignal): Promise<void> {
    const result = await ask(event, signal);
    // At the deadline the prompt shows "(no answer in time)"; the server's `clarify.timed_out` follows.
    if (result.kind !== 'answer') return;
    // The server's `clarify.answered` event confirms the answer next.
    const posting = this.#options.signal ? { signal: this.#options.signal } : {};
    await this.#options.client.answer(event.runId, event.data.requestId, result.answer, posting);
  }

  async #decide(event: ApprovalEvent, askApproval: AskApproval, signal: AbortSignal): Promise<void> {
    const posting = this.#options.signal ? { signal: this.#options.signal } : {};
    // At the deadline the prompt says so; the server's `approval.resolved` (timed out) follows. Once
    // taken, the decision's own `approval.resolved` follows.
    await askApproval(
      event,
      // A crew child's call, told on its root, is decided on the child.
      (decision) =>
        this.#options.client.decide(
          event.data.childRunId ?? event.runId,
          event.data.requestId,
          decision,
          posting,
        ),
      signal,
    );
  }
}

/** The request an event settles: a question's answer or timeout, an approval request's decision. */
function settledRequest(event: RunEvent): string | undefined {
  switch (event.type) {
    case 'clarify.answered':
    case 'clarify.timed_out':
    case 'approval.resolved':
      return event.data.requestId;
    default:
      return undefined;
  }
}
