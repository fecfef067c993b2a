import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  AnswerResponseSchema,
  ErrorResponseSchema,
  RunIdSchema,
  ToolOutputBodySchema,
  ToolRequestIdSchema,
} from '@tether/protocol';
import { COMMON_ERRORS } from '../../schemas.js';

/**
 * `POST /v1/runs/:id/tool-outputs/:requestId`: the output of a client tool
 * call. The first output wins; the run resumes on any worker once every call
 * of the model's turn has one.
 */
const toolOutputRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/:id/tool-outputs/:requestId',
    {
      // As a clarify answer: a session token posts the outputs of its session's runs.
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['tools'],
        operationId: 'submitToolOutput',
        summary: 'Post the output of a client tool call',
        description:
          '200 when the output is accepted (the run resumes once every client call of its turn has an output). `output` is at most 100,000 characters; `isError: true` gives it to the model as a failed call. 409 when an output was posted already (`ERR_TOOL_OUTPUT_ALREADY_POSTED`), the call timed out (`ERR_TOOL_OUTPUT_TIMED_OUT`, `ERR_TOOL_OUTPUT_EXPIRED`) or the run has ended (`ERR_TOOL_OUTPUT_NOT_PENDING`); 404 for an unknown run or request.',
        params: Type.Object({ id: RunIdSchema, requestId: ToolRequestIdSchema }),
        body: ToolOutputBodySchema,
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
      const { output, isError } = request.body;
      await app.runs.postToolOutput(request.tenant, id, requestId, output, isError ?? false);
      return { ok: true as const };
    },
  );
};

export default toolOutputRoutes;
