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
import { withAnswerToken } from '../answer-token.js';

/** `POST /v1/runs/:id/clarify/:requestId`: the first answer wins and the run resumes on any worker. */
const clarifyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/:id/clarify/:requestId',
    {
      // A session token answers the questions of its session's runs; a webhook's answer token, its one question.
      config: { auth: 'key-or-session-token', answerToken: true },
      schema: {
        tags: ['clarify'],
        operationId: 'answerClarify',
        summary: 'Answer a clarify question',
        description:
          "200 when the answer is accepted. 409 when the question was already answered (`ERR_CLARIFY_ALREADY_ANSWERED`), timed out (`ERR_CLARIFY_TIMED_OUT`, `ERR_CLARIFY_EXPIRED`) or the run has ended (`ERR_CLARIFY_NOT_PENDING`); 404 for an unknown run or request (with a key or a session token). Instead of a key, the answer token of the question's `clarify.requested` webhook delivery (`answer.token`, `wat_…`) may be sent as the bearer or in `?token=`: it answers that one question, once: 409 `ERR_ANSWER_TOKEN_USED` the second time, and 401 `ERR_ANSWER_TOKEN_INVALID` for any token that is not this question's, the same answer whether the run and the question exist or not, counted as a failed authentication (429 `ERR_AUTH_RATE_LIMITED` past the limit).",
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
    async (request, reply) => {
      const { id, requestId } = request.params;
      const token = request.answerToken;
      if (token !== undefined) {
        await withAnswerToken(app, request, reply, token, (hash) =>
          app.runs.answerWithToken(id, requestId, request.body.answer, hash),
        );
      } else {
        await app.runs.answer(request.tenant, id, requestId, request.body.answer);
      }
      return { ok: true as const };
    },
  );
};

export default clarifyRoutes;
