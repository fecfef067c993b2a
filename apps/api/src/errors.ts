import { type ErrorBody, TetherError } from '@tether/protocol';

/**
 * Every error code the API itself answers with, its HTTP status and a line for
 * `docs/errors.md`. Errors of other packages (`ERR_RUN_*`, `ERR_CLARIFY_*`,
 * `ERR_IDEMPOTENCY_*`, `ERR_MODEL_*`) reach clients with their own code and
 * `statusCode`.
 */
export const API_ERRORS = {
  ERR_UNAUTHORIZED: {
    statusCode: 401,
    description:
      'No valid credentials: a missing, malformed or unknown bearer key, or (events route) a missing, expired or foreign read token; every case answers the same body.',
  },
  ERR_VALIDATION: {
    statusCode: 400,
    description:
      'The request does not match its schema (unknown field, wrong type, bad path parameter, bound exceeded); the message names the field, and a value outside a fixed set lists the allowed ones (`body.multitask must be one of "enqueue", "reject", "interrupt"`). A malformed replay script is `ERR_MODEL_REPLAY_SCRIPT_INVALID` instead.',
  },
  ERR_INVALID_JSON: { statusCode: 400, description: 'The request body is not valid JSON.' },
  ERR_JSON_TOO_DEEP: {
    statusCode: 400,
    description:
      'The JSON body nests arrays and objects deeper than `TETHER_JSON_MAX_DEPTH` (64 by default); the message names the limit.',
  },
  ERR_FORBIDDEN_PROPERTY: {
    statusCode: 400,
    description: 'The JSON body has a `__proto__` or `constructor.prototype` key (prototype poisoning).',
  },
  ERR_TOOLSET_UNKNOWN: {
    statusCode: 400,
    description:
      'A run asked for a toolset that does not exist or has no tools yet; the message lists the available ones.',
  },
  ERR_CLIENT_TOOLS_INVALID: {
    statusCode: 400,
    description:
      "A run's client tools (`tools`) are refused: a name taken by a built-in tool of the run's toolsets or given twice, a `parameters` schema that is not an object schema or does not compile, more than 64 tools or 64 KB of schemas; the message names the tool and the rule.",
  },
  ERR_OUTPUT_SCHEMA_INVALID: {
    statusCode: 400,
    description:
      "A run's structured result (`output`) is refused: an `output.schema` that is not an object schema, does not compile (Ajv, RE2 patterns), or takes more than 64 KB of JSON; the message names the field and the rule.",
  },
  ERR_APPROVAL_POLICY_INVALID: {
    statusCode: 400,
    description:
      "An approval policy (a run's or a session's `approval`, or the tenant's default) is refused: a bash pattern that RE2 does not accept (no lookaround or backreferences), or an `approver` that is not one of the tenant's webhook endpoints; the message names the field.",
  },
  ERR_SCHEDULE_INVALID: {
    statusCode: 400,
    description:
      "A schedule's timing is refused: both or neither of `cron` and `every`, a time zone that is not an IANA name this server knows, a cron pattern cron-parser does not read, or ticks closer than `TETHER_SCHEDULE_MIN_INTERVAL_MS`; the message names the field.",
  },
  ERR_APPROVAL_ARGUMENTS_INVALID: {
    statusCode: 400,
    description:
      "An `edit` decision's arguments are not what the tool takes (checked against the built-in or client tool's parameters); the message names the field.",
  },
  ERR_MCP_SERVERS_INVALID: {
    statusCode: 400,
    description:
      "A run's `mcpServers` or a server sent to `POST /v1/mcp-servers` is refused: a name given twice or known nowhere (neither registered by the tenant nor an operator's), headers without a URL, headers the MCP client sets itself or over the size limit, a client tool named like one of the servers' tools; the message names the entry and the rule. A refused URL is `ERR_URL_REFUSED`.",
  },
  ERR_FILES_INVALID: {
    statusCode: 400,
    description:
      'A submitted file path is not a relative path inside the workspace, or is too long for the file system (a name over 255 bytes).',
  },
  ERR_FILE_PATH_INVALID: {
    statusCode: 400,
    description:
      'A download path is empty, absolute, leads outside the run workspace, or is too long for the file system (a name over 255 bytes, a path over 4,096 bytes).',
  },
  ERR_SKILL_INVALID: {
    statusCode: 400,
    description:
      'A skill sent to `PUT /v1/skills/:name` breaks the Agent Skills format (its name, a path, a size, `SKILL.md`); the message lists every problem.',
  },
  ERR_WS_FRAME: {
    statusCode: 400,
    description:
      'WebSocket gateway: a frame that is not a JSON object, binary, of an unknown `type`, or missing or mistyping a field (an `error` frame; the socket stays open).',
  },
  ERR_SESSION_TOKEN_FIELD: {
    statusCode: 403,
    description:
      "A message sent with a session token set a run field that decides what the run reaches or costs (`toolsets`, `memory`, `limits`, `mcpServers`): those come from the session's defaults, set with an API key.",
  },
  ERR_WS_SCOPE: {
    statusCode: 403,
    description:
      'WebSocket gateway: a socket opened with a session token named another session, or sent a `message` with `sessionId: null` (a new session needs an API key).',
  },
  ERR_NOT_FOUND: { statusCode: 404, description: 'No such route.' },
  ERR_FILE_NOT_FOUND: {
    statusCode: 404,
    description: 'The run workspace has no regular file at this path.',
  },
  ERR_SKILL_NOT_FOUND: { statusCode: 404, description: 'The tenant has no skill of this name.' },
  ERR_MCP_SERVER_NOT_FOUND: {
    statusCode: 404,
    description: 'The tenant has registered no MCP server of this name.',
  },
  ERR_METHOD_NOT_ALLOWED: {
    statusCode: 405,
    description:
      'The path exists but not with this method; `Allow` lists the methods it has (an unknown path is `ERR_NOT_FOUND`).',
  },
  ERR_MCP_SERVERS_LIMIT: {
    statusCode: 409,
    description:
      'The tenant has registered as many MCP servers as it may (`TETHER_MCP_MAX_SERVERS`); delete one first.',
  },
  ERR_MCP_SERVER_NAME_TAKEN: {
    statusCode: 409,
    description:
      "An MCP server cannot be registered under the name of one of the operator's stdio servers (`TETHER_MCP_SERVERS`), which a run names the same way.",
  },
  ERR_SKILLS_LIMIT: {
    statusCode: 409,
    description:
      'The skill would pass a limit: the skills of a tenant (`TETHER_SKILLS_MAX_COUNT`), their bytes (`TETHER_SKILLS_MAX_BYTES`), or the files of a skill; the message names it.',
  },
  ERR_REQUEST_TIMEOUT: {
    statusCode: 408,
    description: 'The client took longer than `TETHER_REQUEST_TIMEOUT_MS` to send its request.',
  },
  ERR_BODY_TOO_LARGE: {
    statusCode: 413,
    description: 'The request body is larger than `TETHER_BODY_LIMIT` (1 MiB by default).',
  },
  ERR_UNSUPPORTED_MEDIA_TYPE: {
    statusCode: 415,
    description:
      'The request body is not `application/json`; the message says to send `Content-Type: application/json` and names the type that was sent.',
  },
  ERR_RATE_LIMITED: {
    statusCode: 429,
    description:
      'The tenant sent more requests than `TETHER_RATE_LIMIT_MAX` in the window; see `Retry-After`.',
  },
  ERR_AUTH_RATE_LIMITED: {
    statusCode: 429,
    description:
      'More than `TETHER_AUTH_FAIL_LIMIT` requests from this client address failed authentication in the window (`TETHER_AUTH_FAIL_WINDOW_MS`); its failing requests are refused until the window ends, see `Retry-After`.',
  },
  ERR_TOO_MANY_STREAMS: {
    statusCode: 429,
    description:
      'The tenant already holds `TETHER_SSE_MAX_PER_TENANT` event streams on this API process; close one or poll.',
  },
  ERR_INTERNAL: {
    statusCode: 500,
    description: 'An unexpected server error (details are in the server log only).',
  },
  ERR_NOT_READY: {
    statusCode: 503,
    description: 'The API cannot reach Redis, or is shutting down (`/readyz`).',
  },
  ERR_SECRETS_KEY_MISSING: {
    statusCode: 503,
    description:
      'The request holds a secret to store (MCP server headers, a webhook signing secret) but the server has no key to seal it: set `TETHER_SECRETS_KEY` (e.g. `openssl rand -base64 32`), the same on every API and worker.',
  },
  ERR_UNAVAILABLE: {
    statusCode: 503,
    description:
      'The request needs Redis, which is unreachable; retry after `Retry-After` seconds (a submission retried with the same `Idempotency-Key` is not run twice).',
  },
} as const satisfies Record<string, { statusCode: number; description: string }>;

/** `Retry-After` (seconds) of `ERR_UNAVAILABLE`: while Redis is unreachable the API tries it at least this often. */
export const UNAVAILABLE_RETRY_AFTER_S = 1;

/** The message of `ERR_UNAVAILABLE`. */
export const UNAVAILABLE_MESSAGE = `The run store (Redis) is unreachable; retry in ${UNAVAILABLE_RETRY_AFTER_S} s (see Retry-After).`;

export type ApiErrorCode = keyof typeof API_ERRORS;
export const API_ERROR_CODES = Object.keys(API_ERRORS) as ApiErrorCode[];

/** An error of the API; `statusCode` comes from the catalog. */
export class ApiError extends TetherError {
  declare readonly code: ApiErrorCode;
  declare readonly statusCode: number;

  constructor(code: ApiErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { statusCode: API_ERRORS[code].statusCode, cause: options.cause });
    this.name = 'ApiError';
  }
}

/** The `{ error: { code, message } }` body. */
export function errorBody(code: string, message: string): { error: ErrorBody } {
  return { error: { code, message } };
}
