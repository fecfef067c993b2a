import { type Static, Type } from '@sinclair/typebox';
import { RUN_STATUSES } from './events.js';
import { CreateRunBodySchema } from './http.js';

/**
 * Batches: up to {@link BATCH_LIMITS.maxRuns} runs submitted in one request, created all or none
 * (`POST /v1/batches`), read and cancelled together; `batch.completed` is told on the run that
 * ends last (docs/api.md, "Batches").
 */

/** Bounds of the batch routes; the API enforces them. */
export const BATCH_LIMITS = {
  /** Runs one batch holds. */
  maxRuns: 1_000,
  /** Runs one page of `GET /v1/batches/:id` lists. */
  pageMax: 500,
  /** Runs one page lists when `limit` is not given. */
  pageDefault: 100,
} as const;

/** `POST /v1/batches` body. */
export const CreateBatchBodySchema = Type.Object(
  {
    /** The runs, each a `POST /v1/runs` body (without `runAt`, `delayMs`, `expiresAt` or `ttlMs`). */
    runs: Type.Array(CreateRunBodySchema, { minItems: 1, maxItems: BATCH_LIMITS.maxRuns }),
    /** Returned with the batch. */
    metadata: CreateRunBodySchema.properties.metadata,
  },
  { additionalProperties: false },
);
export type CreateBatchBody = Static<typeof CreateBatchBodySchema>;

export const BatchStatusSchema = Type.Union([Type.Literal('running'), Type.Literal('completed')]);

/** A batch: its runs counted by status, and a page of them in the order they were given. */
export const BatchSchema = Type.Object({
  id: Type.String(),
  /** `completed` once every run has ended, whatever way. */
  status: BatchStatusSchema,
  total: Type.Integer({ minimum: 1 }),
  /** Runs by status (statuses with none left out). */
  counts: Type.Partial(
    Type.Object(Object.fromEntries(RUN_STATUSES.map((status) => [status, Type.Integer({ minimum: 0 })]))),
  ),
  createdAt: Type.String({ format: 'date-time' }),
  completedAt: Type.Optional(Type.String({ format: 'date-time' })),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  /** A page of the runs, in the order they were given. */
  runs: Type.Array(
    Type.Object({ id: Type.String(), status: Type.Union(RUN_STATUSES.map((s) => Type.Literal(s))) }),
  ),
  /** Pass as `?cursor=` for the next page; null after the last. */
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});
export type Batch = Static<typeof BatchSchema>;

/** `POST /v1/batches` 202 answer: the batch and its runs' ids, in the order given. */
export const CreateBatchResponseSchema = Type.Object({
  id: Type.String(),
  total: Type.Integer({ minimum: 1 }),
  runIds: Type.Array(Type.String()),
  links: Type.Object({ self: Type.String() }),
});
export type CreateBatchResponse = Static<typeof CreateBatchResponseSchema>;

/** `POST /v1/batches/:id/cancel` answer: how many live runs were asked to stop. */
export const CancelBatchResponseSchema = Type.Object({
  id: Type.String(),
  cancelled: Type.Integer({ minimum: 0 }),
});
export type CancelBatchResponse = Static<typeof CancelBatchResponseSchema>;
