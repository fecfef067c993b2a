import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  AnswerResponseSchema,
  ApprovalDecisionBodySchema,
  ApprovalRequestIdSchema,
  ErrorResponseSchema,
  RunIdSchema,
} from '@tether/protocol';
import type { RunRecord } from '@tether/store/runs';
import { getSchema, jsonSchemaArguments } from '@tether/tools';
import { ApiError } from '../../../errors.js';
import { COMMON_ERRORS } from '../../schemas.js';

/**
 * `POST /v1/runs/:id/approvals/:requestId`: a decision on a tool call the run's approval policy
 * holds (approve, edit the arguments, or reject). The first decision wins; the run resumes on any
 * worker once every held call of the model's turn has one.
 */
const approvalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/:id/approvals/:requestId',
    {
      // As a clarify answer: a session token decides on its session's runs.
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['runs'],
        operationId: 'decideApproval',
        summary: 'Approve, edit or reject a tool call that waits for a decision',
        description:
          "200 when the decision is taken (the run resumes once every held call of its turn has one). `edit` gives the arguments the call runs with, checked against the tool's parameters (400 `ERR_APPROVAL_ARGUMENTS_INVALID` naming the field); `reject` may say why (the model is told). 409 when a decision was taken already (`ERR_APPROVAL_ALREADY_DECIDED`), the deadline passed (`ERR_APPROVAL_TIMED_OUT`, `ERR_APPROVAL_EXPIRED`) or the run has ended (`ERR_APPROVAL_NOT_PENDING`); 404 for an unknown run or request.",
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
    async (request) => {
      const { id, requestId } = request.params;
      const body = request.body;
      if (body.decision === 'edit') {
        checkEdit(await app.runs.get(request.tenant, id), requestId, body.arguments);
      }
      await app.runs.decide(request.tenant, id, requestId, { ...body, by: request.tenant });
      return { ok: true as const };
    },
  );
};

/**
 * Refuses edited arguments the tool would refuse (400 naming the field): a built-in tool's or a
 * client tool's, whose schemas the API has. An MCP server's tool is checked when the call runs
 * (the model is told, as for its own arguments). A request the run does not hold is left to the
 * decision's own refusal.
 */
function checkEdit(run: RunRecord, requestId: string, args: Record<string, unknown>): void {
  const pending = run.pendingApprovals?.find((approval) => approval.requestId === requestId);
  if (!pending) return;
  const client = run.spec?.tools?.find((tool) => tool.name === pending.tool);
  const builtin = getSchema(pending.tool);
  const parameters = client?.parameters ?? (builtin ? toJsonSchema(builtin.parameters) : undefined);
  if (!parameters) return;
  const checked = jsonSchemaArguments({ name: pending.tool, parameters })(JSON.stringify(args));
  if (!checked.ok) {
    throw new ApiError('ERR_APPROVAL_ARGUMENTS_INVALID', `arguments: ${checked.result.content}`);
  }
}

/** A TypeBox schema as plain JSON Schema (a JSON round trip drops its symbol keys). */
function toJsonSchema(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

export default approvalRoutes;
