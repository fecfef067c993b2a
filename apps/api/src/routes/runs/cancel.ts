import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CancelRunResponseSchema, ErrorResponseSchema } from '@tether/protocol';
import { COMMON_ERRORS, RunParamsSchema } from '../schemas.js';

/** `POST /v1/runs/:id/cancel`: cancel a run, now or at its next step. */
const cancelRunRoute: FastifyPluginAsyncTypebox = async (app) => {
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
};

export default cancelRunRoute;
