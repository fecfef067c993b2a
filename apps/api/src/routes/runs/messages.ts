import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorResponseSchema, SteerMessageBodySchema, SteerMessageResponseSchema } from '@tether/protocol';
import { COMMON_ERRORS, RunParamsSchema } from '../schemas.js';

/** `POST /v1/runs/:id/messages`: steer a live run with a message it takes at its next turn boundary. */
const runMessagesRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/:id/messages',
    {
      // As a clarify answer: a session token steers its session's runs.
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['runs'],
        operationId: 'steerRun',
        summary: 'Send a message to a live run',
        description:
          "202 with the message's id: `message.received` is appended, and the run takes the message at its next turn boundary (after the model turn under way and its tool results, never between a call and its result), as the user's, with `message.delivered`; a run waiting on a question or an approval takes it when it next wakes. A run that ends first says so with `message.undelivered`. 409 `ERR_RUN_ENDED` for an ended run, `ERR_RUN_MESSAGES_LIMIT` past 20 messages not taken yet; 404 for an unknown run.",
        params: RunParamsSchema,
        body: SteerMessageBodySchema,
        response: {
          202: SteerMessageResponseSchema,
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const messageId = await app.runs.steer(request.tenant, request.params.id, request.body.content);
      return reply.code(202).send({ messageId });
    },
  );
};

export default runMessagesRoute;
