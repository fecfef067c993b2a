import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  CreateSessionRunBodySchema,
  CreateSessionRunResponseSchema,
  ErrorResponseSchema,
} from '@tether/protocol';
import { checkSessionTokenBody } from '../../session-token.js';
import { IdempotencyHeadersSchema } from '../runs/accepted.js';
import { runLinks } from '../runs/run-view.js';
import { runSpec } from '../runs/spec.js';
import { checkSubmission } from '../runs/submission.js';
import { expiryTime, startTime, withoutTiming } from '../runs/timing.js';
import { COMMON_ERRORS } from '../schemas.js';
import { SessionParamsSchema, TokenQuerySchema } from './params.js';

/** `POST /v1/sessions/:id/runs`: send a message, which is a run of the session. */
const sessionRunsRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/:id/runs',
    {
      config: { auth: 'key-or-session-token' },
      schema: {
        tags: ['sessions'],
        operationId: 'sendSessionMessage',
        summary: 'Send a message: a run of the session',
        description:
          "The body is a run's (its fields override the session's defaults) plus `multitask`, for when a run of the session is live: `enqueue` (the default) starts this run when that one ends; `reject` answers 409 `ERR_SESSION_BUSY`; `interrupt` cancels it at its next safe point (between tool calls, or while it waits on a question), then this run starts; `steer` sends `input` into it instead, taken at its next turn boundary (as `POST /v1/runs/:id/messages`): the answer is that run, with its status and `messageId`, and the body's other fields are unused (with no live run, a new run starts as with `enqueue`). The run sees the session's transcript as its history. With `runAt` or `delayMs` the run is `scheduled` until then (as `POST /v1/runs`); the session's runs after it wait for it, in order. 202 with the run, which carries `sessionId`. With a session token, `toolsets`, `memory`, `limits` and `mcpServers` are refused (403 `ERR_SESSION_TOKEN_FIELD`): they come from the session's defaults.",
        params: SessionParamsSchema,
        querystring: TokenQuerySchema,
        headers: IdempotencyHeadersSchema,
        body: CreateSessionRunBodySchema,
        response: {
          202: CreateSessionRunResponseSchema,
          402: ErrorResponseSchema,
          403: ErrorResponseSchema,
          404: ErrorResponseSchema,
          409: ErrorResponseSchema,
          413: ErrorResponseSchema,
          415: ErrorResponseSchema,
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const session = await app.sessions.record(request.tenant, id);
      const { multitask, ...own } = withoutTiming(request.body);
      if (multitask === 'steer' && session.queue.length > 0) {
        // Into the live run, as POST /v1/runs/:id/messages: nothing is created, so nothing else is checked.
        const { runId, messageId } = await app.sessions.steerLive(session, request.tenant, own.input);
        const run = await app.runs.get(request.tenant, runId);
        const links = runLinks(runId);
        const token = app.readTokens.issue(runId, request.tenant);
        reply.header('location', links.self);
        return reply
          .code(202)
          .send({ id: runId, status: run.status, sessionId: id, links, token, messageId });
      }
      const runAtMs = startTime(request.body);
      const expiresAtMs = expiryTime(request.body, runAtMs);
      if (request.sessionScope !== undefined) checkSessionTokenBody(own);
      checkSubmission({ ...session.defaults, ...own }, app.config);
      const body = await runSpec(app, request.tenant, withoutTiming(request.body), session.defaults);
      const { run, created } = await app.sessions.submit(request.tenant, id, body, {
        idempotencyKey: request.headers['idempotency-key'],
        hashOf: request.body,
        requestId: request.id,
        runAtMs,
        expiresAtMs,
      });
      const links = runLinks(run.id);
      const token = app.readTokens.issue(run.id, request.tenant);
      reply.header('location', links.self);
      app.metrics.runsSubmitted.inc({ created: String(created) });
      if (!created) reply.header('idempotent-replayed', 'true');
      const status = run.status === 'scheduled' ? 'scheduled' : 'queued';
      return reply.code(202).send({ id: run.id, status, sessionId: id, links, token });
    },
  );
};

export default sessionRunsRoute;
