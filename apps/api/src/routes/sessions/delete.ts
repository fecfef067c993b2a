import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema } from '@tether/protocol';
import { COMMON_ERRORS } from '../schemas.js';
import { SessionParamsSchema } from './params.js';

/** `DELETE /v1/sessions/:id`: remove a session, its transcript, runs and workspace. */
const deleteSessionRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.delete(
    '/:id',
    {
      schema: {
        tags: ['sessions'],
        operationId: 'deleteSession',
        summary: 'Delete a session',
        description:
          "Removes the session, its transcript, its runs' records and events, and its workspace: 204. 409 `ERR_SESSION_BUSY` while a run is live, unless `?cancel=true`, which cancels the live runs first.",
        params: SessionParamsSchema,
        querystring: Type.Object({ cancel: Type.Optional(Type.Boolean()) }),
        response: {
          204: Type.Null(),
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      await app.sessions.delete(request.tenant, id, { cancel: request.query.cancel === true });
      await rm(join(app.config.workspaceRoot, 'sessions', id), { recursive: true, force: true });
      return reply.code(204).send(null);
    },
  );
};

export default deleteSessionRoute;
