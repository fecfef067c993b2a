/**
 * A run's past events in order, for `tether logs`: a question (a client
 * tool call, an approval request) is held, with the events after it, until
 * something settles it: its answer, its output, its decision, its timeout,
 * or the run's end. Then it is shown as
 * settled, with no time left to answer. One still open at the end of the
 * history is shown as open: it is the one waiting now.
 */
import type { RunEvent } from '@tether/protocol';
import { TERMINAL_EVENT_TYPES } from '@tether/protocol';

const TERMINAL_TYPES: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);

/** Shows one event; `settled` for a question or tool call that was settled later. */
export type ShowEvent = (event: RunEvent, settled: boolean) => void;

export class EventHistory {
  /** The terminal event, once seen. */
  terminal: RunEvent | undefined;
  /** The last event taken, shown or held. */
  last: RunEvent | undefined;
  readonly #show: ShowEvent;
  /** The open question or tool call first, then the events that came after it. */
  #held: RunEvent[] = [];

  constructor(show: ShowEvent) {
    this.#show = show;
  }

  /** Takes the next event. */
  push(event: RunEvent): void {
    this.last = event;
    if (TERMINAL_TYPES.has(event.type)) this.terminal = event;
    this.#take(event);
  }

  /** The history ends here: what is still held is shown, its first entry as open. */
  end(): void {
    while (this.#held.length > 0) this.#release(false);
  }

  #take(event: RunEvent): void {
    const [open] = this.#held;
    if (open === undefined) {
      if (opens(event)) this.#held = [event];
      else this.#show(event, false);
      return;
    }
    this.#held.push(event);
    if (TERMINAL_TYPES.has(event.type) || (!opens(event) && requestOf(event) === requestOf(open))) {
      this.#release(true);
    }
  }

  /** Shows the held entry (settled or not) and takes the events after it again. */
  #release(settled: boolean): void {
    const [open, ...after] = this.#held;
    this.#held = [];
    if (open) this.#show(open, settled);
    for (const event of after) this.#take(event);
  }
}

/** The events that open a wait: a question, a client tool call, an approval request. */
function opens(event: RunEvent): boolean {
  return (
    event.type === 'clarify.requested' ||
    event.type === 'tool.requested' ||
    event.type === 'approval.requested'
  );
}

/** The request an event opens or settles, if any. */
function requestOf(event: RunEvent): string | undefined {
  switch (event.type) {
    case 'clarify.requested':
    case 'clarify.answered':
    case 'clarify.timed_out':
    case 'tool.requested':
    case 'tool.output_received':
    case 'tool.timed_out':
    case 'approval.requested':
    case 'approval.resolved':
      return event.data.requestId;
    default:
      return undefined;
  }
}
