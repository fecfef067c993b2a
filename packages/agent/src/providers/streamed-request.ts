/**
 * What every streaming provider shares, whatever its wire format: the options
 * common to all of them and their checks, one try of a streamed request
 * ({@link streamOnce}, with {@link StreamedTry}: the idle timeout, the
 * caller's abort, the caller's `onDelta` kept apart from the server's
 * failures), the retry loop around the tries ({@link completeWithRetries}),
 * and the errors a try ends with ({@link classifyFailure}).
 *
 * Retries are the provider's, not its SDK's: each try is one HTTP request; a
 * retryable failure waits `Retry-After` when the server gave one, else
 * exponential backoff with jitter, and tries again, until `maxRetries` retries
 * are spent or the next wait would take the total past `maxRetryWaitMs`. The
 * last error is then thrown, still marked retryable, for the job system to
 * retry the attempt later.
 */
import { AgentError, type AgentErrorCode } from '../errors.js';
import type { ModelRequest, ModelResponse, ProviderLogger } from './model-provider.js';
import { abortableSleep, backoffDelay, type HeaderLookup, parseRetryAfterHeaders } from './retry.js';

/** The options every streaming provider takes. */
export interface StreamingProviderOptions {
  /** The server's API root. */
  baseURL: string;
  /** The credential sent to the server; omitted, none is sent. */
  apiKey?: string | undefined;
  /** Required unless the provider can ask its server (see `resolveStreamingOptions`). */
  model?: string | undefined;
  /** The provider's name in logs and error messages (a profile name). */
  name?: string | undefined;
  /** Longest wait for the response headers and between two chunks (ms). Default 120,000. */
  timeoutMs?: number | undefined;
  /** Retries after the first try. Default 4. */
  maxRetries?: number | undefined;
  /** Sent only when set: several servers and models reject it. */
  temperature?: number | undefined;
  /** Default output token limit. */
  maxOutputTokens?: number | undefined;
  logger?: ProviderLogger | undefined;
  /** First backoff (ms); doubles per retry. Default 500. */
  retryBaseDelayMs?: number | undefined;
  /** Largest backoff (ms). Default 20,000. */
  retryMaxDelayMs?: number | undefined;
  /** Cap on the total time spent waiting between tries (ms). Default 60,000. */
  maxRetryWaitMs?: number | undefined;
}

/** {@link StreamingProviderOptions} with the defaults applied. */
export type ResolvedStreamingOptions = Required<
  Pick<
    StreamingProviderOptions,
    | 'baseURL'
    | 'name'
    | 'timeoutMs'
    | 'maxRetries'
    | 'retryBaseDelayMs'
    | 'retryMaxDelayMs'
    | 'maxRetryWaitMs'
  >
> &
  Pick<StreamingProviderOptions, 'model' | 'apiKey' | 'temperature' | 'maxOutputTokens' | 'logger'>;

const DEFAULTS = {
  timeoutMs: 120_000,
  maxRetries: 4,
  retryBaseDelayMs: 500,
  retryMaxDelayMs: 20_000,
  maxRetryWaitMs: 60_000,
} as const;

/**
 * Applies the defaults (`name` is the provider's own) and checks every common
 * option, adding a line naming the field and its bound to `problems` for each
 * one that is wrong. `model` may be left out only when `modelOptional`.
 */
export function resolveStreamingOptions<T extends StreamingProviderOptions>(
  options: T,
  name: string,
  problems: string[],
  modelOptional = false,
): T & ResolvedStreamingOptions {
  const merged = {
    ...options,
    name: options.name ?? name,
    timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
    maxRetries: options.maxRetries ?? DEFAULTS.maxRetries,
    retryBaseDelayMs: options.retryBaseDelayMs ?? DEFAULTS.retryBaseDelayMs,
    retryMaxDelayMs: options.retryMaxDelayMs ?? DEFAULTS.retryMaxDelayMs,
    maxRetryWaitMs: options.maxRetryWaitMs ?? DEFAULTS.maxRetryWaitMs,
  };
  if (!isHttpUrl(merged.baseURL))
    problems.push(`baseURL must be an http(s) URL (got ${JSON.stringify(merged.baseURL)})`);
  if (
    !(modelOptional && merged.model === undefined) &&
    (typeof merged.model !== 'string' || merged.model === '')
  )
    problems.push('model must be a non-empty string');
  integerIn(problems, 'timeoutMs', merged.timeoutMs, 1, 3_600_000);
  integerIn(problems, 'maxRetries', merged.maxRetries, 0, 20);
  integerIn(problems, 'retryBaseDelayMs', merged.retryBaseDelayMs, 0, 600_000);
  integerIn(problems, 'retryMaxDelayMs', merged.retryMaxDelayMs, 0, 600_000);
  integerIn(problems, 'maxRetryWaitMs', merged.maxRetryWaitMs, 0, 3_600_000);
  if (merged.maxOutputTokens !== undefined)
    integerIn(problems, 'maxOutputTokens', merged.maxOutputTokens, 1, 10_000_000);
  if (merged.temperature !== undefined && !(merged.temperature >= 0 && merged.temperature <= 2)) {
    problems.push(`temperature must be between 0 and 2 (got ${merged.temperature})`);
  }
  return merged;
}

function integerIn(problems: string[], field: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    problems.push(`${field} must be an integer from ${min} to ${max} (got ${value})`);
  }
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** How one try ended: its response, or the error it failed with and whether it had streamed text. */
export type TryOutcome =
  | { ok: true; response: ModelResponse }
  | { ok: false; error: AgentError; emittedDeltas: boolean };

/**
 * Runs `tryOnce` until a try answers, or fails with an error that is not
 * retryable, or the retries or the wait cap are spent (see the module comment).
 * `onRetry` and the logger are told before each retry.
 */
export async function completeWithRetries(
  config: ResolvedStreamingOptions,
  request: ModelRequest,
  tryOnce: () => Promise<TryOutcome>,
): Promise<ModelResponse> {
  let waitedMs = 0;
  for (let attempt = 1; ; attempt++) {
    if (request.signal.aborted) throw aborted(config.name, request.signal.reason);
    const outcome = await tryOnce();
    if (outcome.ok) return outcome.response;

    const { error } = outcome;
    if (!error.retryable) throw error;
    const retriesLeft = config.maxRetries - (attempt - 1);
    const delayMs =
      error.retryAfterMs ??
      backoffDelay(attempt, { baseDelayMs: config.retryBaseDelayMs, maxDelayMs: config.retryMaxDelayMs });
    if (retriesLeft <= 0 || waitedMs + delayMs > config.maxRetryWaitMs) {
      throw gaveUp(error, attempt, retriesLeft <= 0 ? 'retries' : 'wait');
    }
    config.logger?.warn(
      { provider: config.name, attempt, delayMs, code: error.code, error: error.message },
      'model request failed; retrying',
    );
    request.onRetry?.({ attempt, delayMs, error, discardsDeltas: outcome.emittedDeltas });
    await abortableSleep(delayMs, request.signal, () => aborted(config.name, request.signal.reason));
    waitedMs += delayMs;
  }
}

/**
 * One try of a streamed request: its own abort signal (aborted by the
 * caller's, by the idle timeout, and at `end()` so the socket closes whatever
 * happened), the idle timer (`arm()` before the request and at every chunk),
 * and `emit`, the caller's `onDelta` whose own errors are kept apart: they go
 * up unchanged through {@link rethrowCallbackError}, never retried, since they
 * are not the server's fault.
 */
export class StreamedTry {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private callbackError: { error: unknown } | undefined;
  private readonly onAbort = () => this.controller.abort();
  /** Whether the idle timeout stopped the try. */
  timedOut = false;
  /** Whether this try has streamed any text (through `emit`). */
  emitted = false;
  /** Streams text: the caller's `onDelta`, guarded, when it gave one. */
  readonly emit: (text: string) => void;

  constructor(
    private readonly request: ModelRequest,
    private readonly timeoutMs: number,
  ) {
    request.signal.addEventListener('abort', this.onAbort, { once: true });
    const onDelta = request.onDelta;
    this.emit = (text: string) => {
      this.emitted = true;
      try {
        onDelta?.(text);
      } catch (error) {
        this.callbackError = { error };
        throw error;
      }
    };
  }

  /** The signal of this try's HTTP request. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Whether the caller aborted or the idle timeout fired: an SDK may end its iteration quietly then. */
  get stopped(): boolean {
    return this.request.signal.aborted || this.timedOut;
  }

  /** (Re)starts the idle timer. */
  arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort();
    }, this.timeoutMs);
  }

  /** Throws what the caller's `onDelta` threw, if it did. */
  rethrowCallbackError(): void {
    if (this.callbackError) throw this.callbackError.error;
  }

  /** Ends the try: the timer, the link to the caller's signal, and the HTTP request. */
  end(): void {
    clearTimeout(this.timer);
    this.request.signal.removeEventListener('abort', this.onAbort);
    this.controller.abort();
  }
}

/** A turn being assembled from the items of a stream, as {@link streamOnce} drives it. */
export interface StreamedAnswer<Item> {
  /** Folds one item of the stream in; text goes to `emit`. */
  add(item: Item, emit: (text: string) => void): void;
  /** Whether the stream said the answer is whole. */
  readonly finished: boolean;
  /** Why a stream that ended without being finished is incomplete, for the error. */
  readonly incomplete: string;
  response(): ModelResponse;
}

/**
 * One try: opens the stream (`open`, given the try's signal), folds each item
 * into `answer` with the idle timer re-armed at every one, and returns the
 * response, or the failure `classify` makes of what went wrong. Only an error
 * thrown by the caller's own `onDelta` is thrown, as it is.
 */
export async function streamOnce<Item>(
  config: Pick<ResolvedStreamingOptions, 'name' | 'timeoutMs'>,
  request: ModelRequest,
  open: (signal: AbortSignal) => Promise<AsyncIterable<Item>>,
  answer: StreamedAnswer<Item>,
  classify: (error: unknown, name: string, signal: AbortSignal, timedOut: boolean) => AgentError,
): Promise<TryOutcome> {
  const attempt = new StreamedTry(request, config.timeoutMs);
  const fail = (error: unknown): TryOutcome => {
    attempt.rethrowCallbackError();
    return {
      ok: false,
      error: classify(error, config.name, request.signal, attempt.timedOut),
      emittedDeltas: attempt.emitted,
    };
  };

  try {
    attempt.arm();
    const stream = await open(attempt.signal);
    attempt.arm();
    for await (const item of stream) {
      attempt.arm();
      answer.add(item, attempt.emit);
    }
    // The SDKs end the iteration quietly when their request is aborted.
    if (attempt.stopped) return fail(undefined);
    if (!answer.finished) return fail(new StreamIncompleteError(answer.incomplete));
    return { ok: true, response: answer.response() };
  } catch (error) {
    return fail(error);
  } finally {
    // Whatever happened, this try's HTTP request is over: close its socket.
    attempt.end();
  }
}

class StreamIncompleteError extends Error {}

/** A class of an SDK's errors, for `instanceof`. */
type ErrorClass<T> = abstract new (...args: never[]) => T;

/**
 * The error classes of a model SDK (the `openai` and `@anthropic-ai/sdk`
 * packages are made by one generator and have the same four), and what the
 * provider knows of an error without an HTTP status.
 */
export interface SdkErrors {
  APIError: ErrorClass<Error & { status: number | undefined; headers: HeaderLookup | undefined }>;
  APIConnectionError: ErrorClass<Error>;
  APIConnectionTimeoutError: ErrorClass<Error>;
  APIUserAbortError: ErrorClass<Error>;
  /** The status an error without one (an error event inside a stream) stands for, if it says. */
  statusInStream(error: Error): number | undefined;
}

/**
 * Turns whatever a try threw into an `AgentError` with the right code: the
 * caller's abort, the idle timeout, the SDK's connection errors, an HTTP
 * status (or an error inside the stream) with its `Retry-After`, an
 * unparsable stream, a socket closed mid-body.
 */
export function classifyFailure(
  sdk: SdkErrors,
  error: unknown,
  name: string,
  signal: AbortSignal,
  timedOut: boolean,
): AgentError {
  if (signal.aborted) return aborted(name, signal.reason, error);
  if (timedOut) return modelError('ERR_MODEL_TIMEOUT', name, 'the model server sent nothing in time', error);
  if (error instanceof AgentError) return error;
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return modelError('ERR_MODEL_TIMEOUT', name, 'the model server did not answer in time', error);
  }
  if (error instanceof sdk.APIUserAbortError || error instanceof sdk.APIConnectionError) {
    return modelError('ERR_MODEL_CONNECTION', name, `cannot reach the model server: ${error.message}`, error);
  }
  if (error instanceof sdk.APIError) {
    const status = typeof error.status === 'number' ? error.status : sdk.statusInStream(error);
    const what = error.status === undefined ? 'error inside the stream' : `HTTP ${error.status}`;
    return new AgentError(codeForStatus(status), `${name}: model server ${what}: ${error.message}`, {
      cause: error,
      retryAfterMs: parseRetryAfterHeaders(error.headers),
    });
  }
  if (error instanceof SyntaxError) {
    return modelError('ERR_MODEL_BAD_RESPONSE', name, `unparsable stream chunk: ${error.message}`, error);
  }
  // A socket closed mid-body surfaces from fetch as `TypeError: terminated`.
  const message = error instanceof Error ? error.message : String(error);
  return modelError('ERR_MODEL_CONNECTION', name, `connection lost: ${message}`, error);
}

/** The error code for an HTTP status from a model server (`undefined`: an error without one). */
export function codeForStatus(status: number | undefined): AgentErrorCode {
  if (status === undefined) return 'ERR_MODEL_UNAVAILABLE';
  if (status === 429) return 'ERR_MODEL_RATE_LIMITED';
  if (status === 401 || status === 403) return 'ERR_MODEL_AUTH';
  if (status === 408) return 'ERR_MODEL_TIMEOUT';
  if (status === 409 || status >= 500) return 'ERR_MODEL_UNAVAILABLE';
  return 'ERR_MODEL_BAD_REQUEST';
}

/** An `AgentError` whose message starts with the provider's name. */
export function modelError(code: AgentErrorCode, name: string, message: string, cause: unknown): AgentError {
  return new AgentError(code, `${name}: ${message}`, cause === undefined ? {} : { cause });
}

/** `ERR_MODEL_ABORTED`, with the abort reason in the message. */
export function aborted(name: string, reason: unknown, cause?: unknown): AgentError {
  const why =
    reason instanceof Error ? `: ${reason.message}` : typeof reason === 'string' ? `: ${reason}` : '';
  return new AgentError('ERR_MODEL_ABORTED', `${name}: model request aborted${why}`, {
    cause: cause ?? reason,
  });
}

function gaveUp(error: AgentError, tries: number, limit: 'retries' | 'wait'): AgentError {
  const after = `after ${tries} ${tries === 1 ? 'try' : 'tries'}`;
  const why = limit === 'retries' ? after : `${after}; the next wait would pass the retry wait cap`;
  return new AgentError(error.code, `${error.message} (${why})`, {
    cause: error.cause ?? error,
    retryAfterMs: error.retryAfterMs,
  });
}
