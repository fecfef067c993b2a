import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  CreateSessionBodySchema,
  CreateSessionResponseSchema,
  ErrorResponseSchema,
  SESSION_LIMITS,
} from '@tether/protocol';
import { ApiError } from '../../errors.js';
import { checkApprover } from '../runs/spec.js';
import { checkSubmission } from '../runs/submission.js';
import { COMMON_ERRORS } from '../schemas.js';

/** `POST /v1/sessions`: create a session, with a session token for browsers. */
const createSessionRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      // The body is optional: none is an empty one.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags: ['sessions'],
        operationId: 'createSession',
        summary: 'Create a session',
        description:
          "Answers 201 with the session and a session-scoped `token` for browsers: it reads the session, its messages and events and its runs, sends messages and answers their questions (as the bearer, or `?token=`), for the session's retention. The body is optional: `metadata`, `files` (written into the session's workspace before its first run) and `defaults` (model, toolsets, locale, clarify, limits, memory, tools, toolTimeoutMs and approval of its runs).",
        body: CreateSessionBodySchema,
        response: {
          201: CreateSessionResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (body.metadata && JSON.stringify(body.metadata).length > SESSION_LIMITS.metadataMaxChars) {
        throw new ApiError(
          'ERR_VALIDATION',
          `body.metadata is ${JSON.stringify(body.metadata).length} characters as JSON; at most ${SESSION_LIMITS.metadataMaxChars}.`,
        );
      }
      // The defaults and files are checked as a run's would be, so a bad default fails now, not at every message.
      checkSubmission({ ...body.defaults, files: body.files }, app.config, { modelRequired: false });
      if (body.defaults?.approval)
        await checkApprover(app, request.tenant, body.defaults.approval, 'defaults.approval');
      const session = await app.sessions.create(request.tenant, body);
      reply.header('location', `/v1/sessions/${session.id}`);
      return reply.code(201).send({ ...session, token: app.sessionTokens.issue(session.id, request.tenant) });
    },
  );
};

export default createSessionRoute;
