import { TetherError } from '@tether/protocol';

/** Every error code of `@tether/store`, with its HTTP status and a line for `docs/errors.md`. */
export const QUEUE_ERRORS = {
  ERR_RUN_NOT_FOUND: {
    statusCode: 404,
    description: 'No run with this id for this tenant (or its retention has passed).',
  },
  ERR_RUN_FINISHED: { statusCode: 409, description: 'The run has already ended; it cannot be cancelled.' },
  ERR_BATCH_NOT_FOUND: {
    statusCode: 404,
    description:
      'No batch with this id for this tenant (or its retention has passed since its last run ended).',
  },
  ERR_RUN_ACTIVE: {
    statusCode: 409,
    description:
      'The run (or one of its crew children) is still active (queued, running, waiting_for_input or waiting_for_children): cancel it and delete it once it has ended. A scheduled run is cancelled by its delete.',
  },
  ERR_RUN_NOT_SCHEDULED: {
    statusCode: 409,
    description:
      'The run is not scheduled any more (its time came and it is queued or running, it has ended, or a cancel was asked for): only a scheduled run can be given a new time (`PATCH /v1/runs/:id`).',
  },
  ERR_RUN_ENDED: {
    statusCode: 409,
    description: 'The run has ended; it takes no more messages (`POST /v1/runs/:id/messages`).',
  },
  ERR_RUN_MESSAGES_LIMIT: {
    statusCode: 409,
    description:
      'The run holds the most messages it may hold without having taken them (20): send more once it has (`message.delivered`).',
  },
  ERR_RUN_IN_SESSION: {
    statusCode: 409,
    description:
      "The run belongs to a session: its record is part of the session's transcript, so it goes with the session (`DELETE /v1/sessions/:id`).",
  },
  ERR_RUN_CREW_CHILD: {
    statusCode: 409,
    description:
      "The run is a crew child: it goes with its tree (delete its root run), and its parent's delegation decides whether it runs again.",
  },
  ERR_RUN_NOT_RETRYABLE: {
    statusCode: 409,
    description:
      "Only a failed or cancelled run can be retried, and not a session's run (send the message again) nor a crew child (its parent's delegation decides); the message says which.",
  },
  ERR_RUN_NOT_OWNER: {
    statusCode: 409,
    description:
      'A worker lost the run to another worker (its lock expired); the old attempt stops instead of acting twice.',
  },
  ERR_RUN_CANCEL_REQUESTED: {
    statusCode: 409,
    description: 'A cancel was requested; the running attempt stops.',
  },
  ERR_CLARIFY_UNKNOWN: { statusCode: 404, description: 'The run has no clarify request with this id.' },
  ERR_CLARIFY_ALREADY_ANSWERED: {
    statusCode: 409,
    description: 'The clarify request was answered already; the first answer won.',
  },
  ERR_CLARIFY_TIMED_OUT: {
    statusCode: 409,
    description: 'The clarify request timed out; the run went on with the timeout message.',
  },
  ERR_CLARIFY_EXPIRED: { statusCode: 409, description: 'The answer came after the clarify deadline.' },
  ERR_CLARIFY_NOT_PENDING: {
    statusCode: 409,
    description: 'The run has ended; its question is no longer waiting for an answer.',
  },
  ERR_TOOL_OUTPUT_UNKNOWN: {
    statusCode: 404,
    description: 'The run has no client tool call with this request id.',
  },
  ERR_TOOL_OUTPUT_ALREADY_POSTED: {
    statusCode: 409,
    description: "The client tool call's output was posted already; the first output won.",
  },
  ERR_TOOL_OUTPUT_TIMED_OUT: {
    statusCode: 409,
    description:
      'The client tool call timed out; the model was told that the client returned no result in time.',
  },
  ERR_TOOL_OUTPUT_EXPIRED: {
    statusCode: 409,
    description: "The output came after the client tool call's deadline (`toolTimeoutMs`).",
  },
  ERR_TOOL_OUTPUT_NOT_PENDING: {
    statusCode: 409,
    description: 'The run has ended; its client tool calls no longer wait for outputs.',
  },
  ERR_APPROVAL_UNKNOWN: { statusCode: 404, description: 'The run has no approval request with this id.' },
  ERR_APPROVAL_ALREADY_DECIDED: {
    statusCode: 409,
    description: 'The approval request was decided already; the first decision won.',
  },
  ERR_APPROVAL_TIMED_OUT: {
    statusCode: 409,
    description:
      "No decision came before the approval request's deadline: the policy's `onTimeout` decided it.",
  },
  ERR_APPROVAL_EXPIRED: {
    statusCode: 409,
    description: "The decision came after the approval request's deadline.",
  },
  ERR_APPROVAL_NOT_PENDING: {
    statusCode: 409,
    description: 'The run has ended; its tool calls no longer wait for a decision.',
  },
  ERR_IDEMPOTENCY_CONFLICT: {
    statusCode: 409,
    description: 'The Idempotency-Key was used before with a different request body.',
  },
  ERR_IDEMPOTENCY_IN_PROGRESS: {
    statusCode: 409,
    description: 'A request with this Idempotency-Key is still being created; retry shortly.',
  },
  ERR_CREW_MAX_CHILDREN: {
    statusCode: 409,
    description:
      'A crew parent tried to start more children than `TETHER_CREW_MAX_CHILDREN` allows over its life (the model is told first, so this is a race).',
  },
  ERR_CREW_CHILD_TIMEOUT: {
    statusCode: 500,
    description:
      'A crew child ran past `TETHER_CREW_CHILD_TIMEOUT_MS`: its parent ended it, and got it as `timed_out`.',
  },
  ERR_CREW_CHILD_GONE: {
    statusCode: 500,
    description:
      "A crew child's records were removed (retention, a deletion) before it ended: its parent got it as `failed`.",
  },
  ERR_TENANT_BUDGET_EXCEEDED: {
    statusCode: 402,
    description:
      "The tenant has used one of its budgets (`/v1/budgets` or the operator's `TETHER_TENANT_BUDGETS`: tokens or US dollars per UTC day or month): a submission is refused, and a running run fails at its next turn boundary, what it did kept. The message names the budget (`day.tokens`, `month.usd`…) and when it resets.",
  },
  ERR_SESSION_NOT_FOUND: {
    statusCode: 404,
    description:
      'No session with this id for this tenant (or its retention has passed since its last activity).',
  },
  ERR_SESSION_IDLE: {
    statusCode: 409,
    description:
      'The session has no live run to take a message (a WebSocket `steer` frame): send it as a message of the session instead.',
  },
  ERR_SESSION_BUSY: {
    statusCode: 409,
    description:
      'The session has a live run: a message with `multitask: "reject"` is refused, and a session is deleted only with `?cancel=true`.',
  },
  ERR_MEMORY_NOT_FOUND: {
    statusCode: 404,
    description: "The memory scope holds no entry with this id (another tenant's scopes are never seen).",
  },
  ERR_MEMORY_REFUSED: {
    statusCode: 422,
    description:
      'A memory entry reads as an instruction to a model or holds a secret (the content guard, docs/tools.md), or is blank; the message says what was found.',
  },
  ERR_MEMORY_DUPLICATE: {
    statusCode: 409,
    description: 'The memory scope holds the same content already; the message names the entry.',
  },
  ERR_MEMORY_FULL: {
    statusCode: 409,
    description:
      'The memory scope holds `TETHER_MEMORY_MAX_ENTRIES` entries or `TETHER_MEMORY_MAX_BYTES` bytes already; the message lists the oldest entries.',
  },
  ERR_ANSWER_TOKEN_INVALID: {
    statusCode: 401,
    description:
      "The answer token (from a `clarify.requested` webhook delivery) is not valid for the run and question in the URL: made up, another question's, run's or tenant's, or sent to a run or question that does not exist (the same answer in every case); it counts as a failed authentication.",
  },
  ERR_ANSWER_TOKEN_USED: {
    statusCode: 409,
    description: 'The answer token answered its question already; a token answers once.',
  },
  ERR_WEBHOOK_NOT_FOUND: {
    statusCode: 404,
    description: "The tenant has no webhook endpoint with this id (another tenant's are never seen).",
  },
  ERR_WEBHOOK_DELIVERY_NOT_FOUND: {
    statusCode: 404,
    description: "The endpoint's log has no delivery with this id (or its retention has passed).",
  },
  ERR_WEBHOOK_LIMIT: {
    statusCode: 409,
    description: 'The tenant has `TETHER_WEBHOOK_MAX_ENDPOINTS` webhook endpoints already.',
  },
  ERR_SCHEDULE_NOT_FOUND: {
    statusCode: 404,
    description: "The tenant has no schedule of this name (another tenant's are never seen).",
  },
  ERR_SCHEDULE_EXISTS: {
    statusCode: 409,
    description:
      'The tenant has a schedule of this name already: choose another name, or change it with `PATCH`.',
  },
  ERR_SCHEDULE_LIMIT: {
    statusCode: 409,
    description: 'The tenant has `TETHER_TENANT_MAX_SCHEDULES` schedules already; delete one first.',
  },
  ERR_WEBHOOK_DISABLED: {
    statusCode: 409,
    description:
      'The webhook endpoint is disabled (it failed for `TETHER_WEBHOOK_DISABLE_AFTER_MS` without a success, or by request): enable it again with `PATCH { "enabled": true }` first.',
  },
  ERR_QUEUE_ENQUEUE: {
    statusCode: 503,
    description: 'The run was created but could not be queued; it is marked failed.',
  },
} as const;

export type QueueErrorCode = keyof typeof QUEUE_ERRORS;
export const QUEUE_ERROR_CODES = Object.keys(QUEUE_ERRORS) as QueueErrorCode[];

/** An error of `@tether/store`; `statusCode` comes from the catalog. */
export class QueueError extends TetherError {
  declare readonly code: QueueErrorCode;

  constructor(code: QueueErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { statusCode: QUEUE_ERRORS[code].statusCode, cause: options.cause });
    this.name = 'QueueError';
  }
}
