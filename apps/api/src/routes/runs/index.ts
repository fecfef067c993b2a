import { rm } from 'node:fs/promises';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  CancelRunResponseSchema,
  CreateRunBodySchema,
  CreateRunResponseSchema,
  ErrorResponseSchema,
  RunIdSchema,
  RunListSchema,
  RunSchema,
  RunStatusSchema,
} from '@tether/protocol';
import { workspaceDir } from '@tether/tools';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sealMcpServers } from '../../mcp-servers.js';
import { COMMON_ERRORS, RunParamsSchema } from '../schemas.js';
import clarifyRoutes from './clarify/index.js';
import eventRoutes from './events/index.js';
import fileRoutes from './files/index.js';
import { metadataFilter } from './metadata-filter.js';
import { runLinks, toRun } from './run-view.js';
import { checkSubmission } from './submission.js';
import toolOutputRoutes from './tool-outputs/index.js';

/** `Idempotency-Key`: printable ASCII, as Stripe and the IETF draft use it. */
const IdempotencyHeadersSchema = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' }),
  ),
});

const ListQuerySchema = Type.Object({
  status: Type.Optional(RunStatusSchema),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(RunIdSchema),
});

/** `/v1/runs`: submit, list, read and cancel runs; events, clarify and files are sub-resources. */
const runRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      schema: {
        tags: ['runs'],
        operationId: 'createRun',
        summary: 'Submit a run',
        description:
          'Queues a run and answers 202 with its id, links and a short-lived read token for its events (`?token=`). With an `Idempotency-Key`, the same key and body answer the same run again (header `Idempotent-Replayed: true`); the same key with another body is 409.',
        headers: IdempotencyHeadersSchema,
        body: CreateRunBodySchema,
        response: {
          202: CreateRunResponseSchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      checkSubmission(request.body, app.config);
      const spec = await sealMcpServers(request.body, request.tenant, {
        config: app.config,
        registered: app.mcpServers,
      });
      const { run, created } = await app.runs.submit(request.tenant, spec, {
        idempotencyKey: request.headers['idempotency-key'],
        hashOf: request.body,
        requestId: request.id,
      });
      return accepted(app, request, reply, run.id, created);
    },
  );

  app.get(
    '/',
    {
      schema: {
        tags: ['runs'],
        operationId: 'listRuns',
        summary: "List the caller's runs, newest first",
        description:
          "Filters: `status`, and `metadata.<key>=<value>` (string equality on the run's metadata, up to 8 pairs, ANDed; keys are plain names of 1 to 128 of `A-Z a-z 0-9 _ . -`, not `__proto__`, others are refused with 400; values of at most 256 characters). A filtered page reads at most 1,000 index entries: it may hold fewer than `limit` runs, even none, with a `nextCursor` to go on.",
        querystring: ListQuerySchema,
        response: { 200: RunListSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const { runs, nextCursor } = await app.runs.list(request.tenant, {
        status: request.query.status,
        limit: request.query.limit ?? 20,
        cursor: request.query.cursor,
        metadata: metadataFilter(request.query as Record<string, unknown>),
      });
      return { data: runs.map(toRun), nextCursor };
    },
  );

  app.get(
    '/:id',
    {
      // Readable with its session's token too (the run read token opens only the events).
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['runs'],
        operationId: 'getRun',
        summary: 'Read a run',
        params: RunParamsSchema,
        response: { 200: RunSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => toRun(await app.runs.get(request.tenant, request.params.id)),
  );

  app.post(
    '/:id/cancel',
    {
      schema: {
        tags: ['runs'],
        operationId: 'cancelRun',
        summary: 'Cancel a run',
        description:
          'Answers 202 with the status the run had: a queued or waiting run ends now, a running one at its next step (`run.cancelled` is its last event). A finished run is 409.',
        params: RunParamsSchema,
        response: {
          202: CancelRunResponseSchema,
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const status = await app.runs.cancel(request.tenant, request.params.id);
      return reply.code(202).send({ id: request.params.id, status });
    },
  );

  app.delete(
    '/:id',
    {
      schema: {
        operationId: 'deleteRun',
        tags: ['runs'],
        summary: 'Delete a run',
        description:
          "Removes an ended run (completed, failed or cancelled): its record, its events, its crew children's, its workspace and its place in `GET /v1/runs`: 204. 409 `ERR_RUN_ACTIVE` while it or one of its crew children is active (queued, running, waiting_for_input, waiting_for_children): cancel it first. A session's run goes with its session (409 `ERR_RUN_IN_SESSION`: `DELETE /v1/sessions/:id`), a crew child with its root run (409 `ERR_RUN_CREW_CHILD`).",
        params: RunParamsSchema,
        response: {
          204: Type.Null(),
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const run = await app.runs.delete(request.tenant, request.params.id);
      await rm(workspaceDir(app.config.workspaceRoot, run), { recursive: true, force: true });
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/:id/retry',
    {
      schema: {
        operationId: 'retryRun',
        tags: ['runs'],
        summary: 'Retry a failed or cancelled run',
        description:
          "Starts the run again as a new run with the same spec (the submitted body, with its files in a fresh workspace) and `retryOf` naming the old one: 202 as `POST /v1/runs`. 409 `ERR_RUN_NOT_RETRYABLE` for a run that is not failed or cancelled, a session's run or a crew child. An `Idempotency-Key` answers the same new run for the same run again (`Idempotent-Replayed: true`); the key with another run is 409.",
        params: RunParamsSchema,
        headers: IdempotencyHeadersSchema,
        response: {
          202: CreateRunResponseSchema,
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { run, created } = await app.runs.retry(request.tenant, request.params.id, {
        idempotencyKey: request.headers['idempotency-key'],
        requestId: request.id,
      });
      return accepted(app, request, reply, run.id, created);
    },
  );

  await app.register(eventRoutes);
  await app.register(clarifyRoutes);
  await app.register(toolOutputRoutes);
  await app.register(fileRoutes);
};

/**
 * A run accepted, by a submission or a retry: 202 with its links and a read token; or the run an
 * Idempotency-Key already made, said so.
 */
function accepted(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  runId: string,
  created: boolean,
) {
  app.metrics.runsSubmitted.inc({ created: String(created) });
  if (!created) reply.header('idempotent-replayed', 'true');
  reply.header('location', runLinks(runId).self);
  return reply.code(202).send({
    id: runId,
    status: 'queued',
    links: runLinks(runId),
    token: app.readTokens.issue(runId, request.tenant),
  });
}

export default runRoutes;
