/**
 * The pieces of the providers' retry policy: how long a server asked us to
 * wait, exponential backoff with jitter, and a wait that an abort ends.
 */
import { parseRetryAfter } from '@tether/protocol';

/** Anything with `get(name)`: a fetch `Headers`, or a plain lookup in tests. */
export interface HeaderLookup {
  get(name: string): string | null;
}

/**
 * How long the server asked us to wait, in ms, or `undefined` when it did not
 * say: `retry-after-ms` (OpenAI's, in ms) first, then `Retry-After` (read by
 * protocol's {@link parseRetryAfter}: seconds or an HTTP date).
 */
export function parseRetryAfterHeaders(
  headers: HeaderLookup | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return Math.ceil(value);
  }
  return parseRetryAfter(headers.get('retry-after'), now);
}

export interface BackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
  /** In [0, 1); `Math.random` by default. */
  random?: () => number;
}

/**
 * The wait before retry number `attempt` (from 1): exponential from
 * `baseDelayMs`, capped at `maxDelayMs`, with "equal jitter" (half fixed, half
 * random) so that clients that failed together do not retry together, yet
 * never retry at once.
 */
export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const random = options.random ?? Math.random;
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** Waits `ms`; rejects with `onAbort()` as soon as `signal` aborts. */
export function abortableSleep(ms: number, signal: AbortSignal, onAbort: () => Error): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(onAbort());
      return;
    }
    const abort = () => {
      clearTimeout(timer);
      reject(onAbort());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    signal.addEventListener('abort', abort, { once: true });
  });
}
