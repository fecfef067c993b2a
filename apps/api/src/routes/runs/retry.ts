import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CreateRunResponseSchema, ErrorResponseSchema } from '@tether/protocol';
import { COMMON_ERRORS, RunParamsSchema } from '../schemas.js';
import { accepted, IdempotencyHeadersSchema } from './accepted.js';
import { checkTenantBudget } from './spec.js';

/** `POST /v1/runs/:id/retry`: start a failed or cancelled run again, as a new run. */
const retryRunRoute: FastifyPluginAsyncTypebox = async (app) => {
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
          402: ErrorResponseSchema,
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      await checkTenantBudget(app, request.tenant);
      const { run, created } = await app.runs.retry(request.tenant, request.params.id, {
        idempotencyKey: request.headers['idempotency-key'],
        requestId: request.id,
      });
      return accepted(app, request, reply, run, created);
    },
  );
};

export default retryRunRoute;
