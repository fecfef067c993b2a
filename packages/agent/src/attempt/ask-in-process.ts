/**
 * A host's handler awaited in process (design 5.3): a clarify question's
 * `onClarifyRequest` (and an approval's `onApprovalRequest`) against the
 * request's deadline and the run's abort signal, and whichever comes first
 * decides. A late answer or rejection after that is ignored (never an
 * unhandled rejection).
 */

/** What the handler gets besides the question: a signal that fires when its answer is no longer wanted. */
export interface ClarifyRequestContext {
  /** Aborts when the question times out or the run is aborted; stop asking then (close a prompt, drop a message). */
  signal: AbortSignal;
}

/**
 * Answers a clarify question in process. `choices` is empty when the model
 * offered none. Reject (or throw) when it cannot be answered: the model is told
 * why and the run goes on.
 */
export type ClarifyRequestHandler = (
  question: string,
  choices: string[],
  context: ClarifyRequestContext,
) => Promise<string>;

/** What became of a question asked in process. */
export type InProcessReply =
  | { kind: 'answered'; answer: string }
  | { kind: 'timed-out' }
  | { kind: 'failed'; reason: string }
  | { kind: 'aborted' };

export interface AskInProcessOptions {
  signal: AbortSignal;
  timeoutMs: number;
}

/** Asks `handler`; settles with its answer, its failure, the deadline or the abort, whichever comes first. */
export async function askInProcess(
  handler: ClarifyRequestHandler,
  question: string,
  choices: string[],
  options: AskInProcessOptions,
): Promise<InProcessReply> {
  const ask = (unwanted: AbortSignal) => handler(question, choices, { signal: unwanted });
  const reply = await inProcess(ask, options, 'The clarify question');
  if (reply.kind !== 'settled') return reply;
  return typeof reply.value === 'string'
    ? { kind: 'answered', answer: reply.value }
    : { kind: 'failed', reason: `onClarifyRequest gave ${describe(reply.value)}, not a string` };
}

/** What became of a host's handler awaited in process. */
export type InProcessOutcome =
  | { kind: 'settled'; value: unknown }
  | { kind: 'timed-out' }
  | { kind: 'failed'; reason: string }
  | { kind: 'aborted' };

/**
 * Awaits `start(unwanted)`, a host's handler, against the deadline and the run's abort signal:
 * whichever comes first decides, and `unwanted` aborts when the handler's answer is no longer
 * wanted (`what` names the request in the timeout's reason). A late value or rejection after that
 * is ignored (never an unhandled rejection).
 */
export function inProcess(
  start: (unwanted: AbortSignal) => unknown,
  { signal, timeoutMs }: AskInProcessOptions,
  what = 'The request',
): Promise<InProcessOutcome> {
  if (signal.aborted) return Promise.resolve({ kind: 'aborted' });
  const unwanted = new AbortController();
  return new Promise<InProcessOutcome>((resolve) => {
    let settled = false;
    const settle = (reply: InProcessOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (reply.kind === 'timed-out') {
        unwanted.abort(new DOMException(`${what} timed out.`, 'TimeoutError'));
      } else if (reply.kind === 'aborted') {
        unwanted.abort(signal.reason);
      }
      resolve(reply);
    };
    const onAbort = () => settle({ kind: 'aborted' });
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => settle({ kind: 'timed-out' }), Math.max(0, timeoutMs));

    let pending: Promise<unknown>;
    try {
      pending = Promise.resolve(start(unwanted.signal));
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (value) => settle({ kind: 'settled', value }),
      (error: unknown) => settle({ kind: 'failed', reason: reasonOf(error) }),
    );
  });
}

function reasonOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  return `a ${typeof value}`;
}
