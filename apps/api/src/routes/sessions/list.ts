import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { SessionIdSchema, SessionListSchema } from '@tether/protocol';
import { COMMON_ERRORS } from '../schemas.js';

const ListQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(SessionIdSchema),
});

/** `GET /v1/sessions`: the caller's sessions, newest first. */
const listSessionsRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      schema: {
        tags: ['sessions'],
        operationId: 'listSessions',
        summary: "List the caller's sessions, newest first",
        querystring: ListQuerySchema,
        response: { 200: SessionListSchema, ...COMMON_ERRORS },
      },
    },
    async (request) =>
      app.sessions.list(request.tenant, { limit: request.query.limit ?? 20, cursor: request.query.cursor }),
  );
};

export default listSessionsRoute;
