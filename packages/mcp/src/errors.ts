import { TetherError } from '@tether/protocol';

/** Every error code of `@tether/mcp` that ends an attempt, with a line for `docs/errors.md`. */
export const MCP_ERRORS = {
  ERR_MCP_SERVER_UNAVAILABLE: {
    retryable: true,
    description:
      "An MCP server a run names could not be reached or listed at the attempt's start (connection, protocol or timeout); the message names the server and why. Retried like a model outage.",
  },
  ERR_MCP_SERVER_UNKNOWN: {
    retryable: false,
    description:
      'A run names an MCP server that neither its tenant registered nor this worker has (`TETHER_MCP_SERVERS`): deleted after the submission, or the workers and the API read different files.',
  },
  ERR_MCP_SECRETS: {
    retryable: false,
    description:
      "An MCP server's headers could not be opened: the worker has no `TETHER_SECRETS_KEY`, or not the API's.",
  },
} as const;

export type McpErrorCode = keyof typeof MCP_ERRORS;

/** An error that ends an attempt of a run with MCP servers. */
export class McpToolsetError extends TetherError {
  declare readonly code: McpErrorCode;

  constructor(code: McpErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { retryable: MCP_ERRORS[code].retryable, cause: options.cause });
    this.name = 'McpToolsetError';
  }
}
