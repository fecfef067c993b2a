import { TetherError } from '@tether/protocol';

/** Every error code of `@tether/config`, with its HTTP status and a line for `docs/errors.md`. */
export const CONFIG_ERRORS = {
  ERR_CONFIG: {
    statusCode: 500,
    description:
      'An environment variable of the API or a worker is invalid; the process names every bad variable and exits with code 78.',
  },
} as const;

export type ConfigErrorCode = keyof typeof CONFIG_ERRORS;

/** An error of `@tether/config`; `statusCode` comes from the catalog. */
export class ConfigError extends TetherError {
  declare readonly code: ConfigErrorCode;

  /** For a person reading a terminal: every bad variable once, its value (secrets masked) and its range. */
  readonly report: string | undefined;

  constructor(code: ConfigErrorCode, message: string, options: { cause?: unknown; report?: string } = {}) {
    super(code, message, { statusCode: CONFIG_ERRORS[code].statusCode, cause: options.cause });
    this.name = 'ConfigError';
    this.report = options.report;
  }
}
