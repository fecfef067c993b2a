import { TetherError } from '@tether/protocol';

/** Every error code of `@tether/outbound`, with its HTTP status and a line for `docs/errors.md`. */
export const OUTBOUND_ERRORS = {
  ERR_URL_REFUSED: {
    statusCode: 400,
    description:
      'A URL given for a webhook or an MCP server is refused: not https (http needs the operator to allow it), credentials in it, or a loopback, private, link-local or cloud metadata address, named or resolved.',
  },
  ERR_OUTBOUND_TIMEOUT: {
    statusCode: 504,
    description: 'A call to a webhook endpoint or an MCP server took longer than its timeout.',
  },
  ERR_RESPONSE_TOO_LARGE: {
    statusCode: 502,
    description: 'A webhook endpoint or an MCP server answered with more bytes than the cap.',
  },
} as const;

export type OutboundErrorCode = keyof typeof OUTBOUND_ERRORS;

/** An error of a call to a tenant-given URL; `statusCode` comes from the catalog. */
export class OutboundError extends TetherError {
  declare readonly code: OutboundErrorCode;

  constructor(code: OutboundErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { statusCode: OUTBOUND_ERRORS[code].statusCode, cause: options.cause });
    this.name = 'OutboundError';
  }
}
