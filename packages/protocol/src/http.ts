import { type Static, Type } from '@sinclair/typebox';
import { ApprovalPolicySchema, PendingApprovalSchema } from './approvals.js';
import {
  CHILD_RESULT_STATUSES,
  ErrorBodySchema,
  RunEventSchema,
  RunStatusSchema,
  TodoItemSchema,
  UsageSchema,
} from './events.js';
import { EXPECTED } from './expected.js';
import { MCP_LIMITS, McpServerRefSchema } from './mcp.js';
import { RunMemorySchema } from './memory.js';

/**
 * Limits on what a client may submit; the API enforces them and documents them
 * (`apps/api/test/limits.int.test.ts` submits a body at and just past each one).
 * Bounds on a record's keys go in `propertyNames`: TypeBox turns a `Type.Record`
 * key schema into a `patternProperties` pattern, where a `maxLength` is lost.
 */
export const RUN_LIMITS = {
  inputMaxLength: 200_000,
  maxFiles: 1_000,
  filePathMaxLength: 1_024,
  /** Per-run override of the clarify timeout: 1 s to 7 days. */
  clarifyTimeoutMinMs: 1_000,
  clarifyTimeoutMaxMs: 7 * 24 * 3600 * 1000,
  maxStepsMax: 1_000,
  /** Per-run budgets (`limits`): tokens (input and output together), US dollars, active time. */
  maxTotalTokensMax: 1_000_000_000,
  maxCostUsdMax: 1_000_000,
  wallClockMinMs: 1_000,
  wallClockMaxMs: 24 * 3600 * 1000,
  replayMaxTurns: 1_000,
  metadataMaxKeys: 64,
  metadataKeyMaxLength: 128,
  /** Client-executed tools (`tools`): at most 64 per run. */
  maxClientTools: 64,
  clientToolDescriptionMaxLength: 4_000,
  /** How long a client has to post a tool's output (`toolTimeoutMs`): 1 s to 7 days. */
  toolTimeoutMinMs: 1_000,
  toolTimeoutMaxMs: 7 * 24 * 3600 * 1000,
  /** A structured result (`output`): invalid attempts before the run fails, 1 to 10. */
  outputMaxAttemptsMax: 10,
  /** A delayed run (`runAt`, `delayMs`) starts at most a year ahead. */
  scheduleMaxMs: 365 * 24 * 3600 * 1000,
  /** A run's deadline to start by (`ttlMs`, or `expiresAt`, from now): at least a second ahead. */
  expiryMinMs: 1_000,
  /** A run's deadline to start by: at most a year ahead. */
  expiryMaxMs: 365 * 24 * 3600 * 1000,
} as const;

/** The other bounds of client-executed tools (see {@link ClientToolSchema}). */
export const CLIENT_TOOL_LIMITS = {
  /** The `parameters` schemas of a run's tools, as JSON, together (checked at submit). */
  schemasMaxBytes: 65_536,
  /** `toolTimeoutMs` when a run gives none: 10 minutes. */
  timeoutDefaultMs: 10 * 60_000,
  /** Characters of one tool output a client may post. */
  outputMaxLength: 100_000,
} as const;

/** The other bounds and defaults of a structured result (see {@link OutputSpecSchema}). */
export const OUTPUT_LIMITS = {
  /** `output.schema` as JSON (checked at submit): the bound of a run's client tool schemas. */
  schemaMaxBytes: CLIENT_TOOL_LIMITS.schemasMaxBytes,
  /** `output.maxAttempts` when a run gives none. */
  maxAttemptsDefault: 3,
} as const;

/**
 * The run id format: `run_` and 26 lowercase Crockford base-32 characters
 * (time-sortable); a session's run then has `_` and the 16 characters its
 * session's id ends with, and a crew child `_` and its tree's hash tag (the
 * session's 16 characters, or its top-level run's 26: see `newChildRunId`).
 */
export const RUN_ID_PATTERN =
  '^run_[0-9a-hjkmnp-tv-z]{26}(_[0-9a-hjkmnp-tv-z]{16}|_[0-9a-hjkmnp-tv-z]{26})?$';
export const RunIdSchema = Type.String({
  pattern: RUN_ID_PATTERN,
  [EXPECTED]: 'a run id (run ids look like run_ and 26 letters and digits: run_01jz3k…)',
});

/** The session id format: `ses_` and 26 lowercase Crockford base-32 characters. */
export const SESSION_ID_PATTERN = '^ses_[0-9a-hjkmnp-tv-z]{26}$';
export const SessionIdSchema = Type.String({
  pattern: SESSION_ID_PATTERN,
  [EXPECTED]: 'a session id (session ids look like ses_ and 26 letters and digits: ses_01jz3k…)',
});

/** A clarify request id: `clr_` and 26 Crockford base-32 characters. */
export const REQUEST_ID_PATTERN = '^clr_[0-9a-hjkmnp-tv-z]{26}$';
export const RequestIdSchema = Type.String({
  pattern: REQUEST_ID_PATTERN,
  [EXPECTED]: "a question's request id (they look like clr_ and 26 letters and digits: clr_01jz3k…)",
});

/** A client tool call's request id: `tcr_` and 26 Crockford base-32 characters. */
export const TOOL_REQUEST_ID_PATTERN = '^tcr_[0-9a-hjkmnp-tv-z]{26}$';
export const ToolRequestIdSchema = Type.String({
  pattern: TOOL_REQUEST_ID_PATTERN,
  [EXPECTED]: "a tool call's request id (they look like tcr_ and 26 letters and digits: tcr_01jz3k…)",
});

/** An approval request's id: `apr_` and 26 Crockford base-32 characters. */
export const APPROVAL_REQUEST_ID_PATTERN = '^apr_[0-9a-hjkmnp-tv-z]{26}$';
export const ApprovalRequestIdSchema = Type.String({
  pattern: APPROVAL_REQUEST_ID_PATTERN,
  [EXPECTED]: "an approval's request id (they look like apr_ and 26 letters and digits: apr_01jz3k…)",
});

/** The names of client tools, as model APIs accept tool names. */
export const CLIENT_TOOL_NAME_PATTERN = '^[a-zA-Z0-9_-]{1,64}$';

/**
 * A client-executed tool, declared at submit: the model may call it beside the
 * built-in tools, and the run waits for the client to post its output.
 * `parameters` is a JSON Schema of an object (checked at submit: it must
 * compile, and its `type` be `"object"`).
 */
export const ClientToolSchema = Type.Object(
  {
    name: Type.String({
      pattern: CLIENT_TOOL_NAME_PATTERN,
      [EXPECTED]: 'a tool name of 1 to 64 letters, digits, _ or -',
    }),
    description: Type.String({ maxLength: RUN_LIMITS.clientToolDescriptionMaxLength }),
    parameters: Type.Record(Type.String(), Type.Unknown(), {
      description: 'A JSON Schema whose type is "object": what the model must pass',
    }),
  },
  { additionalProperties: false },
);
export type ClientTool = Static<typeof ClientToolSchema>;

/**
 * A structured result: the run ends only through a valid call of its `submit_result` tool, whose
 * parameters are `schema`, and the run's `result` is that call's arguments. `schema` is a JSON
 * Schema of an object (checked at submit: it must compile, its `type` be `"object"`, and its JSON
 * fit {@link OUTPUT_LIMITS.schemaMaxBytes}). An invalid call, or a final answer in plain text, is a
 * failed attempt: the model is told why and tries again, and after `maxAttempts` of them the run
 * fails with `ERR_OUTPUT_INVALID`.
 */
export const OutputSpecSchema = Type.Object(
  {
    /** A JSON Schema whose type is "object": the result's shape. */
    schema: Type.Record(Type.String(), Type.Unknown(), {
      description: 'A JSON Schema whose type is "object": what submit_result takes, and the run\'s result',
    }),
    /** Failed attempts (invalid calls, plain-text answers) before the run fails; default 3. */
    maxAttempts: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: RUN_LIMITS.outputMaxAttemptsMax,
        description: 'Failed attempts before the run fails with ERR_OUTPUT_INVALID (default 3)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type OutputSpec = Static<typeof OutputSpecSchema>;

export const ReplayToolCallSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    arguments: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The tool arguments, as an object',
    }),
  },
  { additionalProperties: false },
);

/** A replay turn that calls tools (with optional text before the calls). */
export const ReplayToolCallsTurnSchema = Type.Object(
  {
    toolCalls: Type.Array(ReplayToolCallSchema, { minItems: 1, maxItems: 32 }),
    content: Type.Optional(Type.String({ maxLength: 100_000 })),
  },
  { additionalProperties: false },
);

/** A replay turn that answers with text and ends the run. */
export const ReplayContentTurnSchema = Type.Object(
  { content: Type.String({ maxLength: 100_000 }) },
  { additionalProperties: false },
);

export const ReplayTurnSchema = Type.Union([ReplayToolCallsTurnSchema, ReplayContentTurnSchema]);

/** A replay script: the turns the "model" plays, in order. */
export const ReplayScriptSchema = Type.Array(ReplayTurnSchema, {
  minItems: 1,
  maxItems: RUN_LIMITS.replayMaxTurns,
});

export type ReplayToolCall = Static<typeof ReplayToolCallSchema>;
export type ReplayTurn = Static<typeof ReplayTurnSchema>;
export type ReplayScript = Static<typeof ReplayScriptSchema>;

/**
 * The replay scripts of a replay run's crew children: a child plays the first
 * entry whose `match` is part of its goal (an entry without `match` matches
 * every goal), and that entry's own `children` script its children.
 */
export const ReplayChildrenSchema = Type.Recursive(
  (This) =>
    Type.Array(
      Type.Object(
        {
          match: Type.Optional(Type.String({ minLength: 1, maxLength: 1_000 })),
          script: ReplayScriptSchema,
          children: Type.Optional(This),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 64 },
    ),
  { $id: 'ReplayChildren' },
);
export type ReplayChildren = Static<typeof ReplayChildrenSchema>;

/** Which model runs the agent: a server-configured profile, or (when the server allows it) a replay script. */
export const ModelSpecSchema = Type.Union([
  Type.Object(
    {
      profile: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 64,
          pattern: '^[A-Za-z0-9_.-]+$',
          [EXPECTED]: 'a model profile name of letters, digits, _ . or -',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      provider: Type.Literal('replay'),
      script: ReplayScriptSchema,
      children: Type.Optional(ReplayChildrenSchema),
    },
    { additionalProperties: false },
  ),
]);
export type ModelSpec = Static<typeof ModelSpecSchema>;

/** The languages a run's prompts and model-facing messages come in. */
export const LOCALES = ['zh', 'en'] as const;
export type Locale = (typeof LOCALES)[number];

/** True when `value` names a locale. */
export function isLocale(value: unknown): value is Locale {
  return typeof value === 'string' && (LOCALES as readonly string[]).includes(value);
}

export const LocaleSchema = Type.Union([Type.Literal('zh'), Type.Literal('en')]);

export const ClarifyModeSchema = Type.Union([Type.Literal('suspend'), Type.Literal('return')]);
export type ClarifyMode = Static<typeof ClarifyModeSchema>;

/**
 * When a run starts: at `runAt` (ISO 8601; one in the past starts at once) or `delayMs` from now,
 * not both, at most {@link RUN_LIMITS.scheduleMaxMs} ahead. Such a run is `scheduled` until then.
 */
export const RunTimingSchema = Type.Object({
  runAt: Type.Optional(Type.String({ format: 'date-time', [EXPECTED]: 'an ISO 8601 date-time' })),
  delayMs: Type.Optional(Type.Integer({ minimum: 0, maximum: RUN_LIMITS.scheduleMaxMs })),
});

/**
 * A deadline to start by: `expiresAt` (ISO 8601, after now, not before `runAt`) or `ttlMs` from
 * now, not both, at most {@link RUN_LIMITS.expiryMaxMs} ahead. A run not started by then ends `expired`
 * (`run.expired`) and never starts; one started before it is no longer subject to it.
 */
export const RunExpirySchema = Type.Object({
  expiresAt: Type.Optional(Type.String({ format: 'date-time', [EXPECTED]: 'an ISO 8601 date-time' })),
  ttlMs: Type.Optional(Type.Integer({ minimum: RUN_LIMITS.expiryMinMs, maximum: RUN_LIMITS.expiryMaxMs })),
});

/** `POST /v1/runs` body. */
export const CreateRunBodySchema = Type.Object(
  {
    input: Type.String({ minLength: 1, maxLength: RUN_LIMITS.inputMaxLength }),
    model: Type.Optional(ModelSpecSchema),
    toolsets: Type.Optional(
      Type.Array(
        Type.String({
          minLength: 1,
          maxLength: 32,
          pattern: '^[a-z_]+$',
          [EXPECTED]: 'a toolset name of lowercase letters and _',
        }),
        {
          maxItems: 16,
          uniqueItems: true,
        },
      ),
    ),
    locale: Type.Optional(LocaleSchema),
    clarify: Type.Optional(
      Type.Object(
        {
          timeoutMs: Type.Optional(
            Type.Integer({
              minimum: RUN_LIMITS.clarifyTimeoutMinMs,
              maximum: RUN_LIMITS.clarifyTimeoutMaxMs,
            }),
          ),
          mode: Type.Optional(ClarifyModeSchema),
        },
        { additionalProperties: false },
      ),
    ),
    limits: Type.Optional(
      Type.Object(
        {
          maxSteps: Type.Optional(Type.Integer({ minimum: 1, maximum: RUN_LIMITS.maxStepsMax })),
          /** Tokens the run may use, input and output together: past it, `ERR_BUDGET_EXCEEDED`. */
          maxTotalTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: RUN_LIMITS.maxTotalTokensMax })),
          /** US dollars the run may spend, by its profile's `prices`: past it, `ERR_BUDGET_EXCEEDED`. */
          maxCostUsd: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: RUN_LIMITS.maxCostUsdMax })),
          /** Active time (ms; waiting on people not counted): the server's `TETHER_WALL_CLOCK_MS` by default. */
          wallClockMs: Type.Optional(
            Type.Integer({ minimum: RUN_LIMITS.wallClockMinMs, maximum: RUN_LIMITS.wallClockMaxMs }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    /**
     * Whether the transcript is compacted when it nears the model's context window (default
     * true). `false`: a request past the window fails the run with `ERR_CONTEXT_EXHAUSTED`.
     */
    compaction: Type.Optional(Type.Boolean()),
    files: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        maxProperties: RUN_LIMITS.maxFiles,
        propertyNames: { minLength: 1, maxLength: RUN_LIMITS.filePathMaxLength },
      }),
    ),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        maxProperties: RUN_LIMITS.metadataMaxKeys,
        propertyNames: { maxLength: RUN_LIMITS.metadataKeyMaxLength },
      }),
    ),
    /** Client-executed tools (see {@link ClientToolSchema}). */
    tools: Type.Optional(Type.Array(ClientToolSchema, { maxItems: RUN_LIMITS.maxClientTools })),
    /** How long the client has to post each tool output (ms). */
    toolTimeoutMs: Type.Optional(
      Type.Integer({ minimum: RUN_LIMITS.toolTimeoutMinMs, maximum: RUN_LIMITS.toolTimeoutMaxMs }),
    ),
    /** The memory scope the run reads and writes (toolset `memory`): default its session's id, else `default`. */
    memory: Type.Optional(RunMemorySchema),
    /** MCP servers whose tools the run gets, as `<server>__<tool>` (see {@link McpServerRefSchema}). */
    mcpServers: Type.Optional(Type.Array(McpServerRefSchema, { maxItems: MCP_LIMITS.serversPerRun })),
    /** Which tool calls wait for a person's decision before they run (see {@link ApprovalPolicySchema}). */
    approval: Type.Optional(ApprovalPolicySchema),
    /** A structured result: the run ends through `submit_result`, its arguments the run's `result` (see {@link OutputSpecSchema}). */
    output: Type.Optional(OutputSpecSchema),
    ...RunTimingSchema.properties,
    ...RunExpirySchema.properties,
  },
  { additionalProperties: false },
);
export type CreateRunBody = Static<typeof CreateRunBodySchema>;

/** `PATCH /v1/runs/:id`: a scheduled run's new start time, `runAt` or `delayMs` (one of them). */
export const RescheduleRunBodySchema = Type.Object(
  { runAt: RunTimingSchema.properties.runAt, delayMs: RunTimingSchema.properties.delayMs },
  { additionalProperties: false },
);
export type RescheduleRunBody = Static<typeof RescheduleRunBodySchema>;

export const PendingClarifySchema = Type.Object({
  requestId: Type.String(),
  question: Type.String(),
  choices: Type.Array(Type.String()),
  expiresAt: Type.String({ format: 'date-time' }),
});
export type PendingClarify = Static<typeof PendingClarifySchema>;

/** A client tool call the run waits on: its output is posted to `POST /v1/runs/:id/tool-outputs/:requestId`. */
export const PendingToolCallSchema = Type.Object({
  requestId: Type.String(),
  /** The model's tool call id. */
  callId: Type.String(),
  name: Type.String(),
  /** The model's arguments, checked against the tool's `parameters`. */
  arguments: Type.Record(Type.String(), Type.Unknown()),
  expiresAt: Type.String({ format: 'date-time' }),
});
export type PendingToolCall = Static<typeof PendingToolCallSchema>;

/** `POST /v1/runs` 202 answer. */
export const CreateRunResponseSchema = Type.Object({
  id: Type.String(),
  /** `scheduled` for a run given a later start (`runAt`, `delayMs`). */
  status: Type.Union([Type.Literal('queued'), Type.Literal('scheduled')]),
  links: Type.Object({ self: Type.String(), events: Type.String() }),
  /** A short-lived token that reads this run's events (`?token=`), for `EventSource`, which cannot set headers. */
  token: Type.String(),
});
export type CreateRunResponse = Static<typeof CreateRunResponseSchema>;

/** One child of a crew parent, as `GET /v1/runs/:id` lists it. */
export const ChildRunSchema = Type.Object({
  id: Type.String(),
  /** Its task's position in the delegation that started it. */
  index: Type.Integer({ minimum: 0 }),
  status: RunStatusSchema,
  /** Once it has ended: how, as its parent learned it (`escalated` and `timed_out` included). */
  outcome: Type.Optional(Type.Union(CHILD_RESULT_STATUSES.map((s) => Type.Literal(s)))),
});
export type ChildRun = Static<typeof ChildRunSchema>;

/** `GET /v1/runs/:id`. */
/** The model that answered a run's latest turn. */
export const RunModelSchema = Type.Object({
  /** The server's model profile (`replay` for a replay script). */
  profile: Type.String(),
  /** The model as the server was asked for it: the profile's, or the first the server listed. */
  name: Type.String(),
});
export type RunModel = Static<typeof RunModelSchema>;

export const RunSchema = Type.Object({
  id: Type.String(),
  status: RunStatusSchema,
  /** The input's first line that is not blank, at most {@link RUN_TITLE_MAX_CHARS} characters (runs created before it was kept have none). */
  title: Type.Optional(Type.String({ maxLength: 200 })),
  /** The session the run belongs to, if any. */
  sessionId: Type.Optional(Type.String()),
  /** A crew child: the run that delegated it, the run at the top of its tree, and how deep it is (1: a child of a top-level run). */
  parentRunId: Type.Optional(Type.String()),
  rootRunId: Type.Optional(Type.String()),
  depth: Type.Optional(Type.Integer({ minimum: 0 })),
  /** A crew parent: the children it started, in order, with their status. */
  children: Type.Optional(Type.Array(ChildRunSchema)),
  /** A retry (`POST /v1/runs/:id/retry`): the failed or cancelled run it started again. */
  retryOf: Type.Optional(Type.String()),
  /** A run of a batch (`POST /v1/batches`). */
  batchId: Type.Optional(Type.String()),
  /** A run a schedule made (`/v1/schedules`): the schedule's id (`sch_<name>`). */
  scheduleId: Type.Optional(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  /** A delayed run: when it starts (or started to be due), as last set. */
  runAt: Type.Optional(Type.String({ format: 'date-time' })),
  /** A run given `expiresAt` or `ttlMs`: the time it must have started by, or it ends `expired`. */
  expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
  startedAt: Type.Optional(Type.String({ format: 'date-time' })),
  finishedAt: Type.Optional(Type.String({ format: 'date-time' })),
  attempts: Type.Integer({ minimum: 0 }),
  pendingClarify: Type.Optional(PendingClarifySchema),
  /** The client tool calls the run waits on (those with no output yet). */
  pendingToolCalls: Type.Optional(Type.Array(PendingToolCallSchema)),
  /** The tool calls that wait for a decision (those with none yet). */
  pendingApprovals: Type.Optional(Type.Array(PendingApprovalSchema)),
  todos: Type.Array(TodoItemSchema),
  output: Type.Optional(Type.String()),
  /** A run with `output`, once completed: the arguments of its accepted `submit_result` call (JSON). */
  result: Type.Optional(Type.Unknown()),
  error: Type.Optional(ErrorBodySchema),
  usage: Type.Optional(UsageSchema),
  /** The model that answered the latest turn (absent before the first turn has answered). */
  model: Type.Optional(RunModelSchema),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export type Run = Static<typeof RunSchema>;

/** `GET /v1/runs`. */
export const RunListSchema = Type.Object({
  data: Type.Array(RunSchema),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});
export type RunList = Static<typeof RunListSchema>;

/** `GET /v1/runs/:id/events` with `Accept: application/json`. */
export const EventPageSchema = Type.Object({
  data: Type.Array(RunEventSchema),
  /** Pass as `?after=` for the next page; null when the run has ended and nothing follows. */
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});
export type EventPage = Static<typeof EventPageSchema>;

/** `POST /v1/runs/:id/clarify/:requestId` body. */
export const AnswerBodySchema = Type.Object(
  { answer: Type.String({ minLength: 1, maxLength: 20_000 }) },
  { additionalProperties: false },
);
export type AnswerBody = Static<typeof AnswerBodySchema>;

/** Limits on messages to a live run (`POST /v1/runs/:id/messages`). */
export const STEER_LIMITS = {
  /** Characters of one message. */
  contentMaxLength: 20_000,
  /** Messages a run holds that it has not taken yet. */
  pendingMax: 20,
} as const;

/** `POST /v1/runs/:id/messages` body: a message from the user to a live run, taken at its next turn boundary. */
export const SteerMessageBodySchema = Type.Object(
  { content: Type.String({ minLength: 1, maxLength: STEER_LIMITS.contentMaxLength }) },
  { additionalProperties: false },
);
export type SteerMessageBody = Static<typeof SteerMessageBodySchema>;

/** `POST /v1/runs/:id/messages` 202 answer. */
export const SteerMessageResponseSchema = Type.Object({ messageId: Type.String() });
export type SteerMessageResponse = Static<typeof SteerMessageResponseSchema>;

/** `POST /v1/runs/:id/tool-outputs/:requestId` body: the tool's output, and whether it is an error. */
export const ToolOutputBodySchema = Type.Object(
  {
    output: Type.String({ maxLength: CLIENT_TOOL_LIMITS.outputMaxLength }),
    isError: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ToolOutputBody = Static<typeof ToolOutputBodySchema>;

/** Every error answer: `{ error: { code, message } }`. */
export const ErrorResponseSchema = Type.Object({ error: ErrorBodySchema });
export type ErrorResponse = Static<typeof ErrorResponseSchema>;

/** An event log id (a Redis stream id, `<ms>-<seq>`), as sent in SSE `id:` lines, `Last-Event-ID` and `?after=`. */
export const EVENT_ID_PATTERN = '^[0-9]{1,20}-[0-9]{1,20}$';
export const EventIdSchema = Type.String({
  pattern: EVENT_ID_PATTERN,
  [EXPECTED]: 'an event id (event ids look like 1764498759120-0)',
});

/** `POST /v1/runs/:id/clarify/:requestId` 200 answer. */
export const AnswerResponseSchema = Type.Object({ ok: Type.Literal(true) });
export type AnswerResponse = Static<typeof AnswerResponseSchema>;

/** `POST /v1/runs/:id/cancel` 202 answer: `status` is the run's status before the cancel request. */
export const CancelRunResponseSchema = Type.Object({ id: Type.String(), status: RunStatusSchema });
export type CancelRunResponse = Static<typeof CancelRunResponseSchema>;

/** One file of a run's workspace. */
export const RunFileSchema = Type.Object({
  /** Relative to the workspace, `/`-separated. */
  path: Type.String(),
  /** Size in bytes. */
  size: Type.Integer({ minimum: 0 }),
});
export type RunFile = Static<typeof RunFileSchema>;

/** `GET /v1/runs/:id/files`: the regular files of the run's workspace, sorted by path. */
export const RunFileListSchema = Type.Object({
  files: Type.Array(RunFileSchema),
  /** True when the listing stopped at the server's entry limit. */
  truncated: Type.Boolean(),
});
export type RunFileList = Static<typeof RunFileListSchema>;

/** One tool of the catalog; `parameters` is the JSON Schema of its arguments. */
export const ToolInfoSchema = Type.Object({
  name: Type.String(),
  toolset: Type.String(),
  description: Type.String(),
  parameters: Type.Record(Type.String(), Type.Unknown()),
});
export type ToolInfo = Static<typeof ToolInfoSchema>;

/** `GET /v1/tools`. */
export const ToolCatalogSchema = Type.Object({
  /** The toolsets a run may ask for (those that have tools today). */
  toolsets: Type.Array(Type.String()),
  /** The toolsets a run gets when it names none. */
  defaultToolsets: Type.Array(Type.String()),
  tools: Type.Array(ToolInfoSchema),
});
export type ToolCatalog = Static<typeof ToolCatalogSchema>;

/** One model profile as a client may see it: never its key or its base URL. */
export const ModelProfileInfoSchema = Type.Object({
  name: Type.String({ description: 'What a run names in `model.profile`' }),
  provider: Type.String({ description: 'openai (or any OpenAI-compatible server) or anthropic' }),
  model: Type.Union([Type.String(), Type.Null()], {
    description: 'The model asked for; null: the first model the server lists',
  }),
  default: Type.Boolean({ description: 'Runs that name no model use this profile' }),
});
export type ModelProfileInfo = Static<typeof ModelProfileInfoSchema>;

/** `GET /v1/models`: what a run can name as its model here, so a client can tell before it submits. */
export const ModelCatalogSchema = Type.Object({
  profiles: Type.Array(ModelProfileInfoSchema),
  /** The profile runs get when they name none; null: every run must name one (or replay). */
  defaultProfile: Type.Union([Type.String(), Type.Null()]),
  /** `{ provider: 'replay', script }` is accepted (TETHER_ALLOW_REPLAY). */
  replay: Type.Boolean(),
});
export type ModelCatalog = Static<typeof ModelCatalogSchema>;
