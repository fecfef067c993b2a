import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  BATCH_LIMITS,
  BatchSchema,
  CancelBatchResponseSchema,
  CreateBatchBodySchema,
  CreateBatchResponseSchema,
  type CreateRunBody,
  ErrorResponseSchema,
  EXPECTED,
  TetherError,
} from '@tether/protocol';
import { cancelBatch, readBatch } from '@tether/store/runs';
import { ApiError } from '../../errors.js';
import { runSpec } from '../runs/spec.js';
import { checkSubmission } from '../runs/submission.js';
import { COMMON_ERRORS } from '../schemas.js';

const BatchParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

/** The timing fields a batch's runs may not have yet: a batch's runs start now. */
const TIMING_FIELDS = ['runAt', 'delayMs', 'expiresAt', 'ttlMs'] as const;

/**
 * `/v1/batches`: many runs submitted at once, created all or none, read and cancelled together.
 * A batch's runs keep their keys in one hash slot with the batch (their ids carry its tag), so the
 * step that ends each run counts it, and the last one tells `batch.completed` (docs/api.md).
 */
const batchRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      schema: {
        tags: ['batches'],
        operationId: 'createBatch',
        summary: 'Submit a batch of runs',
        description: `Creates every run of \`runs\` (1 to ${BATCH_LIMITS.maxRuns}, each a \`POST /v1/runs\` body without \`runAt\`, \`delayMs\`, \`expiresAt\` or \`ttlMs\`) or none: each is checked as \`POST /v1/runs\` checks one, and the first that is refused is the answer (its status and code, the message starting with \`runs[<index>]\`). Answers 202 with the batch's id and its runs' ids in the order given. When every run has ended, however, the last one's log has \`batch.completed\` (a webhook event) just before its own end.`,
        body: CreateBatchBodySchema,
        response: {
          202: CreateBatchResponseSchema,
          402: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { tenant } = request;
      const specs = [];
      for (const [index, body] of request.body.runs.entries()) {
        specs.push(await checkedRun(app, tenant, body, index));
      }
      const { batchId, runIds } = await app.runs.submitBatch(tenant, specs, {
        metadata: request.body.metadata,
        requestId: request.id,
      });
      const self = `/v1/batches/${batchId}`;
      return reply
        .code(202)
        .header('location', self)
        .send({ id: batchId, total: runIds.length, runIds, links: { self } });
    },
  );

  app.get(
    '/:id',
    {
      schema: {
        tags: ['batches'],
        operationId: 'getBatch',
        summary: 'Read a batch',
        description: `Its runs counted by status (\`status\` \`completed\` once every run has ended), and a page of them in the order given: at most \`limit\` (1 to ${BATCH_LIMITS.pageMax}, default ${BATCH_LIMITS.pageDefault}) after \`cursor\` (the \`nextCursor\` of the page before). Another tenant's batch is 404.`,
        params: BatchParamsSchema,
        querystring: Type.Object({
          cursor: Type.Optional(
            Type.String({ pattern: '^[0-9]{1,7}$', [EXPECTED]: "the previous page's nextCursor (a number)" }),
          ),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: BATCH_LIMITS.pageMax })),
        }),
        response: { 200: BatchSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => readBatch(app.runs, request.tenant, request.params.id, request.query),
  );

  app.post(
    '/:id/cancel',
    {
      schema: {
        tags: ['batches'],
        operationId: 'cancelBatch',
        summary: "Cancel a batch's live runs",
        description:
          'Cancels every run of the batch that has not ended, as `POST /v1/runs/:id/cancel` does each (a running one at its next step), and answers 202 with how many there were. Runs that ended stay as they are.',
        params: BatchParamsSchema,
        response: { 202: CancelBatchResponseSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const cancelled = await cancelBatch(app.runs, request.tenant, request.params.id);
      return reply.code(202).send({ id: request.params.id, cancelled });
    },
  );
};

/** One run of the batch checked as `POST /v1/runs` checks it: its spec, or its refusal naming its index. */
async function checkedRun(
  app: Parameters<FastifyPluginAsyncTypebox>[0],
  tenant: string,
  body: CreateRunBody,
  index: number,
) {
  const timed = TIMING_FIELDS.find((field) => (body as Record<string, unknown>)[field] !== undefined);
  if (timed) {
    throw new ApiError(
      'ERR_VALIDATION',
      `runs[${index}].${timed}: a batch's runs start now; submit a run that starts later on its own (POST /v1/runs).`,
    );
  }
  try {
    checkSubmission(body, app.config);
    return await runSpec(app, tenant, body);
  } catch (error) {
    if (!(error instanceof TetherError)) throw error;
    throw new TetherError(error.code, `runs[${index}]: ${error.message}`, {
      statusCode: error.statusCode,
      cause: error,
    });
  }
}

export default batchRoutes;
