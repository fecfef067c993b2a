import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorResponseSchema, SessionSchema } from '@tether/protocol';
import { COMMON_ERRORS } from '../schemas.js';
import { SessionParamsSchema, TokenQuerySchema } from './params.js';

/** `GET /v1/sessions/:id`: read a session. */
const getSessionRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id',
    {
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['sessions'],
        operationId: 'getSession',
        summary: 'Read a session',
        description:
          '`status` is `idle` (no live run), `busy` (a run queued or running) or `waiting_for_input` (its run waits on `pendingClarify`).',
        params: SessionParamsSchema,
        querystring: TokenQuerySchema,
        response: { 200: SessionSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) => app.sessions.get(request.tenant, request.params.id),
  );
};

export default getSessionRoute;
