import { type Static, Type } from '@sinclair/typebox';
import { EventDataSchemas, type RunEventType, RunStatusSchema } from './events.js';
import { EXPECTED } from './expected.js';

/**
 * Webhooks: a tenant's endpoints (`/v1/webhooks`) are sent the run events
 * they subscribe to, signed with the Standard Webhooks scheme, at least once,
 * a run's events to one endpoint in their order (docs/api.md, "Webhooks").
 */

/** The run events an endpoint may subscribe to; `*` in `events` means all of them. */
export const WEBHOOK_EVENT_TYPES = [
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.expired',
  'clarify.requested',
  'clarify.answered',
  'clarify.timed_out',
  'tool.requested',
  'approval.requested',
  'approval.resolved',
  'child.started',
  'child.finished',
  'session.truncated',
  'budget.warning',
  'batch.completed',
  'schedule.fired',
  'schedule.skipped',
] as const satisfies readonly RunEventType[];
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** `events: ["*"]`: every type of {@link WEBHOOK_EVENT_TYPES}, and those added later. */
export const WEBHOOK_ALL_EVENTS = '*';

/** Whether an endpoint subscribed to `events` is sent events of `type`. */
export function webhookWants(events: readonly string[], type: string): boolean {
  return events.includes(type) || events.includes(WEBHOOK_ALL_EVENTS);
}

/** Bounds of the webhook routes; the API enforces them. */
export const WEBHOOK_LIMITS = {
  /** Characters of an endpoint's URL. */
  urlMaxChars: 2_048,
  /** Characters of an endpoint's description. */
  descriptionMaxChars: 256,
  /** Entries of `events`: each type at most once, or `*`. */
  eventsMax: WEBHOOK_EVENT_TYPES.length + 1,
  /** Deliveries one page of `GET /v1/webhooks/:id/deliveries` returns. */
  pageMaxLimit: 100,
} as const;

/** Settings unless configured otherwise (`TETHER_WEBHOOK_*`, docs/operations.md). */
export const WEBHOOK_DEFAULTS = {
  /** Endpoints one tenant may have (`TETHER_WEBHOOK_MAX_ENDPOINTS`). */
  maxEndpoints: 20,
  /** The delay after the first failed attempt; doubled after each (`TETHER_WEBHOOK_BACKOFF_MS`). */
  backoffMs: 1_000,
  /** The longest delay between two attempts (`TETHER_WEBHOOK_BACKOFF_MAX_MS`): 1 h. */
  backoffMaxMs: 3_600_000,
  /** How long after its event a delivery is still tried (`TETHER_WEBHOOK_MAX_AGE_MS`): 24 h. */
  maxAgeMs: 86_400_000,
  /** An endpoint failing without a success for this long is disabled (`TETHER_WEBHOOK_DISABLE_AFTER_MS`): 3 days. */
  disableAfterMs: 3 * 86_400_000,
  /** How long an attempt may take, connection to the last byte read. */
  timeoutMs: 10_000,
  /** Bytes of a response body read; the rest is ignored. */
  maxResponseBytes: 65_536,
  /** Deliveries the log keeps per endpoint (`TETHER_WEBHOOK_LOG_MAX`); older ones leave it first. */
  logMax: 1_000,
  /** How long an ended delivery stays in the log (`TETHER_WEBHOOK_RETENTION_S`): 3 days. */
  retentionSeconds: 3 * 86_400,
} as const;

/**
 * The webhook settings the API and the workers share (`TETHER_WEBHOOK_*`,
 * docs/operations.md); {@link WEBHOOK_DEFAULTS} holds their defaults.
 */
export interface WebhookSettings {
  /** Endpoints one tenant may have. */
  maxEndpoints: number;
  /** The delay after a delivery's first failed attempt (ms), doubled after each. */
  backoffMs: number;
  /** The longest delay between two attempts (ms). */
  backoffMaxMs: number;
  /** How long after its creation a delivery is still tried (ms). */
  maxAgeMs: number;
  /** An endpoint failing without a success this long (ms) is disabled. */
  disableAfterMs: number;
  /** Deliveries one endpoint's log keeps. */
  logMax: number;
  /** How long an ended delivery stays in the log (s). */
  retentionSeconds: number;
}

/** An endpoint's id: `whk_` and 26 lowercase Crockford base-32 characters. */
export const WEBHOOK_ID_PATTERN = '^whk_[0-9a-hjkmnp-tv-z]{26}$';
export const WebhookIdSchema = Type.String({
  pattern: WEBHOOK_ID_PATTERN,
  [EXPECTED]: 'an endpoint id (they look like whk_ and 26 letters and digits: whk_01jz3k…)',
});

/** A delivery's id: `whd_` and 26 lowercase letters or digits. */
export const WEBHOOK_DELIVERY_ID_PATTERN = '^whd_[0-9a-z]{26}$';
export const WebhookDeliveryIdSchema = Type.String({
  pattern: WEBHOOK_DELIVERY_ID_PATTERN,
  [EXPECTED]: 'a delivery id (they look like whd_ and 26 letters and digits)',
});

/** A signing secret: `whsec_` and the base64 of 32 random bytes (the Standard Webhooks format). */
export const WEBHOOK_SECRET_PATTERN = '^whsec_[A-Za-z0-9+/]{43}=$';

/**
 * An answer token: `wat_` and the base64url of 32 random bytes. Sent in a `clarify.requested`
 * or `approval.requested` delivery's `answer`; answers that one question, or decides that one
 * call, once.
 */
export const ANSWER_TOKEN_PATTERN = '^wat_[A-Za-z0-9_-]{43}$';

const WebhookEventsSchema = Type.Array(
  Type.Union([...WEBHOOK_EVENT_TYPES.map((type) => Type.Literal(type)), Type.Literal(WEBHOOK_ALL_EVENTS)]),
  {
    minItems: 1,
    maxItems: WEBHOOK_LIMITS.eventsMax,
    uniqueItems: true,
    description: `The event types to send: any of ${WEBHOOK_EVENT_TYPES.join(', ')}, or "*" for all`,
  },
);

const WebhookUrlSchema = Type.String({
  minLength: 1,
  maxLength: WEBHOOK_LIMITS.urlMaxChars,
  description:
    'Where deliveries are POSTed: https (http only with TETHER_WEBHOOK_ALLOW_HTTP=1), no credentials, no private, loopback or link-local address (unless TETHER_WEBHOOK_ALLOW_PRIVATE=1), never a cloud metadata address',
});

const WebhookDescriptionSchema = Type.String({ maxLength: WEBHOOK_LIMITS.descriptionMaxChars });

/** `POST /v1/webhooks` body. */
export const CreateWebhookBodySchema = Type.Object(
  {
    url: WebhookUrlSchema,
    events: WebhookEventsSchema,
    description: Type.Optional(WebhookDescriptionSchema),
  },
  { additionalProperties: false },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBodySchema>;

/** `PATCH /v1/webhooks/:id` body: what changes; `enabled: true` enables a disabled endpoint again. */
export const UpdateWebhookBodySchema = Type.Object(
  {
    url: Type.Optional(WebhookUrlSchema),
    events: Type.Optional(WebhookEventsSchema),
    description: Type.Optional(WebhookDescriptionSchema),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateWebhookBody = Static<typeof UpdateWebhookBodySchema>;

/** An endpoint, as the API shows it (never its secret, except at creation and rotation). */
export const WebhookSchema = Type.Object({
  id: WebhookIdSchema,
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Type.Optional(Type.String()),
  /** False once disabled (after failing without a success for `TETHER_WEBHOOK_DISABLE_AFTER_MS`, or by `PATCH`). */
  enabled: Type.Boolean(),
  /** When and why it was disabled. */
  disabledAt: Type.Optional(Type.String({ format: 'date-time' })),
  disabledReason: Type.Optional(Type.String()),
  /** The first failed attempt since the last success, while it fails. */
  failingSince: Type.Optional(Type.String({ format: 'date-time' })),
  createdAt: Type.String({ format: 'date-time' }),
});
export type Webhook = Static<typeof WebhookSchema>;

/** `POST /v1/webhooks` (201) and `POST /v1/webhooks/:id/rotate-secret`: the endpoint with its secret, shown only then. */
export const WebhookWithSecretSchema = Type.Intersect([
  WebhookSchema,
  Type.Object({
    secret: Type.String({
      pattern: WEBHOOK_SECRET_PATTERN,
      description: 'The signing secret (whsec_…): shown only now',
    }),
  }),
]);
export type WebhookWithSecret = Static<typeof WebhookWithSecretSchema>;

/** `GET /v1/webhooks`. */
export const WebhookListSchema = Type.Object({ data: Type.Array(WebhookSchema) });
export type WebhookList = Static<typeof WebhookListSchema>;

/**
 * A delivery's state: `pending` (to be tried, or tried again at `nextAttemptAt`),
 * `delivered` (a 2xx answer), `failed` (no 2xx within `TETHER_WEBHOOK_MAX_AGE_MS`),
 * `disabled` (its endpoint was disabled before it got through) or `dropped` (its
 * endpoint was deleted, or its payload is gone).
 */
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'disabled', 'dropped'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** One delivery of an event to an endpoint, with its attempts so far. */
export const WebhookDeliverySchema = Type.Object({
  id: WebhookDeliveryIdSchema,
  /** The message: `webhook-id` and the payload's `id`, the same in every attempt and redelivery. */
  messageId: Type.String(),
  type: Type.String(),
  runId: Type.String(),
  /** The run event's id in the run's event log. */
  eventId: Type.String(),
  status: Type.Union(WEBHOOK_DELIVERY_STATUSES.map((status) => Type.Literal(status))),
  attempts: Type.Integer({ minimum: 0 }),
  /** The HTTP status of the last attempt, when it got an answer. */
  lastStatus: Type.Optional(Type.Integer()),
  /** Why the last attempt failed (an HTTP status with the start of the body, or the connection's error). */
  lastError: Type.Optional(Type.String()),
  lastAttemptAt: Type.Optional(Type.String({ format: 'date-time' })),
  /** When it is tried next, while `pending`. */
  nextAttemptAt: Type.Optional(Type.String({ format: 'date-time' })),
  createdAt: Type.String({ format: 'date-time' }),
  finishedAt: Type.Optional(Type.String({ format: 'date-time' })),
  /** A redelivery: the delivery it sends again. */
  redeliveryOf: Type.Optional(WebhookDeliveryIdSchema),
});
export type WebhookDelivery = Static<typeof WebhookDeliverySchema>;

/** `GET /v1/webhooks/:id/deliveries`: newest first, `nextCursor` for the page after. */
export const WebhookDeliveryPageSchema = Type.Object({
  data: Type.Array(WebhookDeliverySchema),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});
export type WebhookDeliveryPage = Static<typeof WebhookDeliveryPageSchema>;

/**
 * What an endpoint is sent: the body of each POST. `data` is the run event's
 * data; `run` the run's status and metadata when the delivery was made;
 * `answer` (`clarify.requested` and `approval.requested` only) where and with what the question
 * can be answered, or the call decided, without an API key.
 */
export const WebhookPayloadSchema = Type.Object({
  /** The message id (also `webhook-id`): the same on every attempt, for deduplication. */
  id: Type.String(),
  type: Type.Union(WEBHOOK_EVENT_TYPES.map((type) => Type.Literal(type))),
  /** The event's time. */
  at: Type.String({ format: 'date-time' }),
  runId: Type.String(),
  sessionId: Type.Optional(Type.String()),
  data: Type.Union(WEBHOOK_EVENT_TYPES.map((type) => EventDataSchemas[type])),
  run: Type.Object({ status: RunStatusSchema, metadata: Type.Optional(Type.Unknown()) }),
  answer: Type.Optional(
    Type.Object({
      /** `POST` here with `{ "answer": "…" }` and `Authorization: Bearer <token>`. */
      url: Type.String(),
      token: Type.String({ pattern: ANSWER_TOKEN_PATTERN }),
      expiresAt: Type.String({ format: 'date-time' }),
    }),
  ),
});
export type WebhookPayload = Static<typeof WebhookPayloadSchema>;
