import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  AnswerBodySchema,
  AnswerResponseSchema,
  ErrorResponseSchema,
  RequestIdSchema,
  RunIdSchema,
} from '@tether/protocol';
import { COMMON_ERRORS } from '../../schemas.js';

/** `POST /v1/runs/:id/clarify/:requestId`: the first answer wins and the run resumes on any worker. */
const clarifyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/:id/clarify/:requestId',
    {
      // A session token answers the questions of its session's runs.
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['clarify'],
        summary: 'Answer a clarify question',
        description:
          '200 when the answer is accepted. 409 when the question was already answered (`ERR_CLARIFY_ALREADY_ANSWERED`), timed out (`ERR_CLARIFY_TIMED_OUT`, `ERR_CLARIFY_EXPIRED`) or the run has ended (`ERR_CLARIFY_NOT_PENDING`); 404 for an unknown run or request.',
        params: Type.Object({ id: RunIdSchema, requestId: RequestIdSchema }),
        body: AnswerBodySchema,
        response: {
          200: AnswerResponseSchema,
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request) => {
      await app.runs.answer(request.tenant, request.params.id, request.params.requestId, request.body.answer);
      return { ok: true as const };
    },
  );
};

export default clarifyRoutes;
