import { type Static, Type } from '@sinclair/typebox';
import { RunStatusSchema, ToolCallSchema } from './events.js';
import {
  CreateRunBodySchema,
  CreateRunResponseSchema,
  PendingClarifySchema,
  SESSION_ID_PATTERN,
} from './http.js';

/** Limits on sessions; the API enforces and docs/api.md documents them. */
export const SESSION_LIMITS = {
  /** Characters of a session's metadata, as JSON. */
  metadataMaxChars: 16_000,
} as const;

/** What a session is doing: no live run, a run queued or running, or its run waits on a question. */
export const SESSION_STATUSES = ['idle', 'busy', 'waiting_for_input'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
export const SessionStatusSchema = Type.Union(SESSION_STATUSES.map((status) => Type.Literal(status)));

/** What a session's runs get unless their own body says otherwise. */
export const SessionDefaultsSchema = Type.Object(
  {
    model: CreateRunBodySchema.properties.model,
    toolsets: CreateRunBodySchema.properties.toolsets,
    locale: CreateRunBodySchema.properties.locale,
    clarify: CreateRunBodySchema.properties.clarify,
    limits: CreateRunBodySchema.properties.limits,
    compaction: CreateRunBodySchema.properties.compaction,
    memory: CreateRunBodySchema.properties.memory,
    /** Client-executed tools the session's runs offer (a run's own `tools` replace them as a whole). */
    tools: CreateRunBodySchema.properties.tools,
    toolTimeoutMs: CreateRunBodySchema.properties.toolTimeoutMs,
    /** The approval policy of the session's runs (a run's own replaces it as a whole). */
    approval: CreateRunBodySchema.properties.approval,
  },
  { additionalProperties: false },
);
export type SessionDefaults = Static<typeof SessionDefaultsSchema>;

/** `POST /v1/sessions` body (optional as a whole). */
export const CreateSessionBodySchema = Type.Object(
  {
    metadata: CreateRunBodySchema.properties.metadata,
    /** Written into the session's workspace before its first run. */
    files: CreateRunBodySchema.properties.files,
    defaults: Type.Optional(SessionDefaultsSchema),
  },
  { additionalProperties: false },
);
export type CreateSessionBody = Static<typeof CreateSessionBodySchema>;

/** `GET /v1/sessions/:id`. */
export const SessionSchema = Type.Object({
  id: Type.String({ pattern: SESSION_ID_PATTERN }),
  status: SessionStatusSchema,
  /** How many runs the session has had. */
  runs: Type.Integer({ minimum: 0 }),
  lastRunId: Type.Union([Type.String(), Type.Null()]),
  /** The question the session's run waits on. */
  pendingClarify: Type.Optional(
    Type.Intersect([PendingClarifySchema, Type.Object({ runId: Type.String() })]),
  ),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  metadata: Type.Record(Type.String(), Type.Unknown()),
});
export type Session = Static<typeof SessionSchema>;

/** `POST /v1/sessions` 201 answer: the session and a token for browsers. */
export const CreateSessionResponseSchema = Type.Intersect([
  SessionSchema,
  Type.Object({
    /**
     * A session-scoped token (`?token=` or `Authorization: Bearer`): reads the
     * session and its runs, sends messages and answers questions. Valid as long
     * as the session's retention.
     */
    token: Type.String(),
  }),
]);
export type CreateSessionResponse = Static<typeof CreateSessionResponseSchema>;

/** `GET /v1/sessions`. */
export const SessionListSchema = Type.Object({
  data: Type.Array(SessionSchema),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});
export type SessionList = Static<typeof SessionListSchema>;

/**
 * A second message while a run is active: wait for it, refuse, interrupt it, or send the message
 * into it (`steer`: taken at its next turn boundary, as `POST /v1/runs/:id/messages`).
 */
export const MULTITASK_STRATEGIES = ['enqueue', 'reject', 'interrupt', 'steer'] as const;
export type Multitask = (typeof MULTITASK_STRATEGIES)[number];

/** `POST /v1/sessions/:id/runs` body: a run's body (over the session's defaults) and `multitask`. */
export const CreateSessionRunBodySchema = Type.Composite(
  [
    CreateRunBodySchema,
    Type.Object({
      multitask: Type.Optional(Type.Union(MULTITASK_STRATEGIES.map((strategy) => Type.Literal(strategy)))),
    }),
  ],
  { additionalProperties: false },
);
export type CreateSessionRunBody = Static<typeof CreateSessionRunBodySchema>;

/**
 * `POST /v1/sessions/:id/runs` 202 answer: the new run (queued); with `multitask: "steer"` and a live
 * run, that run (its status) and `messageId`, the message sent into it.
 */
export const CreateSessionRunResponseSchema = Type.Object({
  id: Type.String(),
  status: RunStatusSchema,
  links: CreateRunResponseSchema.properties.links,
  token: CreateRunResponseSchema.properties.token,
  sessionId: Type.String(),
  messageId: Type.Optional(Type.String()),
});
export type CreateSessionRunResponse = Static<typeof CreateSessionRunResponseSchema>;

/** One entry of a session's transcript. */
export const TranscriptEntrySchema = Type.Object({
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('tool')]),
  content: Type.String(),
  runId: Type.String(),
  at: Type.String({ format: 'date-time' }),
  /** Assistant entries that called tools. */
  toolCalls: Type.Optional(Type.Array(ToolCallSchema)),
  /** Tool entries: the call they answer. */
  toolCallId: Type.Optional(Type.String()),
  /** Tool entries: the tool's name. */
  name: Type.Optional(Type.String()),
});
export type TranscriptEntryView = Static<typeof TranscriptEntrySchema>;

/** `GET /v1/sessions/:id/messages`. */
export const MessagePageSchema = Type.Object({
  data: Type.Array(TranscriptEntrySchema),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});
export type MessagePage = Static<typeof MessagePageSchema>;
