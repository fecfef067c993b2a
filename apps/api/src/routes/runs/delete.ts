import { rm } from 'node:fs/promises';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema } from '@tether/protocol';
import { workspaceDir } from '@tether/tools';
import { COMMON_ERRORS, RunParamsSchema } from '../schemas.js';

/** `DELETE /v1/runs/:id`: remove an ended run, its events and its workspace. */
const deleteRunRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.delete(
    '/:id',
    {
      schema: {
        operationId: 'deleteRun',
        tags: ['runs'],
        summary: 'Delete a run',
        description:
          "Removes an ended run (completed, failed or cancelled), or a scheduled one (cancelled first, its job removed): its record, its events, its crew children's, its workspace and its place in `GET /v1/runs`: 204. 409 `ERR_RUN_ACTIVE` while it or one of its crew children is active (queued, running, waiting_for_input, waiting_for_children): cancel it first. A session's run goes with its session (409 `ERR_RUN_IN_SESSION`: `DELETE /v1/sessions/:id`), a crew child with its root run (409 `ERR_RUN_CREW_CHILD`).",
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
};

export default deleteRunRoute;
