import { type Static, Type } from '@sinclair/typebox';
import { ApprovalDecisionBodySchema, PendingApprovalSchema } from './approvals.js';
import { RunEventSchema } from './events.js';
import { EXPECTED } from './expected.js';
import {
  AnswerBodySchema,
  ApprovalRequestIdSchema,
  CreateRunBodySchema,
  PendingToolCallSchema,
  REQUEST_ID_PATTERN,
  RunIdSchema,
  SessionIdSchema,
  SteerMessageBodySchema,
  ToolOutputBodySchema,
  ToolRequestIdSchema,
} from './http.js';

/**
 * The frames of the WebSocket gateway (`GET /v1/ws`): one JSON object per
 * text frame, told apart by `type`. Client frames are validated as request
 * bodies are (no unknown fields, no coercion); the server's are what clients
 * may rely on.
 */

/** A session event id (`<runId>:<eventId>`), as the session's SSE stream numbers its events. */
export const SESSION_EVENT_ID_PATTERN = '^run_[0-9a-z_]{26,60}:[0-9]{1,20}-[0-9]{1,20}$';

const RequestIdSchema = Type.String({
  pattern: REQUEST_ID_PATTERN,
  [EXPECTED]: "a question's request id (they look like clr_ and 26 letters and digits: clr_01jz3k…)",
});

/** `message`: send `content` to a session (null: a new one), `options` being a run's other body fields. */
export const WsMessageFrameSchema = Type.Object(
  {
    type: Type.Literal('message'),
    sessionId: Type.Union([SessionIdSchema, Type.Null()]),
    content: CreateRunBodySchema.properties.input,
    /** A run's body without `input` (which is `content`), plus `multitask`; checked as `POST /v1/sessions/:id/runs` checks it. */
    options: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);

/** `clarify_response`: the answer to a `clarify_request` of the session (design §5.4). */
export const WsClarifyResponseFrameSchema = Type.Object(
  {
    type: Type.Literal('clarify_response'),
    sessionId: SessionIdSchema,
    requestId: RequestIdSchema,
    answer: AnswerBodySchema.properties.answer,
  },
  { additionalProperties: false },
);

/** `tool_response`: the output of a `tool_request` of the session (as `POST /v1/runs/:id/tool-outputs/:requestId`). */
export const WsToolResponseFrameSchema = Type.Object(
  {
    type: Type.Literal('tool_response'),
    sessionId: SessionIdSchema,
    requestId: ToolRequestIdSchema,
    output: ToolOutputBodySchema.properties.output,
    isError: ToolOutputBodySchema.properties.isError,
  },
  { additionalProperties: false },
);

/** `approval_response`: a decision on an `approval_request` of the session (as `POST /v1/runs/:id/approvals/:requestId`). */
export const WsApprovalResponseFrameSchema = Type.Object(
  {
    type: Type.Literal('approval_response'),
    sessionId: SessionIdSchema,
    requestId: ApprovalRequestIdSchema,
    /**
     * The run the `approval_request` named: needed for a crew child's call (the session's own runs
     * are searched without it).
     */
    runId: Type.Optional(RunIdSchema),
    /** The decision, as the route's body takes it. */
    decision: ApprovalDecisionBodySchema,
  },
  { additionalProperties: false },
);

/** `steer`: a message for the session's live run, taken at its next turn boundary (as `POST /v1/runs/:id/messages`). */
export const WsSteerFrameSchema = Type.Object(
  {
    type: Type.Literal('steer'),
    sessionId: SessionIdSchema,
    content: SteerMessageBodySchema.properties.content,
  },
  { additionalProperties: false },
);

/** `subscribe`: follow the session's events after `after` (null: from its first event), then live. */
export const WsSubscribeFrameSchema = Type.Object(
  {
    type: Type.Literal('subscribe'),
    sessionId: SessionIdSchema,
    after: Type.Union([
      Type.String({
        maxLength: 120,
        pattern: SESSION_EVENT_ID_PATTERN,
        [EXPECTED]: "a session event id (a run id, ':' and an event id, as the stream numbers them)",
      }),
      Type.Null(),
    ]),
  },
  { additionalProperties: false },
);

/** `cancel`: cancel the session's live runs (the running one and those queued behind it). */
export const WsCancelFrameSchema = Type.Object(
  { type: Type.Literal('cancel'), sessionId: SessionIdSchema },
  { additionalProperties: false },
);

export const WsPingFrameSchema = Type.Object({ type: Type.Literal('ping') }, { additionalProperties: false });

/** Every client frame's schema, by its `type`. */
export const WS_CLIENT_FRAME_SCHEMAS = {
  message: WsMessageFrameSchema,
  clarify_response: WsClarifyResponseFrameSchema,
  tool_response: WsToolResponseFrameSchema,
  approval_response: WsApprovalResponseFrameSchema,
  steer: WsSteerFrameSchema,
  subscribe: WsSubscribeFrameSchema,
  cancel: WsCancelFrameSchema,
  ping: WsPingFrameSchema,
} as const;
export type WsClientFrameType = keyof typeof WS_CLIENT_FRAME_SCHEMAS;
export const WS_CLIENT_FRAME_TYPES = Object.keys(WS_CLIENT_FRAME_SCHEMAS) as WsClientFrameType[];
export type WsClientFrame = Static<(typeof WS_CLIENT_FRAME_SCHEMAS)[WsClientFrameType]>;

/** `session`: the session a `message` with `sessionId: null` created, and its session token. */
export const WsSessionFrameSchema = Type.Object({
  type: Type.Literal('session'),
  sessionId: SessionIdSchema,
  token: Type.String(),
});

/** `run_started`: the run a `message` started (queued, when another run of the session is live). */
export const WsRunStartedFrameSchema = Type.Object({
  type: Type.Literal('run_started'),
  sessionId: SessionIdSchema,
  runId: RunIdSchema,
});

/** `clarify_request`: a run of the session asks (design §5.4); `choices` is left out when there are none. */
export const WsClarifyRequestFrameSchema = Type.Object({
  type: Type.Literal('clarify_request'),
  sessionId: SessionIdSchema,
  data: Type.Object({
    requestId: RequestIdSchema,
    question: Type.String(),
    choices: Type.Optional(Type.Array(Type.String())),
  }),
});

/** `tool_request`: a run of the session called a client tool; answer with `tool_response`. */
export const WsToolRequestFrameSchema = Type.Object({
  type: Type.Literal('tool_request'),
  sessionId: SessionIdSchema,
  runId: RunIdSchema,
  data: PendingToolCallSchema,
});

/** `approval_request`: a run of the session holds a tool call for a decision; answer with `approval_response`. */
export const WsApprovalRequestFrameSchema = Type.Object({
  type: Type.Literal('approval_request'),
  sessionId: SessionIdSchema,
  runId: RunIdSchema,
  data: PendingApprovalSchema,
});

export const WS_CLARIFY_OUTCOMES = ['answered', 'timed_out', 'cancelled'] as const;
export type WsClarifyOutcome = (typeof WS_CLARIFY_OUTCOMES)[number];

/** `clarify_resolved`: a question no longer waits (answered, timed out, or its run ended first). */
export const WsClarifyResolvedFrameSchema = Type.Object({
  type: Type.Literal('clarify_resolved'),
  sessionId: SessionIdSchema,
  requestId: RequestIdSchema,
  outcome: Type.Union(WS_CLARIFY_OUTCOMES.map((outcome) => Type.Literal(outcome))),
});

/** `event`: a run event of the session, in the SSE stream's envelope (`id` is the session event id). */
export const WsEventFrameSchema = Type.Object({
  type: Type.Literal('event'),
  sessionId: SessionIdSchema,
  event: RunEventSchema,
});

/** `done`: a run of the session ended; `output` when it completed. */
export const WsDoneFrameSchema = Type.Object({
  type: Type.Literal('done'),
  sessionId: SessionIdSchema,
  runId: RunIdSchema,
  status: Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled')]),
  output: Type.Optional(Type.String()),
});

export const WsPongFrameSchema = Type.Object({ type: Type.Literal('pong') });

/**
 * `error`: a frame could not be served; the socket stays open. `retryAfterMs`
 * comes with `ERR_RATE_LIMITED`: when the tenant's window starts again.
 */
export const WsErrorFrameSchema = Type.Object({
  type: Type.Literal('error'),
  code: Type.String(),
  message: Type.String(),
  retryAfterMs: Type.Optional(Type.Integer({ minimum: 0 })),
});

export const WsServerFrameSchema = Type.Union([
  WsSessionFrameSchema,
  WsRunStartedFrameSchema,
  WsClarifyRequestFrameSchema,
  WsClarifyResolvedFrameSchema,
  WsToolRequestFrameSchema,
  WsApprovalRequestFrameSchema,
  WsEventFrameSchema,
  WsDoneFrameSchema,
  WsPongFrameSchema,
  WsErrorFrameSchema,
]);
export type WsServerFrame = Static<typeof WsServerFrameSchema>;

/**
 * The close codes of the gateway: 1001 the server is shutting down; 1008
 * authentication failed, or the client sent more frames per second than the
 * socket's cap; 1009 a frame over the size limit; 1013 the tenant has its most
 * sockets on this instance, or the client read too slowly.
 */
export const WS_CLOSE_CODES = {
  shutdown: 1001,
  unauthorized: 1008,
  tooManyFrames: 1008,
  frameTooLarge: 1009,
  tryAgainLater: 1013,
} as const;
