import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CreateRunBodySchema, CreateRunResponseSchema, ErrorResponseSchema } from '@tether/protocol';
import { COMMON_ERRORS } from '../schemas.js';
import { accepted, IdempotencyHeadersSchema } from './accepted.js';
import { runSpec } from './spec.js';
import { checkSubmission } from './submission.js';
import { expiryTime, startTime, withoutTiming } from './timing.js';

/** `POST /v1/runs`: submit a run (idempotent with an `Idempotency-Key`). */
const createRunRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      schema: {
        tags: ['runs'],
        operationId: 'createRun',
        summary: 'Submit a run',
        description:
          'Queues a run and answers 202 with its id, links and a short-lived read token for its events (`?token=`). With `runAt` (ISO 8601) or `delayMs` (not both; at most a year ahead) the run is `scheduled` until then (one in the past starts now). With an `Idempotency-Key`, the same key and body answer the same run again (header `Idempotent-Replayed: true`); the same key with another body is 409.',
        headers: IdempotencyHeadersSchema,
        body: CreateRunBodySchema,
        response: {
          202: CreateRunResponseSchema,
          402: ErrorResponseSchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const runAtMs = startTime(request.body);
      const expiresAtMs = expiryTime(request.body, runAtMs);
      const body = withoutTiming(request.body);
      checkSubmission(body, app.config);
      const spec = await runSpec(app, request.tenant, body);
      const { run, created } = await app.runs.submit(request.tenant, spec, {
        idempotencyKey: request.headers['idempotency-key'],
        hashOf: request.body,
        requestId: request.id,
        runAtMs,
        expiresAtMs,
      });
      return accepted(app, request, reply, run, created);
    },
  );
};

export default createRunRoute;
