import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  AnswerResponseSchema,
  ApprovalDecisionBodySchema,
  ApprovalRequestIdSchema,
  ErrorResponseSchema,
  RunIdSchema,
} from '@tether/protocol';
import { COMMON_ERRORS } from '../../schemas.js';
import { withAnswerToken } from '../answer-token.js';
import { editCheck } from './check-edit.js';

/** Who decided with a webhook's answer token, in `approval.resolved`. */
export const ANSWER_TOKEN_DECIDER = 'answer_token';

/**
 * `POST /v1/runs/:id/approvals/:requestId`: a decision on a tool call the run's approval policy
 * holds (approve, edit the arguments, or reject). The first decision wins; the run resumes on any
 * worker once every held call of the model's turn has one.
 */
const approvalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/:id/approvals/:requestId',
    {
      // As a clarify answer: a session token decides on its session's runs; a webhook's answer token, its one call.
      config: { auth: 'key-or-session-token', answerToken: true },
      schema: {
        tags: ['runs'],
        operationId: 'decideApproval',
        summary: 'Approve, edit or reject a tool call that waits for a decision',
        description:
          "200 when the decision is taken (the run resumes once every held call of its turn has one). `edit` gives the arguments the call runs with, checked against a built-in or client tool's parameters (400 `ERR_APPROVAL_ARGUMENTS_INVALID` naming the field); `reject` may say why (the model is told). 409 when a decision was taken already (`ERR_APPROVAL_ALREADY_DECIDED`), the deadline passed (`ERR_APPROVAL_TIMED_OUT`, `ERR_APPROVAL_EXPIRED`) or the run has ended (`ERR_APPROVAL_NOT_PENDING`); 404 for an unknown run or request. Instead of a key, the answer token of the call's `approval.requested` webhook delivery (`answer.token`, `wat_…`) may be sent as the bearer or in `?token=`: it decides that one call, once (409 `ERR_ANSWER_TOKEN_USED` the second time; 401 `ERR_ANSWER_TOKEN_INVALID` for any other token, whatever exists at this URL); its edits are checked when the call runs.",
        params: Type.Object({ id: RunIdSchema, requestId: ApprovalRequestIdSchema }),
        body: ApprovalDecisionBodySchema,
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
        // Nothing is read before the script has checked the token (see RunService.decideWithToken).
        const decision = { ...request.body, by: ANSWER_TOKEN_DECIDER };
        await withAnswerToken(app, request, reply, token, (hash) =>
          app.runs.decideWithToken(id, requestId, decision, hash),
        );
      } else {
        const body = request.body;
        const check = body.decision === 'edit' ? editCheck(requestId, body) : undefined;
        await app.runs.decide(request.tenant, id, requestId, { ...body, by: request.tenant }, check);
      }
      return { ok: true as const };
    },
  );
};

export default approvalRoutes;
