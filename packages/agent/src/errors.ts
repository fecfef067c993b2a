import { TetherError } from '@tether/protocol';

/**
 * Every error code `@tether/agent` raises, whether trying again later may help,
 * the HTTP status when the error is the API's answer to a request, and a line
 * for `docs/errors.md`.
 *
 * `retryable` is for the job system: the OpenAI provider has already spent its
 * own retries when a retryable error reaches it, so a retryable failure means
 * "try the attempt again later", not "try the request again now".
 */
export const AGENT_ERRORS = {
  ERR_MODEL_RATE_LIMITED: {
    retryable: true,
    statusCode: undefined,
    description: 'The model server answered 429 (rate limited) until the retries ran out.',
  },
  ERR_MODEL_UNAVAILABLE: {
    retryable: true,
    statusCode: undefined,
    description: 'The model server answered 5xx (or 409), or reported an error inside the stream.',
  },
  ERR_MODEL_CONNECTION: {
    retryable: true,
    statusCode: undefined,
    description: 'The connection to the model server failed or dropped before the response was complete.',
  },
  ERR_MODEL_TIMEOUT: {
    retryable: true,
    statusCode: undefined,
    description: 'The model server sent nothing for longer than the profile timeout (or answered 408).',
  },
  ERR_MODEL_BAD_RESPONSE: {
    retryable: true,
    statusCode: undefined,
    description: 'The model server sent a stream chunk that is not valid JSON.',
  },
  ERR_MODEL_BAD_REQUEST: {
    retryable: false,
    statusCode: undefined,
    description:
      'The model server refused the request (400, 404, 422 or another 4xx): model name, context length, parameters.',
  },
  ERR_MODEL_AUTH: {
    retryable: false,
    statusCode: undefined,
    description: 'The model server refused the credentials of the profile (401 or 403).',
  },
  ERR_MODEL_ABORTED: {
    retryable: false,
    statusCode: undefined,
    description: 'The model request was stopped through its abort signal (cancel, shutdown).',
  },
  ERR_MODEL_REPLAY_SCRIPT_INVALID: {
    retryable: false,
    statusCode: 400,
    description: 'A replay script does not match the replay script schema; the message names the turn.',
  },
  ERR_MODEL_REPLAY_EXHAUSTED: {
    retryable: false,
    statusCode: undefined,
    description: 'The replay provider was asked for a turn past the end of its script.',
  },
  ERR_MODEL_REPLAY_NO_CHILD_SCRIPT: {
    retryable: false,
    statusCode: undefined,
    description:
      "A replay run delegated a goal that none of its spec's `children` scripts matches; the message names the goal.",
  },
  ERR_MODEL_REPLAY_DISABLED: {
    retryable: false,
    statusCode: 400,
    description: 'A run asked for the replay provider, which this server does not allow.',
  },
  ERR_MODEL_PROFILE_UNKNOWN: {
    retryable: false,
    statusCode: 400,
    description: 'A run named a model profile this server does not have; the message lists the known ones.',
  },
  ERR_MODEL_PROFILE_REQUIRED: {
    retryable: false,
    statusCode: 400,
    description:
      'A run named no model profile and the server has no default profile; with none at all, the message names the variables that configure one (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`).',
  },
  ERR_MODEL_SPEC_INVALID: {
    retryable: false,
    statusCode: 400,
    description:
      'A run model spec carried fields other than a profile name or a replay script (never a URL or key).',
  },
  ERR_MODEL_PROFILE_INVALID: {
    retryable: false,
    statusCode: undefined,
    description:
      'Server configuration: a model profile (or the environment it came from) is invalid, or names no model and its OpenAI-compatible server lists none (`GET /models`).',
  },
  ERR_AGENT_MAX_STEPS: {
    retryable: false,
    statusCode: undefined,
    description:
      'The run reached its maximum number of model turns (`limits.maxSteps`) without a final answer.',
  },
  ERR_AGENT_MAX_OUTPUT_TOKENS: {
    retryable: false,
    statusCode: undefined,
    description: 'The run spent its budget of model output tokens without a final answer.',
  },
  ERR_BUDGET_EXCEEDED: {
    retryable: false,
    statusCode: undefined,
    description:
      "The run reached a budget of its `limits` (`maxTotalTokens`, or `maxCostUsd` by its profile's `prices`) at a turn boundary, without a final answer; the message names which. What it did stays in its files and events.",
  },
  ERR_CONTEXT_EXHAUSTED: {
    retryable: false,
    statusCode: undefined,
    description:
      "The run's next model request does not fit the model's context window: with compaction off (`compaction: false`), or even after compaction (the system prompt, the input and the last turns are never compacted). The message gives the request's size. What the run did stays in its files and events.",
  },
  ERR_AGENT_WALL_CLOCK: {
    retryable: false,
    statusCode: undefined,
    description:
      'The run was active for longer than its wall-clock limit (time waiting for a human not counted).',
  },
  ERR_OUTPUT_INVALID: {
    retryable: false,
    statusCode: undefined,
    description:
      "A run with `output` gave no valid result in `output.maxAttempts` attempts: each `submit_result` call's arguments failed its schema, or the model answered in plain text instead; the message names the last attempt's validation errors.",
  },
  ERR_AGENT_CHECKPOINT_INVALID: {
    retryable: false,
    statusCode: undefined,
    description: 'A stored checkpoint could not be read back (wrong version or shape).',
  },
  ERR_AGENT_INTERNAL: {
    retryable: false,
    statusCode: undefined,
    description: 'An unexpected error inside the attempt loop; the message says what failed.',
  },
} as const satisfies Record<
  string,
  { retryable: boolean; statusCode: number | undefined; description: string }
>;

export type AgentErrorCode = keyof typeof AGENT_ERRORS;

/** Every code in {@link AGENT_ERRORS}, for the docs/catalog sync test. */
export const AGENT_ERROR_CODES = Object.keys(AGENT_ERRORS) as AgentErrorCode[];

export interface AgentErrorOptions {
  cause?: unknown;
  /** How long the server asked us to wait (`Retry-After`), when it said so. */
  retryAfterMs?: number | undefined;
}

/**
 * An error of `@tether/agent`. `retryable` and `statusCode` come from the
 * catalog, so a code always means the same thing to the job system.
 */
export class AgentError extends TetherError {
  declare readonly code: AgentErrorCode;
  /** The server's `Retry-After`, in ms, when the last failure carried one. */
  readonly retryAfterMs: number | undefined;

  constructor(code: AgentErrorCode, message: string, options: AgentErrorOptions = {}) {
    const entry = AGENT_ERRORS[code];
    super(code, message, {
      retryable: entry.retryable,
      ...(entry.statusCode === undefined ? {} : { statusCode: entry.statusCode }),
      ...(options.cause === undefined ? {} : { cause: options.cause }),
    });
    this.name = 'AgentError';
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** True when `error` is an {@link AgentError} with the given code. */
export function isAgentError(error: unknown, code?: AgentErrorCode): error is AgentError {
  return error instanceof AgentError && (code === undefined || error.code === code);
}
