import type { ErrorBody } from '@tether/protocol';
import { parseRetryAfter, TetherError } from '@tether/protocol';

/**
 * The codes the client raises itself. Errors the API sends keep the API's own
 * code (`TetherApiError.code`); these cover what happens before or around it.
 * `docs/client.md` lists every one (a test keeps the two in sync).
 */
export const CLIENT_ERROR_CODES = {
  /** The server could not be reached, or the connection broke. */
  connection: 'ERR_CLIENT_CONNECTION',
  /** No response (or no stream data) within the configured time. */
  timeout: 'ERR_CLIENT_TIMEOUT',
  /** The server answered with something the contract does not allow (bad JSON, an event without id). */
  badResponse: 'ERR_CLIENT_BAD_RESPONSE',
  /** An HTTP error whose body carried no `{ error: { code } }`. */
  http: 'ERR_CLIENT_HTTP',
  /** An option passed to the client is invalid. */
  invalidOption: 'ERR_CLIENT_INVALID_OPTION',
} as const;
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[keyof typeof CLIENT_ERROR_CODES];

export interface TetherApiErrorOptions {
  status: number;
  method: string;
  url: string;
  requestId?: string | undefined;
  cause?: unknown;
}

/**
 * The API answered with an error status. `code` and `message` come from the
 * body `{ error: { code, message } }`; `status` is the HTTP status.
 * Subclasses exist for the statuses a caller usually branches on.
 */
export class TetherApiError extends TetherError {
  /** The HTTP status. */
  readonly status: number;
  readonly method: string;
  readonly url: string;
  /** The server's request id (body `error.requestId` or an `x-request-id` header), for support. */
  readonly requestId: string | undefined;

  constructor(code: string, message: string, options: TetherApiErrorOptions) {
    super(code, message, {
      statusCode: options.status,
      retryable: options.status === 429 || options.status >= 500,
      cause: options.cause,
    });
    this.name = 'TetherApiError';
    this.status = options.status;
    this.method = options.method;
    this.url = options.url;
    this.requestId = options.requestId;
  }

  /** The body as the API sent it. */
  get body(): ErrorBody {
    return { code: this.code, message: this.message };
  }
}

/** 401: no API key, or a key the server does not know. */
export class TetherUnauthorizedError extends TetherApiError {
  constructor(code: string, message: string, options: TetherApiErrorOptions) {
    super(code, message, options);
    this.name = 'TetherUnauthorizedError';
  }
}

/** 404: an unknown run or clarify request (or another tenant's run). */
export class TetherNotFoundError extends TetherApiError {
  constructor(code: string, message: string, options: TetherApiErrorOptions) {
    super(code, message, options);
    this.name = 'TetherNotFoundError';
  }
}

/**
 * 409: the request conflicts with the run's state: an answer to a question
 * already answered, timed out or not pending; cancelling a finished run; an
 * idempotency key reused with a different body.
 */
export class TetherConflictError extends TetherApiError {
  constructor(code: string, message: string, options: TetherApiErrorOptions) {
    super(code, message, options);
    this.name = 'TetherConflictError';
  }
}

/** 429: too many requests or streams. `retryAfterMs` is the server's `Retry-After`, when sent. */
export class TetherRateLimitError extends TetherApiError {
  readonly retryAfterMs: number | undefined;

  constructor(
    code: string,
    message: string,
    options: TetherApiErrorOptions & { retryAfterMs?: number | undefined },
  ) {
    super(code, message, options);
    this.name = 'TetherRateLimitError';
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** The server could not be reached, or the connection broke before a response was read. */
export class TetherConnectionError extends TetherError {
  /** The URL the client tried. */
  readonly url: string;

  constructor(url: string, options: { cause?: unknown; detail?: string } = {}) {
    const origin = safeOrigin(url);
    const reason = options.detail ?? describeCause(options.cause);
    super(
      CLIENT_ERROR_CODES.connection,
      `Cannot reach the Tether API at ${origin}${reason ? ` (${reason})` : ''}. ` +
        "Is the server running? Set TETHER_URL (or the client's baseUrl) to its address.",
      { retryable: true, cause: options.cause },
    );
    this.name = 'TetherConnectionError';
    this.url = url;
  }
}

/** No response (or, on a stream, no data at all) within the configured time. */
export class TetherTimeoutError extends TetherError {
  readonly url: string;
  readonly timeoutMs: number;

  constructor(url: string, timeoutMs: number, what = 'a response') {
    super(CLIENT_ERROR_CODES.timeout, `No ${what} from ${safeOrigin(url)} within ${timeoutMs} ms.`, {
      retryable: true,
    });
    this.name = 'TetherTimeoutError';
    this.url = url;
    this.timeoutMs = timeoutMs;
  }
}

/** The server sent something the contract does not allow. */
export class TetherProtocolError extends TetherError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(CLIENT_ERROR_CODES.badResponse, message, { cause: options.cause });
    this.name = 'TetherProtocolError';
  }
}

/** An option passed to the client (or one of its methods) is out of bounds. */
export function invalidOption(message: string): TetherError {
  return new TetherError(CLIENT_ERROR_CODES.invalidOption, message);
}

/**
 * Builds the typed error for a non-2xx response. Reads the body; never throws
 * for a malformed one (the status alone then decides the class).
 */
export async function errorFromResponse(response: Response, method: string): Promise<TetherApiError> {
  const text = await response.text().catch(() => '');
  let code: string = CLIENT_ERROR_CODES.http;
  let message = `${method} ${pathOf(response.url)} failed with HTTP ${response.status}${
    response.statusText ? ` ${response.statusText}` : ''
  }`;
  let requestId = response.headers.get('x-request-id') ?? response.headers.get('request-id') ?? undefined;
  const parsed = safeJson(text);
  if (isRecord(parsed) && isRecord(parsed.error)) {
    const error = parsed.error;
    if (typeof error.code === 'string') code = error.code;
    if (typeof error.message === 'string') message = error.message;
    if (typeof error.requestId === 'string') requestId = error.requestId;
  }
  const options: TetherApiErrorOptions = { status: response.status, method, url: response.url, requestId };
  switch (response.status) {
    case 401:
      return new TetherUnauthorizedError(code, message, options);
    case 404:
      return new TetherNotFoundError(code, message, options);
    case 409:
      return new TetherConflictError(code, message, options);
    case 429:
      return new TetherRateLimitError(code, message, {
        ...options,
        retryAfterMs: parseRetryAfter(response.headers.get('retry-after')),
      });
    default:
      return new TetherApiError(code, message, options);
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/**
 * Node's fetch wraps the socket error: `TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } })`.
 * Prefer the deepest system error code, else the deepest message.
 */
function describeCause(cause: unknown): string | undefined {
  let current: unknown = cause;
  let deepest: string | undefined;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
    deepest = current.message || deepest;
    current = current.cause;
  }
  return deepest;
}
