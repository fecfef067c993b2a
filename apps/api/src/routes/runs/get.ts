import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorResponseSchema, RunSchema } from '@tether/protocol';
import { COMMON_ERRORS, RunParamsSchema } from '../schemas.js';
import { toRun } from './run-view.js';

/** `GET /v1/runs/:id`: read a run. */
const getRunRoute: FastifyPluginAsyncTypebox = async (app) => {
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
};

export default getRunRoute;
