/**
 * A clarify question answered in process (design 5.3): the host's
 * `onClarifyRequest` is awaited against the question's deadline and the run's
 * abort signal, and whichever comes first decides. A late answer or rejection
 * after that is ignored (never an unhandled rejection).
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
export function askInProcess(
  handler: ClarifyRequestHandler,
  question: string,
  choices: string[],
  { signal, timeoutMs }: AskInProcessOptions,
): Promise<InProcessReply> {
  if (signal.aborted) return Promise.resolve({ kind: 'aborted' });
  const unwanted = new AbortController();
  return new Promise<InProcessReply>((resolve) => {
    let settled = false;
    const settle = (reply: InProcessReply) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (reply.kind === 'timed-out') {
        unwanted.abort(new DOMException('The clarify question timed out.', 'TimeoutError'));
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
      pending = Promise.resolve(handler(question, choices, { signal: unwanted.signal }));
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (answer) =>
        settle(
          typeof answer === 'string'
            ? { kind: 'answered', answer }
            : { kind: 'failed', reason: `onClarifyRequest gave ${describe(answer)}, not a string` },
        ),
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
