import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorResponseSchema, EXPECTED, MessagePageSchema } from '@tether/protocol';
import { COMMON_ERRORS } from '../schemas.js';
import { SessionParamsSchema } from './params.js';

const MessagesQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000, default: 100 })),
  cursor: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,9}$',
      [EXPECTED]: "the previous page's nextCursor (a number)",
      description: 'nextCursor of the previous page',
    }),
  ),
  token: Type.Optional(Type.String({ maxLength: 300, description: 'The session token' })),
});

/** `GET /v1/sessions/:id/messages`: the session's transcript, a page at a time. */
const sessionMessagesRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/messages',
    {
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['sessions'],
        operationId: 'listSessionMessages',
        summary: "Read the session's transcript",
        description:
          "The transcript in order: each run's input (`user`), the assistant's turns (with `toolCalls`) and the tool results (`tool`, with `toolCallId`), `limit` at a time; pass `nextCursor` as `?cursor=` for the next page. A run's turn enters the transcript when the run ends.",
        params: SessionParamsSchema,
        querystring: MessagesQuerySchema,
        response: { 200: MessagePageSchema, 404: ErrorResponseSchema, ...COMMON_ERRORS },
      },
    },
    async (request) =>
      app.sessions.messages(request.tenant, request.params.id, {
        limit: request.query.limit ?? 100,
        cursor: request.query.cursor,
      }),
  );
};

export default sessionMessagesRoute;
