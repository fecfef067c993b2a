import type { ErrorBody } from './events.js';

export interface TetherErrorOptions {
  /** HTTP status to answer with when this error reaches the API. */
  statusCode?: number;
  /** Whether trying again later may succeed (a rate limit, a lost connection). */
  retryable?: boolean;
  cause?: unknown;
}

/**
 * The base of every error Tether raises on purpose. `code` is stable
 * (`ERR_<AREA>_<WHAT>`) and listed in `docs/errors.md`; each package keeps its
 * own catalog of codes in an `errors.ts`.
 */
export class TetherError extends Error {
  readonly code: string;
  readonly statusCode: number | undefined;
  readonly retryable: boolean;

  constructor(code: string, message: string, options: TetherErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TetherError';
    this.code = code;
    this.statusCode = options.statusCode;
    this.retryable = options.retryable ?? false;
  }

  /** The form that crosses Redis and HTTP. */
  toJSON(): ErrorBody {
    return { code: this.code, message: this.message };
  }
}

/** Any thrown value as an `{ code, message }` body; unknown errors become `ERR_INTERNAL`. */
export function toErrorBody(error: unknown): ErrorBody {
  if (error instanceof TetherError) return error.toJSON();
  if (error instanceof Error) return { code: 'ERR_INTERNAL', message: error.message };
  return { code: 'ERR_INTERNAL', message: String(error) };
}
